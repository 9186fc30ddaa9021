"""A new user's own data: a ``coldbrew.yaml`` folder with text ids and no val/test files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from coldbrew.cli import main


def item_name(item: int) -> str:
    """Articles are ``art-N``, but one is ``31``: a digit-only id in a catalogue of text ids."""
    return "31" if item == 31 else f"art-{item}"


def write_shop(folder: Path, *, items: int = 40, users: int = 60) -> Path:
    """Customers ``c0``.. buying 8 articles each (times ``ts``), each article tagged: no
    validation or test file, so no cold split unless ``--cold-split`` makes one."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    pairs = sorted({(u, int(i)) for u in range(users) for i in rng.choice(items, 8, replace=False)})
    lines = ["customer,sku,ts"] + [
        f"c{user},{item_name(item)},{n}" for n, (user, item) in enumerate(pairs)
    ]
    (folder / "events.csv").write_text("\n".join(lines) + "\n")
    tags = ["a", "b", "c", "a|b"]
    rows = ["sku,tags"] + [f"{item_name(i)},{tags[i % 4]}" for i in range(items)]
    (folder / "products.csv").write_text("\n".join(rows) + "\n")
    (folder / "coldbrew.yaml").write_text(
        "interactions: events.csv\nuser: customer\nitem: sku\ntimestamp: ts\n"
        "items: products.csv\ncategories: [tags]\n"
    )
    return folder


def shop_run(folder: Path, *flags: str, model: str = "clcrec", data: Path | None = None) -> Path:
    """A one-epoch run in ``folder/run`` on ``data``, by default ``write_shop``'s in
    ``folder/shop``."""
    data = data or write_shop(folder / "shop")
    run = folder / "run"
    epochs = ["--epochs", "1", "--num-neg", "4"] if model == "clcrec" else []
    argv = ["train", "--data", str(data), "--model", model, *epochs, "--quiet", *flags]
    assert main([*argv, "--out", str(run)]) == 0
    return run

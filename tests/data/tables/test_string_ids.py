"""String ids round-trip: the same ids out of recommend as came in, an unknown id named."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from coldbrew.cli import main


@pytest.fixture(scope="module")
def string_run(tmp_path_factory):
    """A one-epoch run on a folder of text ids (users c00.., items SKU-..)."""
    folder = tmp_path_factory.mktemp("shop")
    rng = np.random.default_rng(0)
    users = np.repeat(np.arange(60), 8)
    items = rng.integers(0, 40, len(users))
    frame = pd.DataFrame(
        {"user": [f"c{u:02d}" for u in users], "item": [f"SKU-{i}" for i in items]}
    )
    frame.assign(ts=items).to_csv(folder / "events.csv", index=False)
    kinds = pd.DataFrame({"item": [f"SKU-{i}" for i in range(40)], "kind": list("abcd") * 10})
    kinds.to_csv(folder / "items.csv", index=False)
    (folder / "coldbrew.yaml").write_text(
        "interactions: events.csv\ntimestamp: ts\nitems: items.csv\ncategories: [kind]\n"
    )
    run = folder / "run"
    flags = ["--cold-split", "time:0.25", "--epochs", "1", "--num-neg", "4", "--quiet"]
    assert main(["train", "--data", str(folder), *flags, "--out", str(run)]) == 0
    return run


def test_recommend_takes_and_gives_the_datas_own_text_ids(string_run, capsys):
    assert main(["recommend", "--run", str(string_run), "--user", "c07", "--k", "5", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 5 and all(row["item"].startswith("SKU-") for row in rows)
    assert main(["recommend", "--run", str(string_run), "--item-genres", "a", "--json"]) == 0
    assert all(row["user"].startswith("c") for row in json.loads(capsys.readouterr().out))


def test_an_unknown_text_id_is_an_error_naming_it(string_run, capsys):
    assert main(["recommend", "--run", str(string_run), "--user", "c999"]) == 2
    assert "user 'c999' is not in the data" in capsys.readouterr().err


def test_an_integer_data_refuses_a_text_user(capsys, tmp_path):
    from coldbrew.cli.recommend import user_id
    from coldbrew.errors import ColdbrewError

    assert (
        user_id("42", np.arange(3)) == 42 and user_id("c2", np.array(["c2"], dtype=object)) == "c2"
    )
    with pytest.raises(ColdbrewError, match="--user must be an integer id .*not 'c2'"):
        user_id("c2", np.arange(3))


def test_export_and_serve_keep_the_text_ids(string_run, tmp_path, capsys):
    import urllib.request

    from coldbrew.serving.export_format import read_manifest, read_vectors
    from serving_support import running_server

    out = tmp_path / "export"
    assert main(["export", "--run", str(string_run), "--out", str(out)]) == 0
    vectors = read_vectors(out)
    assert vectors.user_ids[7] == "c07" and vectors.item_ids[0] == "SKU-0"
    assert read_manifest(out)["text_ids"]["item_ids"][:2] == ["SKU-0", "SKU-1"]
    for source in (out, string_run):  # an export, and a run served directly
        with running_server(source) as (base, _):
            with urllib.request.urlopen(f"{base}/users/c07/items?k=3") as answer:
                body = json.loads(answer.read())
            assert body["user"] == "c07" and body["items"][0]["item"].startswith("SKU-")
            try:
                urllib.request.urlopen(f"{base}/users/c999/items")
            except urllib.error.HTTPError as error:
                assert error.code == 404 and "c999 is not in the data" in error.read().decode()
            else:
                raise AssertionError("an unknown user was answered")

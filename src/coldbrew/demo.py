"""``make demo``: train CLCRec on real MovieLens cold-start data and compare with chance.

Uses ml-1m-coldstart (from ``$COLDBREW_DATA`` or ../shared/data) when it is there, otherwise
the synthetic dataset, so the demo always runs offline. Prints the dataset, a random-vector
baseline, CLCRec's cold-start metrics, and the time it took.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

from coldbrew import evaluate_embeddings, load_dataset
from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.training.run import train

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
DEMO_SETTINGS = {"features": ["genre"], "epochs": 2}


def find_data() -> str:
    if not os.environ.get("COLDBREW_DATA") and SHARED.is_dir():
        os.environ["COLDBREW_DATA"] = str(SHARED.resolve())
    root = os.environ.get("COLDBREW_DATA")
    if root and (Path(root) / "ml-1m-coldstart").is_dir():
        return "ml-1m-coldstart"
    print("ml-1m-coldstart not found (set COLDBREW_DATA); using the synthetic dataset")
    return "synthetic"


def random_baseline(dataset, group: str) -> float:
    generator = torch.Generator().manual_seed(0)
    users = torch.randn(dataset.num_users, 64, generator=generator)
    items = torch.randn(dataset.num_items, 64, generator=generator)
    return evaluate_embeddings(dataset, users, items, split="val", ks=(20,))[group]["recall@20"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=None, help="run directory (default: a temporary one)")
    parser.add_argument("--epochs", type=int, default=DEMO_SETTINGS["epochs"])
    args = parser.parse_args(argv)
    data = find_data()
    settings = {**DEMO_SETTINGS, "epochs": args.epochs, "data": data}
    if data == "synthetic":
        settings["features"] = None
    try:
        dataset = load_dataset(data, features=settings["features"])
        print("dataset:", {k: v for k, v in dataset.summary().items() if not isinstance(v, dict)})
        group = "cold" if "cold" in dataset.groups("val") else "all"
        chance = random_baseline(dataset, group)
        print(f"random vectors: val {group} recall@20 = {chance:.4f}")
        run_dir = (
            Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="coldbrew-demo-")) / "run"
        )
        started = time.perf_counter()
        results = train(make_config(settings), run_dir, dataset=dataset)
    except ColdbrewError as error:
        print(f"coldbrew: error: {error}", file=sys.stderr)
        return 2
    recall = results["metrics"]["val"][group]["recall@20"]
    ndcg = results["metrics"]["val"][group]["ndcg@20"]
    print(
        f"\nCLCRec on {data}: val {group} recall@20 = {recall:.4f}, ndcg@20 = {ndcg:.4f} "
        f"({recall / max(chance, 1e-12):.1f}x random) in {time.perf_counter() - started:.0f}s; run in {run_dir}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

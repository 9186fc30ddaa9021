"""How far the two evaluation protocols' numbers differ on trained models (issue 15, item 1).

For every seed, CLCRec is trained on ml-1m-coldstart with ``coldbrew train``'s defaults (or the
run already in ``RUNS/without-seedS`` is taken, the same folders ``neighbor_accuracy.py``
keeps), and its best checkpoint is re-scored with ``coldbrew evaluate --protocol coldbrew`` and
``--protocol original`` (``evaluate_run``). Printed per split / group / metric: both values and
``original − coldbrew`` as mean ± sample std over the seeds, and, to show why they differ or
not, the share of users whose top K in a group's coldbrew ranking holds a score below the
original's ``1e-15`` stand-in (only those users' lists can change: in the original every other
item of the catalogue sits at ``1e-15``).

``--original-epochs E`` also trains one run under ``--protocol original`` (batch 256, lr 0.001,
distinct negatives, its strict-improvement selection) capped at E epochs, and prints the epoch
its rule picks beside the epoch coldbrew's rule (best cold Recall@20) would pick from the same
history. ml-1m-coldstart has no validation ``all`` group, so that run monitors ``cold/recall@10``
(the original monitors ``all/recall@10``).

    python benchmarks/protocol_difference.py [--seeds 1,2,3] [--runs DIR] [--original-epochs 12]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import torch
from shared_data import load_shared  # benchmarks/ is on sys.path when run as a script
from trained_runs import mean_and_std, seeds_list, train_or_take

DATASET = "ml-1m-coldstart"
PROTOCOLS = ("coldbrew", "original")


def below_stand_in(run_dir: Path, ks: list[int]) -> dict:
    """Per group, the share of users whose top ``k`` (coldbrew's ranking: the group's own
    items, training items removed) holds a score below ``1e-15``."""
    from coldbrew.config import load_yaml, make_config
    from coldbrew.evaluation.protocols import ORIGINAL_MASK_VALUE
    from coldbrew.models import build_model
    from coldbrew.training.checkpoint import BEST, load_checkpoint
    from coldbrew.training.run import load_run_dataset
    from coldbrew.training.run_evaluation import load_model_state

    config = make_config(load_yaml(run_dir / "config.yaml"), {"device": "cpu"})
    config.model_options.neighbor_loss = False
    dataset = load_run_dataset(config)
    model = build_model(config.model, dataset, config)
    state = load_checkpoint(run_dir / BEST, torch.device("cpu"))["model"]
    load_model_state(model, state, dataset.name)
    groups = {"cold": dataset.cold_items, "warm": dataset.warm_items}
    shares = {}
    with torch.no_grad():
        users, items = model.user_embeddings(), model.item_embeddings()
        seen = torch.from_numpy(dataset.train.toarray()).bool()  # (U, I)
        for group, ids in groups.items():
            ids = torch.from_numpy(ids).long()
            scores = (users @ items[ids].T).masked_fill(seen[:, ids], float("-inf"))  # (U, n)
            top = scores.topk(max(ks), dim=1).values  # (U, K), sorted
            shares[group] = {
                f"@{k}": (top[:, k - 1] < ORIGINAL_MASK_VALUE).float().mean().item() for k in ks
            }
    return shares


def rescored(run_dir: Path) -> dict:
    from coldbrew.training.run_evaluation import evaluate_run

    return {
        protocol: evaluate_run(run_dir, device="cpu", protocol=protocol)["metrics"]
        for protocol in PROTOCOLS
    }


def differences(per_seed: dict[int, dict]) -> dict:
    """``{split/group/metric: {coldbrew, original, original_minus_coldbrew}}``, mean ± std."""
    seeds = sorted(per_seed)
    first = per_seed[seeds[0]]["coldbrew"]
    table = {}
    for split, groups in first.items():
        for group, metrics in groups.items():
            for metric in metrics:
                values = {
                    protocol: [per_seed[s][protocol][split][group][metric] for s in seeds]
                    for protocol in PROTOCOLS
                }
                change = [
                    o - c for o, c in zip(values["original"], values["coldbrew"], strict=True)
                ]
                table[f"{split}/{group}/{metric}"] = {
                    **{protocol: mean_and_std(values[protocol]) for protocol in PROTOCOLS},
                    "original_minus_coldbrew": mean_and_std(change),
                }
    return table


def original_selection(dataset, runs: Path, epochs: int) -> dict:
    settings = {
        "data": DATASET, "features": ["genre", "text"], "seed": 1, "protocol": "original",
        "epochs": epochs, "early_stop_metric": "cold/recall@10",
    }  # fmt: skip
    results = train_or_take(settings, runs / "original-seed1", dataset)
    history = results["history"]
    recall10 = [h["val"]["cold"]["recall@10"] for h in history]
    recall20 = [h["val"]["cold"]["recall@20"] for h in history]
    return {
        "benchmark": "original_protocol_selection",
        "settings": settings,
        "epochs_run": results["epochs_run"],
        "stopped": results["stopped"],
        "picked_epoch_original_rule": results["best_epoch"],
        "picked_epoch_coldbrew_rule": 1 + max(range(len(recall20)), key=recall20.__getitem__),
        "val_cold_recall@10_per_epoch": recall10,
        "val_cold_recall@20_per_epoch": recall20,
        "best": results["metrics"],
        "train_seconds": results["timing"]["train_seconds"],
        "samples_per_second": results["timing"]["samples_per_second"],
        "taken_from_an_earlier_run": results["taken"],
        "load_average": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=seeds_list, default=[1, 2, 3])
    parser.add_argument("--runs", type=Path, default=None, help="keep (and take) run folders here")
    parser.add_argument("--original-epochs", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's)")
    args = parser.parse_args()
    dataset = load_shared(DATASET, ["genre", "text"], args.threads)
    with tempfile.TemporaryDirectory() as scratch:
        runs = args.runs or Path(scratch)
        per_seed = {}
        for seed in args.seeds:
            settings = {"data": DATASET, "features": ["genre", "text"], "seed": seed}
            run_dir = runs / f"without-seed{seed}"
            results = train_or_take(settings, run_dir, dataset)
            per_seed[seed] = rescored(run_dir)
            print(json.dumps({
                "benchmark": "protocol_difference_run", "seed": seed, "run": str(run_dir),
                "best_epoch": results["best_epoch"], "metrics": per_seed[seed],
                "users_with_a_score_below_1e-15_in_top_k": below_stand_in(run_dir, [10, 20, 50]),
                "taken_from_an_earlier_run": results["taken"], "load_average": os.getloadavg(),
            }), flush=True)  # fmt: skip
        print(json.dumps({
            "benchmark": "protocol_difference", "dataset": DATASET, "seeds": args.seeds,
            "differences": differences(per_seed),
        }), flush=True)  # fmt: skip
        if args.original_epochs:
            print(json.dumps(original_selection(dataset, runs, args.original_epochs)), flush=True)


if __name__ == "__main__":
    main()

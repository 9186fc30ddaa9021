"""Warm accuracy and training seconds of the zoo's collaborative backbones on ml-1m-coldstart.

ml-1m-coldstart's validation holds cold items only, so the warm accuracy is measured on a
held-out slice of the warm training interactions: each user with at least 5 gives 10 % of them
(at least one, drawn with the seed); a backbone trains on the rest and ranks every warm item
for each such user, training items masked; Recall@20 and NDCG@20 through the project's ranking
engine (``coldbrew.evaluation.evaluate_embeddings``). Seconds are wall-clock training only
(data preparation and evaluation excluded), and the process's CPU seconds (all threads), which
a loaded machine disturbs less.

Methods: ``bpr`` (coldbrew's BPR-MF through the one loop, ``training/backbone.py``),
``implicit-bpr`` (implicit's Cython BPR, all cores), ``als`` (implicit's ALS, all cores).

  python benchmarks/backbone_warm.py --methods bpr,implicit-bpr,als --seeds 1,2,3
  python benchmarks/backbone_warm.py --methods bpr --epochs 10 --threads 1
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np
from shared_data import load_shared  # benchmarks/ is on sys.path when run as a script

HELD_OUT = 0.1
MIN_INTERACTIONS = 5


def hold_out(dataset, seed: int):
    """``dataset`` with 10 % of each active user's training interactions moved to val/warm."""
    from coldbrew.data.dataset import interactions_to_csr

    rng = np.random.default_rng(seed)
    coo = dataset.train.tocoo()
    counts = np.diff(dataset.train.indptr)
    order = np.lexsort((rng.random(coo.nnz), coo.row))  # a random order within each user
    rows, columns = coo.row[order], coo.col[order]
    position = np.arange(len(rows)) - np.repeat(dataset.train.indptr[:-1], counts)
    quota = np.where(counts >= MIN_INTERACTIONS, np.maximum(1, counts * HELD_OUT), 0).astype(int)
    held = position < quota[rows]
    shape = (dataset.num_users, dataset.num_items)
    train = interactions_to_csr(rows[~held], columns[~held], shape)
    held_out = interactions_to_csr(rows[held], columns[held], shape)
    return dataclasses.replace(dataset, train=train, splits={"val": {"warm": held_out}}, known=None)


def train_implicit_bpr(dataset, options, seed: int):
    """implicit's BPR on the user x warm-item matrix; its last factor is an item bias, whose
    user factor is 1, so the inner products are its scores."""
    import torch
    from implicit.cpu.bpr import BayesianPersonalizedRanking
    from threadpoolctl import threadpool_limits

    from coldbrew.training.backbone import warm_columns

    matrix, warm = warm_columns(dataset)
    with threadpool_limits(1, "blas"):
        model = BayesianPersonalizedRanking(
            factors=options.backbone_dim,
            regularization=options.backbone_reg,
            learning_rate=options.lr,
            iterations=options.backbone_epochs,
            random_state=seed,
        )
        model.fit(matrix, show_progress=False)
    users = torch.from_numpy(np.asarray(model.user_factors, dtype=np.float32))
    items = torch.zeros(dataset.num_items, users.shape[1])
    items[torch.from_numpy(warm)] = torch.from_numpy(np.asarray(model.item_factors, np.float32))
    return users, items


def measure(dataset, method: str, options, seed: int) -> dict:
    import torch

    from coldbrew.evaluation import evaluate_embeddings
    from coldbrew.training import backbone

    train = {
        "bpr": backbone.train_bpr,
        "als": backbone.train_als,
        "implicit-bpr": train_implicit_bpr,
    }[method]
    started, cpu_started = time.perf_counter(), time.process_time()
    users, items = train(dataset, options, seed)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    items[torch.from_numpy(dataset.cold_items)] = 0.0
    metrics = evaluate_embeddings(dataset, users, items, "val", ks=(20,))["warm"]
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "recall@20": metrics["recall@20"],
        "ndcg@20": metrics["ndcg@20"],
    }


@dataclasses.dataclass
class Options:
    backbone_dim: int
    backbone_epochs: int
    backbone_reg: float
    lr: float  # implicit-bpr only


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="bpr,implicit-bpr,als")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--epochs", default="", help="method=epochs,...; default 30 each")
    parser.add_argument("--reg", default="", help="method=reg,...; default 0.01 each")
    parser.add_argument("--lr", type=float, default=0.01, help="implicit-bpr's learning rate")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = parser.parse_args()
    epochs = dict(pair.split("=") for pair in args.epochs.split(",") if pair)
    regs = dict(pair.split("=") for pair in args.reg.split(",") if pair)
    dataset = load_shared("ml-1m-coldstart", ["genre"], threads=args.threads)
    for method in args.methods.split(","):
        options = Options(
            args.dim, int(epochs.get(method, 30)), float(regs.get(method, 0.01)), args.lr
        )
        rows = []
        for seed in (int(s) for s in args.seeds.split(",")):
            rows.append(measure(hold_out(dataset, seed), method, options, seed))
            print(method, seed, {k: round(v, 4) for k, v in rows[-1].items()}, flush=True)
        summary = {
            key: f"{statistics.mean(r[key] for r in rows):.4f} ± "
            f"{statistics.stdev(r[key] for r in rows) if len(rows) > 1 else 0:.4f}"
            for key in rows[0]
        }
        print(f"{method} {options}: {summary}", flush=True)


if __name__ == "__main__":
    main()

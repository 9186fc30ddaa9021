"""The CPU fast paths one at a time, each against the plain form it replaces.

Prints one JSON line per measurement (median milliseconds over --repeats calls, after a warm-up):
  1. gather_dot (sampled products) vs gather + bmm, forward and backward, at CLCRec's shapes
     (batch 4096, 1 + 128 items per row, dim 64, 5,119 table rows; two queries, then one);
  2. the negative sampler's rejection method vs its rank method (batch 4096, 128 negatives);
  3. a whole CLCRec training step (features 2048/128/100, batch 4096, 128 negatives), without
     and with the neighbor-graph term (its precompute untimed).
The allocator setting is on unless COLDBREW_KEEP_FREED_MEMORY=0 is in the environment; run the
script both ways to see its effect (it is per process).

  python benchmarks/bench_kernels.py [--data clcrec-movielens] [--repeats 30]
  COLDBREW_KEEP_FREED_MEMORY=0 python benchmarks/bench_kernels.py
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shared_data import use_shared_data  # noqa: E402

from coldbrew import load_dataset  # noqa: E402
from coldbrew.config import make_config  # noqa: E402
from coldbrew.data.sampling import NegativeSampler  # noqa: E402
from coldbrew.models.gather_dot import gather_dot, gather_dot_reference  # noqa: E402
from coldbrew.perf.bench import random_features  # noqa: E402
from coldbrew.system.runtime import keep_freed_memory_for_reuse  # noqa: E402
from coldbrew.training.run import build_trainer  # noqa: E402


def median_ms(call, repeats: int) -> float:
    for _ in range(3):
        call()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return 1e3 * statistics.median(times)


def forward_backward(function, queries, table, index, upstream):
    def call():
        queries.grad = table.grad = None
        function(queries, table, index).backward(upstream)

    return call


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default="clcrec-movielens")
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    use_shared_data()
    kept = keep_freed_memory_for_reuse()
    common = {
        "threads": torch.get_num_threads(),
        "keep_freed_memory": kept,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }

    def emit(measure: str, **values) -> None:
        print(json.dumps({"measure": measure, **values, **common}), flush=True)

    generator = torch.Generator().manual_seed(0)
    batch, width, dim, rows = 4096, 129, 64, 5119
    table = torch.randn(rows, dim, generator=generator, requires_grad=True)
    index = torch.randint(rows, (batch, width), generator=generator)
    for num_queries in (2, 1):
        queries = torch.randn(batch, num_queries, dim, generator=generator, requires_grad=True)
        upstream = torch.randn(batch, width, num_queries, generator=generator)
        fused = median_ms(
            forward_backward(gather_dot, queries, table, index, upstream), args.repeats
        )
        plain = median_ms(
            forward_backward(gather_dot_reference, queries, table, index, upstream), args.repeats
        )
        emit("gather_dot fwd+bwd", queries=num_queries, fused_ms=fused, plain_ms=plain)

    dataset = load_dataset(args.data, trust_pickle=True, features=[])
    exclude, warm = dataset.exclusion_matrix(), dataset.warm_items
    users = torch.from_numpy(dataset.train.tocoo().row)[
        torch.randint(dataset.num_train, (batch,), generator=generator)
    ].long()
    timings = {}
    for method in ("rejection", "rank"):
        sampler = NegativeSampler(exclude, warm, method=method)
        timings[method] = median_ms(lambda s=sampler: s.sample(users, 128), args.repeats)
    emit(
        "sampler", dataset=dataset.name, rejection_ms=timings["rejection"], rank_ms=timings["rank"]
    )

    dataset.features = random_features(dataset.num_items, [2048, 128, 100], seed=1)
    order = torch.randint(dataset.num_train, (batch,), generator=generator)
    step_ms = {}
    for neighbor_loss in (False, True):  # one process, so both share its state
        options = {"data": args.data, "batch_size": batch, "num_neg": 128, "quiet": True}
        config = make_config({**options, "device": "cpu", "neighbor_loss": neighbor_loss})
        trainer = build_trainer(config, dataset)

        def step(trainer=trainer):
            trainer.train_step(order)

        step_ms[neighbor_loss] = median_ms(step, args.repeats)
    emit(
        "clcrec train step",
        dataset=dataset.name,
        step_ms=step_ms[False],
        with_neighbor_term_ms=step_ms[True],
        neighbor_throughput_ratio=step_ms[False] / step_ms[True],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

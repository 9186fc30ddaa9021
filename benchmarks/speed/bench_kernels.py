"""The CPU fast paths one at a time, each against the plain form it replaces.

Prints one JSON line per measurement (median milliseconds over --repeats calls, after a warm-up,
the two forms called in turn):
  1. gather_dot (sampled products) vs gather + bmm, forward and backward, at CLCRec's shapes
     (batch 4096, 1 + 128 items per row, dim 64, 5,119 table rows; two queries, then one);
  2. the negative sampler's rejection method vs its rank method (batch 4096, 128 negatives).
The allocator setting is on unless COLDBREW_KEEP_FREED_MEMORY=0 is in the environment; run the
script both ways to see its effect (it is per process).

Why not ``coldbrew bench``: it times the path coldbrew picks for the device; these are each
fast path against the plain form it replaces (gather_dot's reference, the rank sampler that
the CPU does not pick). The whole training step, with and without the neighbor-graph term, is
``coldbrew bench train --data clcrec-movielens --trust-pickle --feature-dims 2048,128,100
--device cpu --against neighbor_loss=true``.

  python benchmarks/speed/bench_kernels.py [--data clcrec-movielens] [--repeats 30]
  COLDBREW_KEEP_FREED_MEMORY=0 python benchmarks/speed/bench_kernels.py
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data
from shared_data import use_shared_data  # noqa: E402

from coldbrew import load_dataset  # noqa: E402
from coldbrew.data.sampling import NegativeSampler  # noqa: E402
from coldbrew.models.gather_dot import gather_dot, gather_dot_reference  # noqa: E402
from coldbrew.system.runtime import keep_freed_memory_for_reuse  # noqa: E402
from coldbrew.system.timing import time_in_turn  # noqa: E402


def median_ms(calls: dict, repeats: int) -> dict[str, float]:
    """Median milliseconds of each call over ``repeats`` rounds, the calls in turn."""
    times = time_in_turn(calls, torch.device("cpu"), warmup=3, seconds=0, min_rounds=repeats)
    return {name: 1e3 * statistics.median(values) for name, values in times.items()}


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
        timings = median_ms(
            {
                "fused_ms": forward_backward(gather_dot, queries, table, index, upstream),
                "plain_ms": forward_backward(gather_dot_reference, queries, table, index, upstream),
            },
            args.repeats,
        )
        emit("gather_dot fwd+bwd", queries=num_queries, **timings)

    dataset = load_dataset(args.data, trust_pickle=True, features=[])
    exclude, warm = dataset.exclusion_matrix(), dataset.warm_items
    users = torch.from_numpy(dataset.train.tocoo().row)[
        torch.randint(dataset.num_train, (batch,), generator=generator)
    ].long()
    samplers = {
        f"{method}_ms": NegativeSampler(exclude, warm, method=method)
        for method in ("rejection", "rank")
    }
    timings = median_ms(
        {name: (lambda s=sampler: s.sample(users, 128)) for name, sampler in samplers.items()},
        args.repeats,
    )
    emit("sampler", dataset=dataset.name, **timings)
    return 0


if __name__ == "__main__":
    sys.exit(main())

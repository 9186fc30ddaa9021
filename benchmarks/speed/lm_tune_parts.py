"""Where LM tune mode's time goes: build, a step by part, the table refresh, an evaluation.

Builds the trainer of ``configs/lm_tune.yaml`` on ml-1m-coldstart (as ``coldbrew train``
builds it: the held states are read from the cache, or computed and written there), times
``--steps`` training steps by part (batch, forward, backward, optimizer), one refresh of the
table (the tuned layers over every item) and one validation, then prints ``torch.profiler``'s
table over three more steps.

  COLDBREW_DATA=DIR OMP_NUM_THREADS=1 python benchmarks/speed/lm_tune_parts.py --steps 4
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data
from shared_data import use_shared_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    use_shared_data()
    torch.set_num_threads(args.threads)
    from torch.profiler import ProfilerActivity, profile

    from coldbrew.config import make_config
    from coldbrew.data import load_dataset
    from coldbrew.training.build import build_trainer

    section = yaml.safe_load((ROOT / "configs" / "lm_tune.yaml").read_text())["lm"]
    run = {"model": "lm", "data": "ml-1m-coldstart", "features": "genre,text", "seed": 1}
    config = make_config({**run, "quiet": True, **section})
    started = time.perf_counter()
    dataset = load_dataset(config.data, features=config.resolved_features(), seed=config.seed)
    loaded = time.perf_counter()
    trainer = build_trainer(config, dataset)
    built = time.perf_counter()
    print(f"load {loaded - started:.1f} s, build {built - loaded:.1f} s, load {os.getloadavg()}")
    count = trainer.task.num_samples()
    generator = torch.Generator().manual_seed(0)

    def draw() -> torch.Tensor:
        return torch.randint(count, (config.batch_size,), generator=generator)

    trainer.train_step(draw())  # warm-up
    parts: dict[str, float] = collections.defaultdict(float)
    for _ in range(args.steps):
        index = draw()
        clock = time.perf_counter()
        trainer.optimizer.zero_grad(set_to_none=True)
        batch = trainer.make_batch(index)
        parts["batch"] += time.perf_counter() - clock
        clock = time.perf_counter()
        output = trainer.forward(batch)
        parts["forward"] += time.perf_counter() - clock
        clock = time.perf_counter()
        trainer.backward(output.total)
        parts["backward"] += time.perf_counter() - clock
        clock = time.perf_counter()
        trainer.optimizer_step()
        parts["optimizer"] += time.perf_counter() - clock
    per_step = {name: f"{value / args.steps * 1000:.0f} ms" for name, value in parts.items()}
    print("step by part:", per_step)
    clock = time.perf_counter()
    trainer.model.tuned.all_vectors()
    print(f"table refresh (tuned layers over every item): {time.perf_counter() - clock:.1f} s")
    clock = time.perf_counter()
    trainer.evaluate("val")
    print(f"validation: {time.perf_counter() - clock:.1f} s")
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        for _ in range(3):
            trainer.train_step(draw())
    print(profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))


if __name__ == "__main__":
    main()

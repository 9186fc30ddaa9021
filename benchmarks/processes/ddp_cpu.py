"""One process against two (DDP, gloo) on this CPU, same global batch; and the all-reduce.

    python benchmarks/processes/ddp_cpu.py --data ml-1m-coldstart --features genre --epochs 1

Runs ``coldbrew train --nproc 1 --batch-size B`` and ``coldbrew train --nproc 2 --batch-size
B/2`` (the same global batch) and reads each run's training seconds and samples/s; then times a
gloo all-reduce of CLCRec's gradient size (every parameter, dense, as DDP sends each optimizer
step) between two processes. On a 2-core machine two processes share the cores the one process
already used: no speed-up is expected; the figures show what DDP costs, not what it gains.

Why not ``coldbrew bench``: it times steps in one process; this launches ``coldbrew train
--nproc`` (torchrun) twice and times gloo's all-reduce between two processes.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data
from shared_data import use_shared_data  # noqa: E402


def run(nproc: int, batch: int, args, folder: Path) -> dict:
    out = folder / f"nproc{nproc}"
    command = [
        sys.executable,
        "-m",
        "coldbrew",
        "train",
        "--nproc",
        str(nproc),
        "--data",
        args.data,
    ]
    command += [
        "--features",
        args.features,
        "--epochs",
        str(args.epochs),
        "--batch-size",
        str(batch),
    ]
    command += ["--quiet", "--out", str(out)]
    subprocess.run(command, check=True, env=dict(os.environ))
    results = json.loads((out / "results.json").read_text())
    return {
        "nproc": nproc,
        "batch_per_process": batch,
        "train_seconds": results["timing"]["train_seconds"],
        "samples_per_second": results["timing"]["samples_per_second"],
        "val_cold_recall@20": results["metrics"]["val"]["cold"]["recall@20"],
    }


def all_reduce_worker(rank: int, port: int, numel: int, repeats: int, queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    tensor = torch.ones(numel)
    for _ in range(3):
        dist.all_reduce(tensor)
    started = time.perf_counter()
    for _ in range(repeats):
        dist.all_reduce(tensor)
    if rank == 0:
        queue.put((time.perf_counter() - started) / repeats)
    dist.barrier()
    dist.destroy_process_group()


def gradient_numel(args) -> int:
    from coldbrew.config import make_config
    from coldbrew.training.run import build_trainer, load_run_dataset

    config = make_config({"data": args.data, "features": args.features, "quiet": True})
    model = build_trainer(config, load_run_dataset(config)).model
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="ml-1m-coldstart")
    parser.add_argument("--features", default="genre")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=2048, help="the global batch")
    args = parser.parse_args()
    use_shared_data()
    with tempfile.TemporaryDirectory() as folder:
        one = run(1, args.batch_size, args, Path(folder))
        two = run(2, args.batch_size // 2, args, Path(folder))
    numel = gradient_numel(args)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    queue = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(
        all_reduce_worker, args=(port, numel, 20, queue), nprocs=2, start_method="spawn"
    )
    seconds = queue.get()
    print(
        json.dumps(
            {
                "benchmark": "ddp_cpu",
                "data": args.data,
                "global_batch": args.batch_size,
                "one_process": one,
                "two_processes": two,
                "throughput_ratio_two_over_one": two["samples_per_second"]
                / one["samples_per_second"],
                "gradient_bytes_per_step": numel * 4,
                "gloo_all_reduce_seconds": seconds,
                "cores": os.cpu_count(),
                "load_average": os.getloadavg(),
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
    )


if __name__ == "__main__":
    main()

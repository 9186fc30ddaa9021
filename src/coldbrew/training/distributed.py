"""Many processes, as ``torchrun`` launches them: DistributedDataParallel on when ``RANK`` is set.

``torchrun --nproc-per-node N -m coldbrew train ...`` (or ``coldbrew train --nproc N``) starts N
processes with ``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE`` set. Each process:

* uses ``cuda:LOCAL_RANK`` on a GPU machine (``CUDA_VISIBLE_DEVICES`` picks which GPUs), else
  the CPU with the gloo backend;
* takes its slice of every global step's samples (global batch = per-rank batch x world size);
* draws its own negatives: its step RNG is seeded from (seed, epoch, rank) at every epoch, so a
  run resumed with another world size is still deterministic;
* lets DDP all-reduce the gradients (dense: every parameter, every optimizer step) and skips
  the all-reduce on accumulation micro-steps (``no_sync``).

Rank 0 alone writes the run directory; the ranks agree on early stopping, a non-finite loss and
an out-of-memory retry through small collectives. Nothing here replaces the launcher or DDP's
all-reduce.
"""

from __future__ import annotations

import contextlib
import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Distributed:
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_environment(cls) -> Distributed:
        """The process's place in a ``torchrun`` launch; a single process without ``RANK``."""
        if "RANK" not in os.environ:
            return cls()
        return cls(
            rank=int(os.environ["RANK"]),
            local_rank=int(os.environ.get("LOCAL_RANK", 0)),
            world_size=int(os.environ.get("WORLD_SIZE", 1)),
        )

    def device_name(self, requested: str) -> str:
        """``auto``/``cuda`` -> this rank's GPU (``cuda:LOCAL_RANK``); anything else as given."""
        if not self.enabled:
            return requested
        if requested in ("auto", "cuda") and torch.cuda.is_available():
            return f"cuda:{self.local_rank}"
        return requested if requested != "auto" else "cpu"

    def start(self, device: torch.device) -> None:
        """Join the process group (NCCL on GPUs, gloo on the CPU); a no-op for one process."""
        if not self.enabled or dist.is_initialized():
            return
        if device.type == "cuda":
            torch.cuda.set_device(device)
        backend = "nccl" if device.type == "cuda" else "gloo"
        timeout = datetime.timedelta(minutes=30)
        restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True" and restart != "0":
            # A restarted worker must not read the addresses its dead predecessors left in
            # torchrun's store (seen here: gloo then waits on a dead peer); a prefix per attempt.
            store = dist.TCPStore(
                os.environ["MASTER_ADDR"],
                int(os.environ["MASTER_PORT"]),
                self.world_size,
                is_master=False,
                timeout=timeout,
            )
            store = dist.PrefixStore(f"coldbrew/attempt-{restart}", store)
            dist.init_process_group(
                backend, store=store, rank=self.rank, world_size=self.world_size, timeout=timeout
            )
        else:
            dist.init_process_group(backend, timeout=timeout)

    def stop(self) -> None:
        """Leave the process group once every rank is done with it (a rank that leaves while
        another still talks to it can make gloo abort that one)."""
        if self.enabled and dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()

    # ------------------------------------------------------------------ small collectives
    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """The elementwise sum over ranks (a new tensor)."""
        if not self.enabled:
            return tensor
        reduced = tensor.clone()
        dist.all_reduce(reduced)
        return reduced

    def broadcast(self, value):
        """Rank 0's Python ``value`` on every rank."""
        if not self.enabled:
            return value
        holder = [value]
        dist.broadcast_object_list(holder, src=0)
        return holder[0]

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    # ------------------------------------------------------------------ the model
    def wrap(self, model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
        """DDP around ``model`` when several processes train it; the model itself otherwise."""
        if not self.enabled:
            return model
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [device.index] if device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=device_ids)

    def no_sync(self, wrapped: torch.nn.Module, skip: bool):
        """DDP's ``no_sync()`` when ``skip`` (an accumulation micro-step); else nothing."""
        if skip and self.enabled and hasattr(wrapped, "no_sync"):
            return wrapped.no_sync()
        return contextlib.nullcontext()

    def shard(self, index: torch.Tensor) -> torch.Tensor:
        """This rank's part of a global step's samples: contiguous, sizes differing by at most
        one. With fewer samples than ranks, the samples repeat so every rank has one (every
        rank must take part in the gradient all-reduce)."""
        if not self.enabled:
            return index
        if len(index) < self.world_size:
            index = index.repeat(-(-self.world_size // max(1, len(index))))[: self.world_size]
        return index.tensor_split(self.world_size)[self.rank]

    def epoch_generator(
        self, seed: int, epoch: int, device: torch.device
    ) -> torch.Generator | None:
        """One process: None (the global RNG orders the samples, as it always has). Several:
        a generator seeded by (seed, epoch) on every rank, and this rank's step RNG reseeded."""
        if not self.enabled:
            return None
        torch.manual_seed(self.step_seed(seed, epoch))
        generator = torch.Generator(device=device)
        return generator.manual_seed(self.order_seed(seed, epoch))

    def step_seed(self, seed: int, epoch: int) -> int:
        """This rank's step-RNG seed for ``epoch``: differs by rank, fixed by (seed, epoch)."""
        return (seed * 1_000_003 + epoch * 7_919 + self.rank * 104_729) % (2**63)

    def order_seed(self, seed: int, epoch: int) -> int:
        """The epoch's sample-order seed: the same on every rank."""
        return (seed * 1_000_003 + epoch * 7_919) % (2**63)

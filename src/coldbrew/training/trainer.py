"""The one training loop: device-resident data, vectorized negatives, no host sync per step.

Model-agnostic: it knows only the ``Recommender`` contract (``loss``, ``user_embeddings``,
``item_embeddings``). Per epoch: shuffle index tensors on the device, draw negatives per batch
in one call, accumulate loss terms on the device, read them once at the end of the epoch,
evaluate on validation, keep the best checkpoint, stop early.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from coldbrew.config import TrainConfig
from coldbrew.data.dataset import Dataset
from coldbrew.data.sampling import NegativeSampler
from coldbrew.errors import ColdbrewError
from coldbrew.models import Batch, Recommender, build_model
from coldbrew.training.checkpoint import BEST, LAST, load_checkpoint, save_checkpoint
from coldbrew.training.runtime import (
    Runtime,
    make_runtime,
    rng_state,
    seed_everything,
    set_rng_state,
)


class NonFiniteLoss(ColdbrewError):
    pass


@dataclass
class TrainState:
    epoch: int = 0  # epochs completed
    best_epoch: int = 0
    best_score: float = -math.inf
    epochs_without_improvement: int = 0
    samples_seen: int = 0
    train_seconds: float = 0.0
    eval_seconds: float = 0.0
    history: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def early_stop_key(config: TrainConfig, dataset: Dataset) -> tuple[str, str]:
    """(group, metric): cold recall@20 when validation has a cold group, else all recall@20."""
    if config.early_stop_metric:
        group, _, metric = config.early_stop_metric.partition("/")
        if not metric:
            raise ColdbrewError("early_stop_metric must look like 'cold/recall@20'")
        if group not in dataset.groups("val"):
            offered = ", ".join(dataset.groups("val")) or "none"
            raise ColdbrewError(f"early_stop_metric group {group!r} not in validation ({offered})")
        return group, metric
    groups = dataset.groups("val")
    if not groups:
        raise ColdbrewError(f"{dataset.name} has no validation split to early-stop on")
    k = 20 if 20 in config.resolved_ks() else config.resolved_ks()[0]
    group = "cold" if "cold" in groups else ("all" if "all" in groups else next(iter(groups)))
    return group, f"recall@{k}"


def evaluate_model(model: Recommender, dataset: Dataset, split: str, config: TrainConfig) -> dict:
    """Full ranking: from the embedding matrices, or ``score_users`` where a model overrides it."""
    from coldbrew.evaluation import evaluate_embeddings, evaluate_scores

    options = {
        "split": split,
        "ks": config.resolved_ks(),
        "chunk_elements": config.eval_chunk_elements,
        "progress": not config.quiet,
    }
    model.eval()
    with torch.no_grad():
        if type(model).score_users is not Recommender.score_users:
            metrics = evaluate_scores(dataset, model.score_users, **options)
        else:
            users, items = model.user_embeddings().float(), model.item_embeddings().float()
            metrics = evaluate_embeddings(dataset, users, items, **options)
    model.train()
    return metrics


class Trainer:
    """Trains ``config.model`` on ``dataset``, writing checkpoints into ``run_dir``."""

    def __init__(
        self,
        config: TrainConfig,
        dataset: Dataset,
        run_dir: Path | None = None,
        on_epoch_end: Callable[[TrainState], None] | None = None,
    ):
        self.config, self.dataset = config, dataset
        self.run_dir = Path(run_dir) if run_dir else None
        self.on_epoch_end = on_epoch_end
        seed_everything(config.seed)
        self.runtime: Runtime = make_runtime(config.device, config.precision, config.deterministic)
        device = self.runtime.device
        self.model = build_model(config.model, dataset, config).to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        self.step_fn = torch.compile(self._loss) if config.compile else self._loss
        coo = dataset.train.tocoo()
        self.train_users = torch.from_numpy(coo.row.astype(np.int64)).to(device)
        self.train_items = torch.from_numpy(coo.col.astype(np.int64)).to(device)
        self.sampler = NegativeSampler(dataset.exclusion_matrix(), dataset.warm_items, device)
        self.sampler.check_users(np.unique(coo.row))
        # Only the rank method compiles: the CPU rejection loop has data-dependent sizes. And
        # dynamic=False: its randint cannot take a symbolic batch size (a new batch size
        # recompiles instead; an epoch has two: full batches and the last, shorter one).
        compile_sampler = config.compile and self.sampler.method == "rank"
        self.sample_fn = (
            torch.compile(self._sample, dynamic=False) if compile_sampler else self._sample
        )
        self.state = TrainState()
        self.group, self.metric = early_stop_key(config, dataset)
        steps = math.ceil(len(self.train_users) / config.batch_size) * config.epochs
        self.scheduler = None
        if config.lr_schedule == "cosine":
            self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=steps)

    # ------------------------------------------------------------------ one step
    # A step is four parts, kept apart so ``coldbrew profile`` can time each one:
    # negatives (sampler), forward (loss), backward, optimizer.
    def _sample(self, users: torch.Tensor) -> torch.Tensor:
        return self.sampler.sample(users, self.config.num_neg)  # (B, K)

    def _loss(self, users: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor):
        items = torch.cat([positives.unsqueeze(1), negatives], dim=1)  # (B, 1 + K)
        with self.runtime.autocast():
            output = self.model(Batch(users=users, items=items))
        return output.total, output.terms

    def sample_negatives(self, users: torch.Tensor) -> torch.Tensor:
        return self.sample_fn(users)

    def forward(self, users: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor):
        """(total loss, {term: value}) for a batch whose negatives are already drawn."""
        return self.step_fn(users, positives, negatives)

    def backward(self, total: torch.Tensor) -> None:
        scaler = self.runtime.scaler
        (total if scaler is None else scaler.scale(total)).backward()

    def optimizer_step(self) -> None:
        scaler = self.runtime.scaler
        if scaler is None:
            self.optimizer.step()
        else:
            scaler.step(self.optimizer)
            scaler.update()
        if self.scheduler is not None:
            self.scheduler.step()

    def train_step(self, users: torch.Tensor, positives: torch.Tensor):
        self.optimizer.zero_grad(set_to_none=True)
        negatives = self.sample_negatives(users)
        total, terms = self.forward(users, positives, negatives)
        self.backward(total)
        self.optimizer_step()
        return total.detach(), {name: value.detach() for name, value in terms.items()}

    # ------------------------------------------------------------------ one epoch
    def train_epoch(self) -> dict[str, float]:
        config, device = self.config, self.runtime.device
        count = len(self.train_users)
        order = torch.randperm(count, device=device)
        sums: dict[str, torch.Tensor] = {}
        first_bad_step = torch.full((), -1, dtype=torch.long, device=device)
        epoch = self.state.epoch + 1
        bar = tqdm(
            total=count,
            unit="sample",
            unit_scale=True,
            desc=f"epoch {epoch}",
            disable=config.quiet,
            leave=False,
        )
        steps = 0
        for steps, start in enumerate(range(0, count, config.batch_size), start=1):
            index = order[start : start + config.batch_size]
            total, terms = self.train_step(self.train_users[index], self.train_items[index])
            for name, value in {"loss": total, **terms}.items():
                sums[name] = sums[name] + value.float() if name in sums else value.float()
            bad = ~torch.isfinite(total) & (first_bad_step < 0)
            first_bad_step = torch.where(
                bad, torch.full_like(first_bad_step, steps), first_bad_step
            )
            if steps % config.log_every == 0:
                self._gpu_postfix(bar)
                bar.update(min(count, start + config.batch_size) - bar.n)
        bar.update(count - bar.n)
        bar.close()
        bad_step = int(first_bad_step)  # one read per epoch
        if bad_step >= 0:
            raise NonFiniteLoss(
                f"non-finite loss at epoch {epoch}, step {bad_step}; stopped training"
            )
        self.state.samples_seen += count
        means = (torch.stack(list(sums.values())) / steps).tolist()  # one transfer for every term
        return dict(zip(sums, means, strict=True))

    def _gpu_postfix(self, bar) -> None:
        """GPU utilisation and memory next to the bar's samples/s (NVML reads: no device sync)."""
        device = self.runtime.device
        if bar.disable or device.type != "cuda":
            return
        from coldbrew.perf.nvml import format_stats, gpu_stats

        stats = gpu_stats(device.index if device.index is not None else torch.cuda.current_device())
        if stats is not None:
            bar.set_postfix_str(format_stats(stats), refresh=False)

    # ------------------------------------------------------------------ checkpoints
    def checkpoint_payload(self) -> dict:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict() if self.scheduler else None,
            "rng": rng_state(),
            "state": self.state.to_dict(),
            "config": self.config.to_dict(),
        }

    def save(self, name: str) -> None:
        if self.run_dir is not None:
            save_checkpoint(self.checkpoint_payload(), self.run_dir / name)

    def resume(self) -> None:
        payload = load_checkpoint(self.run_dir / LAST, map_location=self.runtime.device)
        self.model.load_state_dict(payload["model"])
        self.optimizer.load_state_dict(payload["optimizer"])
        if self.scheduler is not None and payload["scheduler"] is not None:
            self.scheduler.load_state_dict(payload["scheduler"])
        self.state = TrainState(**payload["state"])
        set_rng_state(payload["rng"])

    # ------------------------------------------------------------------ the loop
    def fit(self, log: Callable[[str], None] = print) -> TrainState:
        state, config = self.state, self.config
        while state.epoch < config.epochs and state.epochs_without_improvement < config.patience:
            started = time.perf_counter()
            losses = self.train_epoch()
            if self.runtime.device.type == "cuda":
                torch.cuda.synchronize()
            state.train_seconds += time.perf_counter() - started
            started = time.perf_counter()
            metrics = evaluate_model(self.model, self.dataset, "val", config)
            state.eval_seconds += time.perf_counter() - started
            state.epoch += 1
            score = metrics.get(self.group, {}).get(self.metric, float("nan"))
            improved = score > state.best_score
            if improved:
                state.best_score, state.best_epoch, state.epochs_without_improvement = (
                    score,
                    state.epoch,
                    0,
                )
            else:
                state.epochs_without_improvement += 1
            state.history.append(
                {
                    "epoch": state.epoch,
                    "losses": losses,
                    "val": metrics,
                    "train_seconds": state.train_seconds,
                    "eval_seconds": state.eval_seconds,
                }
            )
            log(self._epoch_line(losses, metrics, improved))
            if improved:
                self.save(BEST)
            self.save(LAST)
            if self.on_epoch_end is not None:
                self.on_epoch_end(state)
        return state

    def _epoch_line(self, losses: dict, metrics: dict, improved: bool) -> str:
        loss_text = " ".join(f"{name}={value:.4f}" for name, value in losses.items())
        shown = [
            f"{group}/{m}={metrics[group][m]:.4f}"
            for group in metrics
            for m in (self.metric, "ndcg@20")
            if m in metrics[group]
        ]
        rate = self.state.samples_seen / max(self.state.train_seconds, 1e-9)
        mark = " *" if improved else ""
        return f"epoch {self.state.epoch:3d} | {loss_text} | {' '.join(shown)} | {rate:,.0f} samples/s{mark}"

"""The one training loop: task + model + optimizer; nothing model- or task-specific.

Per epoch: the task's sample order (a permutation on the device), cut into optimizer steps of
``batch_size × grad_accum`` samples, each cut into micro-batches of ``batch_size``; for each
micro-batch ``task.make_batch`` (negatives, windows ...), ``model(batch)`` for the loss under
autocast, backward with the loss scaled by the micro-batch's share of the step; then clipping,
the optimizer and the schedule. Loss terms and a non-finite flag accumulate on the device and
are read once per epoch. Then ``task.evaluate(model, "val")``, the best checkpoint by the
task's monitored metric, and the stopping rule of ``training/stopping.py`` (``patience``
evaluations without a gain of ``min_gain`` once ``min_epochs`` are trained, or a
``time_budget`` of seconds).

Randomness, one process: the sample order and everything drawn inside a step (negatives,
dropout, CLCRec's content mix) come from the global torch RNG, which the run seeds before it
builds the model (``coldbrew.training.build.build_trainer``) and checkpoints restore, so a
resumed run continues the same stream. Several processes (``training/distributed.py``): the
order comes from a generator seeded by (seed, epoch), the same on every rank, and each rank
reseeds its step RNG from (seed, epoch, rank) at every epoch.

Memory safety (``training/memory/safety.py``): a step that runs out of memory is redone with
half the micro-batch and twice the micro-steps, from the same RNG state.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from coldbrew.config import TrainConfig
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import LossOutput
from coldbrew.system.runtime import Runtime, rng_state, set_rng_state
from coldbrew.tasks.base import Metrics, Task
from coldbrew.training.checkpoint import (
    BEST,
    LAST,
    TrainState,
    load_checkpoint,
    restore_training,
    save_checkpoint,
    training_payload,
)
from coldbrew.training.distributed import Distributed
from coldbrew.training.hooks import RunHook, as_hooks
from coldbrew.training.memory.safety import (
    FaultInjector,
    OutOfMemory,
    free_after_out_of_memory,
    memory_figures,
)
from coldbrew.training.optim import build_optimizer, build_scheduler, schedule_note
from coldbrew.training.stopping import StopCount, StopRule, stop_line, stop_reason, update


class NonFiniteLoss(ColdbrewError):
    stopped = "non_finite"  # results.json's ``stopped``


class DivergedLoss(NonFiniteLoss):
    """The epoch's loss is orders of magnitude above the run's first step's."""

    stopped = "diverged"


# an epoch whose mean loss exceeds this many times the first step's (at least 1) has diverged
DIVERGENCE_FACTOR = 1000.0


def on_device(model: torch.nn.Module, device: torch.device) -> bool:
    """Whether every parameter and buffer already lives on ``device`` (then ``.to`` is skipped:
    it would try to swap fake tensors when ``coldbrew memory`` traces a step)."""
    tensors = [*model.parameters(), *model.buffers()]
    return all(
        t.device.type == device.type and t.device.index in (None, device.index) for t in tensors
    )


def show_progress(config: TrainConfig) -> bool:
    """Bars only on a terminal: redirected logs get epoch lines, not carriage-return frames."""
    return not config.quiet and sys.stderr.isatty()


def keeping_last(splits: tuple[str, ...]) -> str:
    """An epoch line's words when no validation chooses: the last epoch is kept, and what is
    scored once training ends (a board's final run scores report and test; data with no cold
    split, nothing)."""
    after = [split for split in splits if split in ("report", "test")]
    if after:
        return f"nothing chooses: the last epoch is kept, {' and '.join(after)} scored after"
    return "no validation: the last epoch is kept, nothing to score"


class Trainer:
    """Trains ``model`` on ``task``; checkpoints into ``run_dir`` when one is given."""

    def __init__(
        self,
        model: torch.nn.Module,
        task: Task,
        config: TrainConfig,
        runtime: Runtime,
        *,
        run_dir: Path | None = None,
        log: Callable[[str], None] = print,
        hooks: Sequence[RunHook] = (),
        on_epoch_end: Callable[[TrainState], None] | None = None,
        distributed: Distributed | None = None,
        trains: bool = True,
    ):
        self.config, self.task, self.runtime = config, task, runtime
        self.distributed = distributed or Distributed()
        self.run_dir = Path(run_dir) if run_dir else None
        self.log, self.hooks = log, as_hooks(hooks, on_epoch_end)
        self.model = model if on_device(model, runtime.device) else model.to(runtime.device)
        self.micro_batch = config.batch_size  # halved by out-of-memory recovery
        # one optimizer step: batch_size x grad_accum samples on each of world_size ranks
        self.step_samples = config.batch_size * config.grad_accum * self.distributed.world_size
        self.steps_per_epoch = math.ceil(task.num_samples() / self.step_samples)
        if self.step_samples > task.num_samples() and trains:
            warnings.warn(
                f"a step of {self.step_samples:,} samples (batch size x grad_accum x processes) "
                f"is more than the {task.num_samples():,} training samples: one step per epoch",
                stacklevel=2,
            )
        # a model with nothing to train (content KNN) is evaluated once, as its only epoch
        self.trains = trains
        # data without validation (a cross-validation's final run) chooses nothing: every epoch
        # is trained, none evaluated, and the last is kept as the best
        self.chooses = "val" in task.splits()
        self.optimizer = build_optimizer(self.model, config) if trains else None
        self.scheduler = (
            build_scheduler(self.optimizer, config, self.steps_per_epoch) if trains else None
        )
        self.wrapped = self.distributed.wrap(self.model, runtime.device)
        self.loss_fn = (
            torch.compile(self.wrapped, mode=config.compile_mode)
            if config.compile
            else self.wrapped
        )
        self.faults = FaultInjector()
        self.state = TrainState()

    # ------------------------------------------------------------------ one step
    # A step is four parts, kept apart so ``coldbrew profile`` can time each one:
    # batch (the task's sampling), forward (the loss), backward, optimizer.
    def make_batch(self, index: torch.Tensor) -> Any:
        return self.task.make_batch(index)

    def forward(self, batch: Any) -> LossOutput:
        with self.runtime.autocast():
            return self.loss_fn(batch)

    def backward(self, loss: torch.Tensor) -> None:
        scaler = self.runtime.scaler
        (loss if scaler is None else scaler.scale(loss)).backward()

    def optimizer_step(self) -> None:
        scaler, clip = self.runtime.scaler, self.config.grad_clip
        if clip is not None:
            if scaler is not None:
                scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
        if scaler is None:
            self.optimizer.step()
        else:
            scaler.step(self.optimizer)
            scaler.update()
        if self.scheduler is not None:
            self.scheduler.step()
        self.state.optimizer_steps += 1

    def train_step(self, index: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """One optimizer step over the global step's samples ``index`` (this rank takes its
        slice): micro-batches of ``micro_batch``, each loss weighted by its share of the
        global step, so the gradient is the step's mean whatever the split. Out of memory: the
        step is redone with half the micro-batch, from the same RNG state."""
        if not self.trains:  # no optimizer: refuse in one line (profile, tune) rather than crash
            raise ColdbrewError(
                f"{self.config.model} has nothing to train (fitted as built): it has no training "
                "step to run, time or trace; coldbrew train evaluates it"
            )
        rng = rng_state()  # host-side copies of the generators' state: no device sync
        while True:
            try:
                self.faults.check(self.state.optimizer_steps)
                result = self._accumulate(index)
                break
            except torch.OutOfMemoryError:
                failed = True
            if failed:  # outside the except block: its traceback no longer holds the tensors
                self._recover_from_out_of_memory(rng)
        self.optimizer_step()
        return result

    def _accumulate(self, index: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        self.optimizer.zero_grad(set_to_none=True)
        local = self.distributed.shard(index)
        global_size = max(len(index), self.distributed.world_size)
        parts = local.split(self.micro_batch)
        total, terms = torch.zeros((), device=index.device), {}
        for number, part in enumerate(parts):
            # the rank's share of the global mean; DDP divides the summed gradient by world size
            share = len(part) * self.distributed.world_size / global_size
            with self.distributed.no_sync(self.wrapped, skip=number < len(parts) - 1):
                output = self.forward(self.make_batch(part))
                self.backward(output.total * share)
            total = total + output.total.detach().float() * share
            for name, value in output.terms.items():
                terms[name] = terms.get(name, 0) + value.detach().float() * share
        return total, terms

    def _recover_from_out_of_memory(self, rng: dict) -> None:
        device = self.runtime.device
        free_after_out_of_memory(self.optimizer, device)
        if self.micro_batch == 1:  # last.pt is still the last completed epoch's
            raise OutOfMemory(
                f"out of memory at optimizer step {self.state.optimizer_steps} with a micro-batch "
                f"of 1 sample ({memory_figures(device)}); no smaller step is possible"
            )
        before = self.micro_batch
        self.micro_batch = max(1, before // 2)
        micro_steps = -(-self.config.batch_size * self.config.grad_accum // self.micro_batch)
        self.log(
            f"out of memory at optimizer step {self.state.optimizer_steps}: micro-batch "
            f"{before} -> {self.micro_batch}, {micro_steps} micro-steps per optimizer step "
            "(the effective batch is unchanged); redoing the step"
        )
        set_rng_state(rng)

    # ------------------------------------------------------------------ one epoch
    def train_epoch(self) -> dict[str, float]:
        config, device = self.config, self.runtime.device
        count = self.task.num_samples()
        generator = self.distributed.epoch_generator(config.seed, self.state.epoch, device)
        order = self.task.epoch_order(generator)
        sums: dict[str, torch.Tensor] = {}
        first_bad_step = torch.full((), -1, dtype=torch.long, device=device)
        epoch = self.state.epoch + 1
        bar = tqdm(
            total=count,
            unit="sample",
            unit_scale=True,
            desc=f"epoch {epoch}",
            disable=not show_progress(config),
            leave=False,
        )
        steps, first = 0, None
        for steps, start in enumerate(range(0, count, self.step_samples), start=1):
            total, terms = self.train_step(order[start : start + self.step_samples])
            first = total.detach() if first is None else first
            for name, value in {"loss": total, **terms}.items():
                sums[name] = sums[name] + value if name in sums else value
            bad = ~torch.isfinite(total) & (first_bad_step < 0)
            first_bad_step = torch.where(
                bad, torch.full_like(first_bad_step, steps), first_bad_step
            )
            if steps % config.log_every == 0:
                self._memory_postfix(bar)
                bar.update(min(count, start + self.step_samples) - bar.n)
        bar.update(count - bar.n)
        bar.close()
        # one read per epoch; every rank stops if any saw a non-finite loss
        flagged = int(self.distributed.sum((first_bad_step >= 0).long()))
        if flagged:
            bad_step = int(first_bad_step)
            where = f"step {bad_step}" if bad_step >= 0 else "a step"
            if self.distributed.enabled:
                where += f" on {flagged} of {self.distributed.world_size} ranks"
            raise NonFiniteLoss(f"non-finite loss at epoch {epoch}, {where}; stopped training")
        self.state.samples_seen += count
        means = torch.stack([*(value.float() for value in sums.values()), first.float()]) / steps
        means = self.distributed.sum(means) / self.distributed.world_size
        *values, first_mean = means.tolist()  # one transfer for every term
        losses = dict(zip(sums, values, strict=True))
        if self.state.first_loss is None:
            self.state.first_loss = first_mean * steps
        self._check_divergence(losses["loss"], epoch)
        return losses

    def _check_divergence(self, loss: float, epoch: int) -> None:
        start = self.state.first_loss
        if start is not None and abs(loss) > DIVERGENCE_FACTOR * max(abs(start), 1.0):
            raise DivergedLoss(
                f"the loss diverged: epoch {epoch}'s mean {loss:.3g} against {start:.3g} at the "
                f"first step; the learning rate ({self.config.lr:g}) is probably too high. "
                "Stopped training"
            )

    def _memory_postfix(self, bar) -> None:
        """Live memory next to the bar's samples/s: on a GPU allocated/reserved of total (the
        allocator's host-side counters) and NVML's utilisation, on the CPU the process's
        resident memory. No device sync."""
        if bar.disable:
            return
        from coldbrew.system.memory import memory_postfix

        bar.set_postfix_str(memory_postfix(self.runtime.device), refresh=False)

    # ------------------------------------------------------------------ checkpoints
    def checkpoint_payload(self) -> dict:
        parts = (self.model, self.optimizer, self.scheduler, self.runtime.scaler)
        return training_payload(*parts, self.state, self.config)

    def save(self, name: str) -> None:
        if self.run_dir is not None and self.distributed.is_main:
            save_checkpoint(self.checkpoint_payload(), self.run_dir / name)

    def resume(self, path: Path) -> None:
        payload = load_checkpoint(path, map_location=self.runtime.device)
        parts = (self.model, self.optimizer, self.scheduler, self.runtime.scaler)
        self.state = restore_training(payload, *parts)
        saved_epochs = payload["config"].get("epochs", self.config.epochs)
        note = schedule_note(self.scheduler, self.config, self.steps_per_epoch, saved_epochs)
        if note:
            self.log(note)

    # ------------------------------------------------------------------ the loop
    def fit(self) -> TrainState:
        """Train until ``epochs`` or the stopping rule (``stop_reason``); checkpoints after
        every epoch when a run directory is set."""
        state, config, monitor = self.state, self.config, self.task.monitor
        epochs = config.epochs if self.trains else 1
        while state.epoch < epochs and not self.stop_reason():
            started = time.perf_counter()
            losses, metrics = self._train_and_evaluate()
            improved = self._record(monitor.value(metrics)) if self.chooses else self._keep_last()
            state.history.append(
                {
                    "epoch": state.epoch,
                    "losses": losses,
                    "val": metrics,
                    "train_seconds": state.train_seconds,
                    "eval_seconds": state.eval_seconds,
                }
            )
            self.log(self._epoch_line(losses, metrics, improved))
            state.wall_seconds += time.perf_counter() - started
            if improved:
                self.save(BEST)
            self.save(LAST)
            for hook in self.hooks:
                hook.epoch_end(state)
        reason = self.stop_reason()
        if reason is not None:
            count = StopCount(
                best_epoch=state.best_epoch, without_gain=state.epochs_without_improvement
            )
            self.log(stop_line(reason, self.stop_rule(), count, monitor.key, state.epoch))
        if unreached := self.faults.unreached():
            warnings.warn(f"{unreached} (it took {state.optimizer_steps})", stacklevel=2)
        return state

    def stop_rule(self) -> StopRule:
        config = self.config
        floor = config.resolved_min_epochs()
        return StopRule(config.patience, config.min_gain, config.time_budget, floor)

    def _record(self, score: float) -> bool:
        """The stopping rule's count after an evaluation of ``score``; whether it is the best."""
        state, monitor = self.state, self.task.monitor
        best = monitor.start if state.best_score is None else state.best_score
        reference = best if state.gain_reference is None else state.gain_reference
        count = StopCount(best, state.best_epoch, reference, state.epochs_without_improvement)
        improved = update(count, score, state.epoch, self.stop_rule(), monitor.mode)
        if improved:
            state.best_score, state.best_epoch = count.best, count.best_epoch
        state.gain_reference, state.epochs_without_improvement = count.reference, count.without_gain
        return improved

    def _keep_last(self) -> bool:
        """Without validation the newest epoch is the best: nothing chose it."""
        self.state.best_epoch = self.state.epoch
        return True

    def _train_and_evaluate(self) -> tuple[dict[str, float], Metrics]:
        """One epoch of training, then validation; both timed."""
        started = time.perf_counter()
        losses = self.train_epoch() if self.trains else {}
        if self.runtime.device.type == "cuda":
            torch.cuda.synchronize()
        self.state.train_seconds += time.perf_counter() - started
        started = time.perf_counter()
        metrics = self.evaluate("val") if self.chooses else {}
        self.state.eval_seconds += time.perf_counter() - started
        self.state.epoch += 1
        return losses, metrics

    def evaluate(self, split: str) -> Metrics:
        return self.evaluate_splits((split,))[split]

    def evaluate_splits(self, splits: tuple[str, ...]) -> dict[str, Metrics]:
        """The task's metrics of the model on ``splits``, identical on every rank (so all agree
        on the best epoch and on early stopping). Several processes: a task that can shard
        (``task.shard``) ranks each rank's share of the users and all-reduces the totals;
        another is evaluated by rank 0 and its metrics sent to the others."""
        progress = show_progress(self.config) and self.distributed.is_main
        distributed = self.distributed
        if distributed.enabled and hasattr(self.task, "shard"):
            self.task.shard = (distributed.rank, distributed.world_size, distributed.sum)
            return self.task.evaluate_splits(self.model, splits, progress=progress)
        metrics = None
        if distributed.is_main:
            metrics = self.task.evaluate_splits(self.model, splits, progress=progress)
        return distributed.broadcast(metrics)

    def stop_reason(self) -> str | None:
        """``"early_stop"``, ``"time_budget"`` or None (the rule lets training go on)."""
        state = self.state
        count = StopCount(without_gain=state.epochs_without_improvement)
        seconds = state.train_seconds + state.eval_seconds
        return stop_reason(count, seconds, self.stop_rule(), state.epoch)

    def _epoch_line(self, losses: dict, metrics: Metrics, improved: bool) -> str:
        loss_text = " ".join(f"{name}={value:.4f}" for name, value in losses.items())
        monitor = self.task.monitor
        shown = [
            f"{section}/{name}={values[name]:.4f}"
            for section, values in metrics.items()
            for name in dict.fromkeys((monitor.metric, *monitor.shown))
            if name in values
        ] or ([] if self.chooses else [keeping_last(self.task.splits())])
        rate = self.state.samples_seen / max(self.state.train_seconds, 1e-9)
        mark = " *" if improved else ""
        if not self.trains:  # ridge, knn ...: no training step, so no samples/s to show
            backbone = getattr(self.model, "backbone_seconds", 0.0)
            fitted = (
                f"fitted in closed form (backbone {backbone:.1f}s)"
                if backbone
                else "fitted in closed form"
            )
            return f"epoch {self.state.epoch:3d} | {' '.join(shown)} | {fitted}{mark}"
        return f"epoch {self.state.epoch:3d} | {loss_text} | {' '.join(shown)} | {rate:,.0f} samples/s{mark}"

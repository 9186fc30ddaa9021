"""Recommendation: positives shuffled on the device, negatives drawn per batch, full ranking.

A sample is one training interaction ``(user, item)``. ``make_batch`` draws ``num_neg``
negatives for each sample in one call of the device sampler (uniform over the warm items the
user has no known interaction with) and returns ``Batch(users, items)`` with the positive in
column 0. Evaluation ranks every candidate item per group (all, warm, cold) through the model
contract. The monitored metric defaults to validation Recall@20 of the model's group
(``ModelSpec.monitor_group``: cold, warm for BPR-MF; where validation has no such group, all,
else the group it has), maximised.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from coldbrew.config import TrainConfig, parse_monitor
from coldbrew.data.dataset import EVALUATION_SPLITS, Dataset
from coldbrew.data.sampling import NegativeSampler
from coldbrew.data.tables.content import shown
from coldbrew.errors import ColdbrewError, DataError
from coldbrew.evaluation.model import evaluate_model
from coldbrew.evaluation.protocols import ORIGINAL_INITIAL_BEST
from coldbrew.models.base import Batch
from coldbrew.registry import model_spec
from coldbrew.tasks.base import Metrics, Monitor, Task


def default_monitor(
    dataset: Dataset,
    ks: Sequence[int],
    early_stop_metric: str | None,
    protocol: str = "coldbrew",
    group: str = "cold",
) -> Monitor:
    """``early_stop_metric`` checked against what validation measures, or ``group``'s (else
    all) recall@20 (else the smallest K). Under the original protocol the best starts at 0.0.
    Data without validation (a cross-validation's final run) chooses nothing: its monitor is
    the one it would have, never read (the trainer keeps the last epoch)."""
    groups = dataset.groups("val") or {group: None}
    start = ORIGINAL_INITIAL_BEST if protocol == "original" else None
    if early_stop_metric:
        group, metric = parse_monitor(early_stop_metric, list(ks))
        if group not in groups:
            offered = ", ".join(groups)
            raise ColdbrewError(f"early_stop_metric group {group!r} not in validation ({offered})")
        shown = (f"ndcg@{metric.partition('@')[2]}",)  # NDCG at the monitored K
        return Monitor(group, metric, "max", start=start, shown=shown)
    k = 20 if 20 in ks else min(ks)
    if group not in groups:
        group = "all" if "all" in groups else next(iter(groups))
    return Monitor(group, f"recall@{k}", "max", shown=(f"ndcg@{k}",))


def original_monitor() -> Monitor:
    """The original CLCRec's selection metric (``coldbrew.evaluation.protocols``): validation
    ``all`` Recall@10, higher is better, strictly (``Monitor.improved`` is ``value > best``, as
    the original's ``>``), the best starting at ``ORIGINAL_INITIAL_BEST`` (0.0): an epoch with
    Recall@10 = 0 is never selected. Needs ``10`` among the evaluated ks.
    """
    return Monitor("all", "recall@10", "max", start=ORIGINAL_INITIAL_BEST)


class RecommendationTask(Task):
    def __init__(
        self,
        dataset: Dataset,
        device: torch.device,
        *,
        num_neg: int,
        ks: Sequence[int] = (10, 20, 50),
        early_stop_metric: str | None = None,
        monitor_group: str = "cold",
        eval_chunk_elements: int | None = None,
        compile_sampler: bool = False,
        protocol: str = "coldbrew",
        cold_candidates: str = "all",
        distinct_negatives: bool = False,
        fixed_shapes: bool = False,
    ):
        self.dataset, self.device = dataset, torch.device(device)
        self.num_neg, self.ks, self.eval_chunk_elements = num_neg, list(ks), eval_chunk_elements
        self.protocol, self.distinct_negatives = protocol, distinct_negatives
        self.cold_candidates = cold_candidates
        self.monitor = default_monitor(
            dataset, self.ks, early_stop_metric, protocol, group=monitor_group
        )
        self.compile_sampler = compile_sampler
        self.fixed_shapes = fixed_shapes  # the GPU's step on any device: the rank sampler
        self.shard = None  # (rank, world, sum): evaluate this rank's users, add up the totals
        self._positives: tuple[torch.Tensor, torch.Tensor] | None = None

    def check_trainable(self) -> None:
        """Refuse, by the data's own ids, data no negative can be drawn from: ``num_neg``
        above the warm items, a training user who knows every warm item (a one-user file,
        say) or, with distinct negatives, fewer free warm items than ``num_neg``."""
        dataset = self.dataset
        self._check_num_neg()
        warm = np.zeros(dataset.num_items, dtype=bool)
        warm[dataset.warm_items] = True
        known = dataset.exclusion_matrix().tocsr()
        owners = np.repeat(np.arange(dataset.num_users), np.diff(known.indptr))
        free = warm.sum() - np.bincount(owners[warm[known.indices]], minlength=dataset.num_users)
        trained = np.diff(dataset.train.indptr) > 0

        def example(rows: np.ndarray) -> str:
            row = rows[0]
            return shown(row if dataset.user_ids is None else dataset.user_ids[row])

        full = np.flatnonzero(trained & (free <= 0))
        if len(full):
            raise DataError(
                f"{len(full)} of the {int(trained.sum())} training user(s) know every warm item "
                f"(e.g. user {example(full)}), so no negative can be drawn for them: add other "
                "users' interactions (a recommender learns from many users) or drop those users"
            )
        short = np.flatnonzero(trained & (free < self.num_neg))
        if self.distinct_negatives and len(short):
            raise DataError(
                f"{len(short)} training user(s) have fewer free warm items than num_neg = "
                f"{self.num_neg} (e.g. user {example(short)}: {int(free[short[0]])}), so "
                "distinct negatives cannot be drawn: lower num_neg or drop distinct_negatives"
            )

    def _check_num_neg(self) -> None:
        num_warm = len(self.dataset.warm_items)
        if self.num_neg > num_warm:
            raise ColdbrewError(
                f"num_neg {self.num_neg} is larger than the {num_warm} warm items of "
                f"{self.dataset.name}; use at most {num_warm}"
            )

    def _training_data(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(users, items) of the positives on the device, and the sampler: built on first use,
        so a task that only evaluates never builds them."""
        if self._positives is not None:
            return self._positives
        dataset, num_neg = self.dataset, self.num_neg
        self._check_num_neg()
        coo = dataset.train.tocoo()
        self.sampler = NegativeSampler(
            dataset.exclusion_matrix(),
            dataset.warm_items,
            self.device,
            method="rank" if self.fixed_shapes else "auto",
            replace=not self.distinct_negatives,
        )
        self.sampler.check_users(np.unique(coo.row), num_neg if self.distinct_negatives else None)
        # Only the rank method compiles: the CPU rejection loop has data-dependent sizes. And
        # dynamic=False: its randint cannot take a symbolic batch size (a new batch size
        # recompiles instead; an epoch has two: full batches and the last, shorter one).
        compiled = self.compile_sampler and self.sampler.method == "rank"
        self.sample = torch.compile(self._sample, dynamic=False) if compiled else self._sample
        users = torch.from_numpy(coo.row.astype(np.int64)).to(self.device)
        self._positives = users, torch.from_numpy(coo.col.astype(np.int64)).to(self.device)
        return self._positives

    @classmethod
    def from_config(
        cls,
        dataset: Dataset,
        config: TrainConfig,
        device: torch.device,
        *,
        fixed_shapes: bool = False,
    ) -> RecommendationTask:
        num_neg, distinct = config.model_options.negative_sampling()
        return cls(
            dataset,
            device,
            num_neg=num_neg,
            ks=config.resolved_ks(),
            early_stop_metric=config.early_stop_metric,
            monitor_group=model_spec(config.model).monitor_group,
            eval_chunk_elements=config.eval_chunk_elements,
            compile_sampler=config.compile,
            protocol=config.protocol,
            cold_candidates=config.cold_candidates,
            distinct_negatives=distinct,
            fixed_shapes=fixed_shapes,
        )

    def _sample(self, users: torch.Tensor) -> torch.Tensor:
        return self.sampler.sample(users, self.num_neg)  # (B, K)

    def num_samples(self) -> int:
        return len(self._training_data()[0])

    def make_batch(self, index: torch.Tensor) -> Batch:
        all_users, all_items = self._training_data()
        users = all_users[index]  # (B,)
        negatives = self.sample(users)  # (B, K)
        return Batch(users=users, items=torch.cat([all_items[index, None], negatives], dim=1))

    def evaluate(self, model: torch.nn.Module, split: str, *, progress: bool = False) -> Metrics:
        return self.evaluate_splits(model, (split,), progress=progress)[split]

    def evaluate_splits(
        self, model: torch.nn.Module, splits: tuple[str, ...], *, progress: bool = False
    ) -> dict[str, Metrics]:
        """Every split from one scoring pass (``coldbrew.evaluation.engine``)."""
        return evaluate_model(
            model,
            self.dataset,
            splits,
            ks=self.ks,
            protocol=self.protocol,
            cold_candidates=self.cold_candidates,
            chunk_elements=self.eval_chunk_elements,
            progress=progress,
            shard=self.shard,
        )

    def splits(self) -> tuple[str, ...]:
        return tuple(split for split in EVALUATION_SPLITS if self.dataset.groups(split))

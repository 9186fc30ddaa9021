"""Tune mode's item text vectors: held lower-layer states, tuned top layers, a refreshed table.

Built once: every item's text runs through the backbone's frozen lower layers (in batches of
similar length, with a progress bar) and the states entering the first tuned layer are held,
``(N, T, width)`` float32, after checking that they fit in the RAM available (a clear error
otherwise, naming the levers). Then the top layers run over every item once to fill
``vectors``, the table of current item text vectors (``first_vectors``: the frozen backbone's,
as the adapters start at zero). Both are kept on disk (``states_cache_file``: 0.59 GiB of
states for ml-1m-coldstart at 128 MiniLM tokens), so a later build on the same backbone, texts
and split (another seed, ``coldbrew recommend`` on the run) reads them back and runs no pass
over the catalogue.

A training step gets the text vectors of its ``n`` distinct items: ``m`` of them, drawn
uniformly at random, run through the tuned top layers with gradients, and their fresh vectors
are written back to the table; the other ``n − m`` are read from the table. ``m`` is
``tune_items`` per ``rows_per_step`` rows (so a micro-batch halved by the out-of-memory back-off
encodes half as many). Why a random subset and not the positives, say: the adapters' gradient
then counts every item of the step with the same probability ``m / n`` whatever its role, so
its expectation is ``m / n`` times the gradient with every item fresh (up to the table's
staleness, which each pass and each evaluation resets). Why not smaller batches of every
item: a step of 1,024 rows and 128 negatives each has about 1,800 distinct items; encoding
all of them is what made ``dynamic`` mode cost a day per epoch.

Evaluation (``all_vectors``) runs the top layers over every item without gradients and
refreshes the whole table. The states and the table are data, not state: a checkpoint holds the
adapters (and the heads), and after loading one the table is recomputed before it is read.
Full tables are also kept in memory by a digest of the weights they were computed from (the
tuned layers', adapters and frozen; ``KEPT_TABLES_BYTES`` at most): loading
the best epoch's checkpoint at the end of a run finds its table there instead of running the
layers over the catalogue again (the same numbers: the same weights through the same calls).
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from functools import partial
from pathlib import Path

import torch
from torch import nn
from tqdm.auto import tqdm

from coldbrew.data.text.text_cache import computed_once, read_cached, write_cached
from coldbrew.errors import ColdbrewError
from coldbrew.models.lm.backbone import TextBackbone
from coldbrew.models.lm.split import upper_parameters
from coldbrew.system.terminal import bars_shown

# of the RAM available when the states are built, what they may take
STATES_SHARE_OF_AVAILABLE = 0.6
# full tables kept in memory by their weights (the oldest out first when over; one always)
KEPT_TABLES_BYTES = 256 * 2**20


def states_bytes(num_items: int, tokens: int, width: int) -> int:
    """Bytes of the held lower-layer states, float32 ``(num_items, tokens, width)``."""
    return num_items * tokens * width * 4


def check_states_fit(num_items: int, tokens: int, width: int, available: int) -> None:
    """Refuse, before any work, states that would take over 60 % of ``available`` bytes."""
    needed = states_bytes(num_items, tokens, width)
    if needed > STATES_SHARE_OF_AVAILABLE * available:
        raise ColdbrewError(
            f"--lm-mode tune would hold {needed / 2**30:.2f} GiB of hidden states ({num_items:,} "
            f"items × {tokens} tokens × {width}), over {STATES_SHARE_OF_AVAILABLE:.0%} of the "
            f"{available / 2**30:.2f} GiB of RAM available: lower --max-length, or use "
            "--lm-mode cache"
        )


def states_cache_file(
    identity: str, split: int, token_ids: torch.Tensor, lengths: torch.Tensor
) -> Path:
    """Where the lower ``split`` layers' states of these tokens are cached: one ``.npy`` under
    ``cache_dir()/"states"`` named by the SHA-256 of the backbone's identity (its files), the
    split and every token id and length (the tokenizer and ``--max-length`` are in them)."""
    from coldbrew.data.paths import cache_dir

    digest = hashlib.sha256(f"{identity}|lower-layers-{split}|".encode())
    digest.update(token_ids.to(torch.int64).contiguous().numpy().tobytes())
    digest.update(lengths.to(torch.int64).contiguous().numpy().tobytes())
    return cache_dir() / "states" / f"{digest.hexdigest()}.npy"


class TunedText(nn.Module):
    """``forward(items, rows)``: ``(n, width)`` text vectors of a step's distinct ``items``."""

    def __init__(
        self,
        backbone: TextBackbone,
        token_ids: torch.Tensor,
        lengths: torch.Tensor,
        *,
        tune_items: int,
        rows_per_step: int | None = None,
        batch_size: int = 64,
        progress: bool = False,
        available_bytes: int | None = None,
        cache: bool = True,
    ):
        """``token_ids (N, T)`` and ``lengths (N,)``: the catalogue, tokenized. ``rows_per_step``:
        the rows ``tune_items`` is counted per (None: per call, whatever its rows). ``cache``:
        keep the lower layers' states (``states_cache_file``) and the first table on disk and
        read them back."""
        super().__init__()
        if backbone.split is None:
            raise ColdbrewError("TunedText needs a backbone cut in two (tune_layers)")
        self.backbone = backbone
        self.tune_items, self.rows_per_step = tune_items, rows_per_step
        self.batch_size = batch_size
        width, tokens = backbone.width, int(lengths.max())
        if available_bytes is None:
            from coldbrew.system.memory import host_memory

            available_bytes = host_memory()["available_bytes"]
        check_states_fit(len(lengths), tokens, width, available_bytes)
        self.register_buffer("item_lengths", lengths, persistent=False)
        token_ids = token_ids[:, :tokens]
        self.cache_file = (
            states_cache_file(backbone.identity, backbone.split, token_ids, lengths)
            if cache
            else None
        )
        states = self._held_states(token_ids, lengths, progress)
        self.register_buffer("item_states", states, persistent=False)  # (N, T, width)
        self.register_buffer("vectors", torch.empty(len(lengths), width), persistent=False)
        self.stale = True  # the table is filled on first read
        self.kept: OrderedDict[str, torch.Tensor] = OrderedDict()  # weights -> full table
        self.register_load_state_dict_post_hook(_mark_stale)

    def _held_states(
        self, token_ids: torch.Tensor, lengths: torch.Tensor, progress: bool
    ) -> torch.Tensor:
        """The lower layers' states: read from the disk cache when they are there, else computed
        (and written there when caching; a second process building the same waits for them)."""
        if self.cache_file is None:
            return self._lower_states(token_ids, lengths, progress)
        shape = (len(lengths), token_ids.shape[1], self.backbone.width)
        compute = partial(self._lower_states, token_ids, lengths, progress)
        return computed_once(self.cache_file, shape, compute, "tune mode's held states")

    def first_vectors(self) -> torch.Tensor:
        """The table before any training: with the adapters still at zero, the frozen
        backbone's vectors ``(N, width)``, which the users' history is made of. Cached on disk
        beside the states (by pooling too), so a second build runs no pass over the catalogue;
        adapters that are not zero (already trained) are always run."""
        adapters = [p for name, p in self.named_parameters() if "lora_B" in name]
        path = None
        if self.cache_file is not None and all(not p.any() for p in adapters):
            stem = f"{self.cache_file.stem}-{self.backbone.pooling}-first"
            path = self.cache_file.with_name(f"{stem}.npy")
            cached = read_cached(path, tuple(self.vectors.shape))
            if cached is not None:
                self.vectors.copy_(cached)
                self.stale = False
                return cached
        vectors = self.all_vectors()
        if path is not None:
            write_cached(path, vectors, what="tune mode's first vectors")
        return vectors

    def _lower_states(
        self, token_ids: torch.Tensor, lengths: torch.Tensor, progress: bool
    ) -> torch.Tensor:
        """Every item's states entering the first tuned layer, ``(N, T, width)``."""
        states = torch.zeros(len(lengths), token_ids.shape[1], self.backbone.width)
        order = torch.argsort(lengths, descending=True)
        for start in tqdm(
            range(0, len(order), self.batch_size),
            desc=f"lower {self.backbone.split} layers, once per item",
            unit="batch",
            disable=not bars_shown(progress),
            leave=False,
        ):
            rows = order[start : start + self.batch_size]
            ids, mask = TextBackbone.trim(token_ids[rows], lengths[rows])
            states[rows, : ids.shape[1]] = self.backbone.lower(ids, mask).float()
        return states

    # ------------------------------------------------------------------ vectors
    def encode(self, items: torch.Tensor) -> torch.Tensor:
        """``(m, width)`` fresh vectors of ``items`` through the tuned layers."""
        lengths = self.item_lengths[items]
        longest = int(lengths.max())  # one host read; the layers' cost dwarfs it
        mask = (torch.arange(longest, device=items.device) < lengths[:, None]).long()
        return self.backbone.upper(self.item_states[items, :longest], mask)

    def fresh_count(self, rows: int, distinct: int) -> int:
        """Items of a step of ``rows`` rows (``distinct`` distinct items) that run fresh."""
        wanted = self.tune_items
        if self.rows_per_step is not None:
            wanted = math.ceil(self.tune_items * rows / self.rows_per_step)
        return max(1, min(distinct, wanted))

    def forward(self, items: torch.Tensor, rows: int) -> torch.Tensor:
        """``(n, width)``: a random ``fresh_count`` of ``items`` through the tuned layers (with
        gradients; written back to the table), the rest from the table."""
        if self.stale:
            self.all_vectors()
        text = self.vectors[items]  # (n, width), a copy
        if not torch.is_grad_enabled():
            return text
        count = self.fresh_count(rows, len(items))
        chosen = torch.randperm(len(items), device=items.device)[:count]  # (m,)
        fresh = self.encode(items[chosen])  # (m, width)
        self.vectors[items[chosen]] = fresh.detach()
        return text.index_put((chosen,), fresh)

    @torch.no_grad()
    def all_vectors(self) -> torch.Tensor:
        """Every item's vector ``(N, width)`` from the tuned layers as they are now; refreshes
        the table (from memory when these weights' table is kept)."""
        key = self.weights_key()
        if key in self.kept:
            self.vectors.copy_(self.kept[key])
        else:
            order = torch.argsort(self.item_lengths, descending=True)
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                self.vectors[rows] = self.encode(rows)
            self._keep(key)
        self.stale = False
        return self.vectors.clone()

    def weights_key(self) -> str:
        """A digest of every weight the tuned layers read (their LoRA adapters and frozen
        weights; not the lower layers', whose work the held states already hold)."""
        digest = hashlib.sha256()
        for name, parameter in upper_parameters(self.backbone.model, self.backbone.split):
            digest.update(name.encode())
            digest.update(parameter.detach().cpu().contiguous().flatten().view(torch.uint8).numpy())
        return digest.hexdigest()

    def _keep(self, key: str) -> None:
        self.kept[key] = self.vectors.clone()
        each = self.vectors.numel() * self.vectors.element_size()
        while len(self.kept) > max(1, KEPT_TABLES_BYTES // each):
            self.kept.popitem(last=False)  # the oldest evaluation's


def _mark_stale(module: TunedText, _incompatible) -> None:
    """Loaded adapters make the table out of date."""
    module.stale = True

"""What encoding a catalogue's texts would take, found without encoding: ``text_block_plan``.

``coldbrew data info`` prints it: how many items have text, how many distinct texts, each
encoder's width and precision, how many of the texts its cache holds, and the time the rest
would take at the rate an earlier encode on this machine remembered (``encode_speed``). It
reads the cache's digests and the encoders' configurations, never a model's weights.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Literal

from coldbrew.data.text import encode_speed, text_cache
from coldbrew.data.text.sentence_models import TextEncoder

PROBE_TEXTS = 64  # texts of the one batch timed where no rate is remembered


def text_block_plan(
    texts: list[str],
    encoder: TextEncoder,
    *,
    cache: Path | Literal["default"] = "default",
    device_type: str | None = None,
    probe: bool = True,
) -> dict:
    """The text block of ``texts`` (one per item, ``""`` for none) under ``encoder``, as a
    dict: ``items_with_text``, ``distinct_texts``, ``encoder``, ``width`` and per member its
    ``model``, ``width``, ``precision``, ``cached`` (distinct texts its cache holds),
    ``to_encode`` and ``estimate_s`` at the rate an encode here remembered, else (``probe``)
    at the rate of one batch of ``PROBE_TEXTS`` texts timed now, else None."""
    import torch

    from coldbrew.data.text.embedder import _cache_root, encode_precision, encoder_key

    distinct = sorted({text for text in texts if text})
    chars = sum(map(len, distinct))
    root = _cache_root(cache)
    assert root is not None
    if device_type is None:
        device_type = "cuda" if torch.cuda.is_available() else "cpu"
    members = []
    models = encoder.models(progress=False)
    for member, model in zip(encoder.members, models, strict=True):
        key = encoder_key(model.backbone, model.pooling, model.normalize, model.max_length)
        precision = encode_precision(device_type)
        lists = (texts, distinct)  # as the MovieLens loaders encode them; as item tables do
        if any(text_cache.whole_list_file(some, root, key).is_file() for some in lists):
            cached = len(distinct)
        else:
            cached = text_cache.count_found(distinct, text_cache.stores_read(root, key, precision))
        to_encode = len(distinct) - cached
        rate_key = encode_speed.rate_key(key, precision, torch.get_num_threads())
        rate = encode_speed.stored_rate(root, rate_key)
        measured = "remembered"
        if rate is None and to_encode and probe:
            rate, measured = probe_rate(distinct, model, device_type, precision), "probed"
        share = chars * to_encode // max(len(distinct), 1)  # characters left, about
        members.append(
            {
                "model": str(member),
                "rate": measured,
                "width": _width(model.backbone),
                "precision": precision,
                "cached": cached,
                "to_encode": to_encode,
                "estimate_s": encode_speed.estimate(share, rate) if to_encode else 0.0,
            }
        )
    return {
        "items_with_text": sum(1 for text in texts if text),
        "distinct_texts": len(distinct),
        "encoder": encoder.spelling,
        "width": sum(member["width"] for member in members),
        "members": members,
    }


def probe_rate(distinct: list[str], model, device_type: str, precision: str) -> float:
    """Characters per second of one batch of texts spread over ``distinct`` (sorted: every
    length), encoded at ``precision`` and thrown away; the backbone is loaded for it."""
    import torch

    from coldbrew.data.text import backbones
    from coldbrew.data.text.embedder import _encode

    step = max(len(distinct) // PROBE_TEXTS, 1)
    sample = sorted(distinct[::step][:PROBE_TEXTS], key=len)
    device = "cuda" if device_type == "cuda" else "cpu"
    loaded = backbones.load_backbone(model.backbone, device, progress=False)
    bf16 = device == "cpu" and precision == "bf16"
    notes = logging.getLogger("coldbrew.data.text.embedder")
    was, notes.disabled = notes.disabled, True  # a sample's cut texts: no note
    try:
        _encode(sample[:2], loaded, model, batch_size=2, progress=False)  # warm up
        started = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            _encode(sample, loaded, model, batch_size=len(sample), progress=False)
        elapsed = time.perf_counter() - started
    finally:
        notes.disabled = was
    return sum(map(len, sample)) / max(elapsed, 1e-9)


def _width(backbone: str) -> int:
    from coldbrew.data.text.backbones import EMBEDDING_DIM, PACKAGED_NAMES, hidden_size

    return EMBEDDING_DIM if backbone in PACKAGED_NAMES else hidden_size(backbone)


def describe_plan(plan: dict) -> str:
    """One line: ``"3,018 items with text, 3,018 distinct; minilm: 384 columns (bf16), 3,018
    cached"`` or ``"... 0 cached, 3,018 to encode: about 12 s here"``."""
    from coldbrew.data.text.embedder import clock

    parts = []
    for member in plan["members"]:
        left = member["to_encode"]
        said = f"{member['cached']:,} cached"
        if left:
            seconds = member["estimate_s"]
            when = (
                f"about {clock(seconds)} (rate {member['rate']} on this machine)"
                if seconds is not None
                else "time unknown until a first encode here remembers its rate"
            )
            said += f", {left:,} to encode: {when}"
        parts.append(
            f"{member['model']}: {member['width']} columns ({member['precision']}), {said}"
        )
    return (
        f"{plan['items_with_text']:,} items with text, {plan['distinct_texts']:,} distinct; "
        + "; ".join(parts)
    )

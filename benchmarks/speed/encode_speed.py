"""Text encoding speed: token budgets and batch order, side by side in one process.

    COLDBREW_DATA=DIR python benchmarks/speed/encode_speed.py [--encoder minilm] [--texts 128]
        [--budgets 384,256,128] [--batch-size 32] [--rounds 2] [--runtime torch]
        [--length-order-only]

Takes the first N item texts of ml-1m-coldstart (title, genres, director, cast, plot), prints
their token lengths, then in turn (every setting once per round, the rounds interleaved so
the machine's load falls on all alike) encodes them in fp32 at each token budget
(``--text-encoder NAME@TOKENS``), with the batches cut in length order (what ``encode_texts``
does) and, unless ``--length-order-only``, in the texts' own order. ``--runtime``: torch, onnx
(ONNX Runtime, the ``[onnx]`` extra) or auto (what ``encode_texts`` would take: ONNX Runtime
for mpnet where installed). Reports, per budget, the tokens a text keeps (mean over every text
of the dataset), texts/s (median over rounds) and the least cosine of a vector to the same
text's vector at the encoder's own budget and in length order; the load before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace

import torch

from coldbrew import load_dataset
from coldbrew.data.paths import cache_dir
from coldbrew.data.text import backbones
from coldbrew.data.text.embedder import _encode
from coldbrew.data.text.onnx_encoder import onnx_forward, resolve_runtime, takes_onnx
from coldbrew.data.text.sentence_models import sentence_model


def encode(texts, loaded, model, budget, batch_size, sorted_batches, forward=None):
    settings = replace(model, max_length=budget)
    how = {"batch_size": batch_size, "progress": False, "forward": forward}
    if sorted_batches:
        return _encode(texts, loaded, settings, **how)
    parts = []  # the texts' own order: each batch pads to its longest text
    for start in range(0, len(texts), batch_size):
        parts.append(_encode(texts[start : start + batch_size], loaded, settings, **how))
    return torch.cat(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--texts", type=int, default=128)
    parser.add_argument("--budgets", default="384,256,128")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runtime", default="torch", choices=("auto", "torch", "onnx"))
    parser.add_argument("--length-order-only", action="store_true")
    args = parser.parse_args()
    dataset = load_dataset("ml-1m-coldstart", features=["genre"])
    texts = list(dataset.item_text[: args.texts])
    model = sentence_model(args.encoder, progress=False)
    loaded = backbones.load_backbone(model.backbone, "cpu", progress=False)
    forward = None
    if takes_onnx(resolve_runtime(args.runtime), loaded):
        forward = onnx_forward(loaded, cache_dir())
    lengths = sorted(len(ids) for ids in loaded.tokenizer(texts)["input_ids"])
    every = [len(ids) for ids in loaded.tokenizer(dataset.item_text)["input_ids"]]
    quantiles = [lengths[int(q * (len(lengths) - 1))] for q in (0.1, 0.5, 0.9)]
    print(
        f"{args.encoder}, {len(texts)} texts, {torch.get_num_threads()} thread(s), "
        f"{'onnx' if forward else 'torch'}; tokens: 10/50/90 % {quantiles}, max {lengths[-1]}; "
        f"own budget {model.max_length}; load {os.getloadavg()}"
    )
    budgets = [int(b) for b in args.budgets.split(",")]
    orders = (True,) if args.length_order_only else (True, False)
    settings = [(budget, order) for budget in budgets for order in orders]
    seconds: dict = {setting: [] for setting in settings}
    vectors: dict = {}
    warm = texts[: args.batch_size]
    encode(warm, loaded, model, budgets[0], args.batch_size, True, forward)  # warm-up
    for _ in range(args.rounds):
        for budget, order in settings:
            started = time.perf_counter()
            vectors[budget, order] = encode(
                texts, loaded, model, budget, args.batch_size, order, forward
            )
            seconds[budget, order].append(time.perf_counter() - started)
    reference = vectors[min(model.max_length, max(budgets)), True]
    for budget, order in settings:
        rate = len(texts) / statistics.median(seconds[budget, order])
        cosine = torch.nn.functional.cosine_similarity(vectors[budget, order], reference).min()
        label = "length order" if order else "own order"
        kept = sum(min(length, budget) for length in every) / len(every)
        print(
            f"budget {budget:4d} ({kept:.1f} tokens kept) {label:12s} {rate:7.2f} texts/s "
            f"(rounds: {', '.join(f'{s:.1f}' for s in seconds[budget, order])} s) "
            f"least cosine to reference {cosine:.5f}"
        )
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

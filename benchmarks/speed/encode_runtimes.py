"""Text encoding runtimes side by side in one process: torch fp32 and bf16, ONNX fp32 and int8.

    COLDBREW_DATA=DIR python benchmarks/speed/encode_runtimes.py [--encoder minilm] [--texts 32]
        [--threads 1,2] [--rounds 2] [--int8 [VARIANT,...]]

Takes the first N item texts of ml-1m-coldstart, exports the encoder's transformer with
``coldbrew.data.text.onnx_encoder`` (cached under the coldbrew cache), and per thread count encodes
them in turn (the rounds interleaved, so the machine's load falls on all alike) with torch fp32
(the reference), ONNX Runtime fp32 and, with ``--int8``, two dynamic int8 quantizations of the
export (``onnxruntime.quantization.quantize_dynamic``, int8 per-channel weights, MatMul only):
``int8`` every MatMul but the activation-by-activation ones (attention scores), ``int8-ffn``
also leaving the feed-forward output projection in fp32 (the most sensitive in a sweep). Prints
texts/s (the fastest round: the least disturbed by other processes), the ratio to torch and
each path's least and median per-vector cosine to torch's vectors. The load is printed too.
``torch-bf16`` is torch under ``torch.autocast("cpu", dtype=torch.bfloat16)`` (what
``encode_texts`` runs on a CPU with AMX or AVX-512 bf16); the ONNX paths are left out, with a
line, where onnxruntime is not installed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from coldbrew import load_dataset
from coldbrew.data.paths import cache_dir
from coldbrew.data.text import backbones, onnx_encoder
from coldbrew.data.text.embedder import _encode
from coldbrew.data.text.sentence_models import sentence_model

INT8_VARIANTS = ("int8", "int8-ffn", "int8-7bit", "int8-7bit-ffn")


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def session_forward(path: Path, threads: int):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def forward(ids, mask):
        return torch.from_numpy(
            session.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0]
        )

    return forward


def quantized(source: Path, name: str) -> Path:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target = source.with_name(f"model-{name}.onnx")
    if target.is_file():
        return target
    nodes = [node.name for node in onnx.load(str(source), load_external_data=False).graph.node]
    matmuls = [node for node in nodes if node.endswith(("/MatMul", "/MatMul_1"))]
    weighted = ("query", "key", "value", "q", "k", "v", "o", "dense")  # x @ W, W a constant
    excluded = [node for node in matmuls if node.split("/")[-2] not in weighted]  # scores
    if name.endswith("-ffn"):
        excluded += [
            node for node in matmuls if "/output/dense/" in node and "attention" not in node
        ]
    quantize_dynamic(str(source), str(target), op_types_to_quantize=["MatMul"],
                     weight_type=QuantType.QInt8, per_channel=True, nodes_to_exclude=excluded,
                     reduce_range="7bit" in name)  # fmt: skip
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--texts", type=int, default=32)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument(
        "--int8", nargs="?", const=",".join(INT8_VARIANTS), default="",
        help=f"quantized variants to add, comma-separated (alone: all of {', '.join(INT8_VARIANTS)})",
    )  # fmt: skip
    args = parser.parse_args()
    variants = [name for name in args.int8.split(",") if name]
    if unknown := sorted(set(variants) - set(INT8_VARIANTS)):
        parser.error(
            f"--int8: unknown variant(s) {', '.join(unknown)}; known: {', '.join(INT8_VARIANTS)}"
        )
    texts = list(load_dataset("ml-1m-coldstart", features=["genre"]).item_text[: args.texts])
    model = sentence_model(args.encoder, progress=False)
    loaded = backbones.load_backbone(model.backbone, "cpu", progress=False)
    paths = {}
    if onnx_encoder.onnx_installed():
        exported = cache_dir() / "onnx" / onnx_encoder.export_key(loaded.identity) / "model.onnx"
        if not exported.is_file():
            started = time.perf_counter()
            onnx_encoder.export(loaded, exported)
            print(f"exported in {time.perf_counter() - started:.1f} s: {exported}")
        paths = {"onnx": exported}
        paths.update({name: quantized(exported, name) for name in variants})
    else:
        print("onnxruntime is not installed: torch fp32 and bf16 only")
    print(f"{args.encoder}, {len(texts)} texts, budget {model.max_length}, load {load()}")
    for threads in [int(t) for t in args.threads.split(",")]:
        torch.set_num_threads(threads)
        forwards = {"torch": None, "torch-bf16": None} | {
            name: session_forward(p, threads) for name, p in paths.items()
        }
        seconds: dict = {name: [] for name in forwards}
        vectors: dict = {}
        for round_ in range(args.rounds + 1):  # round 0 warms up
            for name, forward in forwards.items():
                started = time.perf_counter()
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=name == "torch-bf16"):
                    vectors[name] = _encode(
                        texts,
                        loaded,
                        model,
                        batch_size=args.batch_size,
                        progress=False,
                        forward=forward,
                    )
                if round_:
                    seconds[name].append(time.perf_counter() - started)
        print(f"threads {threads}, load after {load()}")
        for name in forwards:
            cosine = torch.nn.functional.cosine_similarity(vectors[name], vectors["torch"])
            best = min(seconds[name])
            print(
                f"  {name:9s} {len(texts) / best:6.2f} texts/s  {min(seconds['torch']) / best:4.2f}x torch"
                f"  rounds {', '.join(f'{s:.1f}' for s in seconds[name])} s"
                f"  cosine to torch: least {cosine.min():.5f}, median {cosine.median():.5f}",
                flush=True,
            )


if __name__ == "__main__":
    main()

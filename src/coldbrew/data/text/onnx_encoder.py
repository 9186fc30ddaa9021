"""The text backbone through ONNX Runtime: exported once per model, cached, same vectors.

``encode_texts`` runs its backbone with torch or, where ``onnxruntime`` is installed (the
``[onnx]`` extra), with ONNX Runtime. ``COLDBREW_TEXT_RUNTIME``: ``auto`` (the default) takes
ONNX Runtime when it is installed and torch runs the model with its eager attention (mpnet:
1.2-1.3x faster), not where torch has its fused attention (MiniLM's SDPA: ONNX Runtime was 0.8x at
one thread); ``torch`` never; ``onnx`` always (an error without onnxruntime). The
transformer alone (token ids and mask in, token states out) is exported by ``torch.onnx`` from
the loaded model, checked against torch on a padded batch, and cached under
``cache_dir()/"onnx"`` keyed by the backbone's identity and the torch, transformers and opset
versions; pooling and normalisation stay torch's code. Token states agree with torch to ~1e-6
(measured 3e-7 on mpnet's vectors), so the text-vector cache key does not name the runtime.
int8 was measured and refused, with 8-bit and 7-bit weights (BENCHMARKS.md, "Text encoding
runtimes" and "mpnet's int8, again"). On a CPU with bf16 in hardware ``auto`` keeps torch under
bf16 autocast (``encode_speed``: mpnet 3.3x fp32 torch, against ONNX Runtime's 1.2-1.3x).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

from coldbrew.errors import DataError

RUNTIMES = ("auto", "torch", "onnx")
RUNTIME_VARIABLE = "COLDBREW_TEXT_RUNTIME"
OPSET = 17
EXPORT_TOLERANCE = 1e-3  # largest token-state difference to torch accepted at export
INSTALL_HINT = "pip install 'coldbrew[onnx]'"
LOGGER = logging.getLogger(__name__)
Forward = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (ids, mask) -> (B, T, D)


def onnx_installed() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_runtime(runtime: str | None = None) -> str:
    """``runtime``, else ``$COLDBREW_TEXT_RUNTIME``, else ``auto``, checked: ``auto`` becomes
    ``torch`` without onnxruntime, ``onnx`` without it is a ``DataError``."""
    choice = (runtime or os.environ.get(RUNTIME_VARIABLE) or "auto").strip().lower()
    if choice not in RUNTIMES:
        raise DataError(
            f"text runtime must be one of {', '.join(RUNTIMES)} (${RUNTIME_VARIABLE}), "
            f"not {choice!r}"
        )
    if choice == "auto" and not onnx_installed():
        return "torch"
    if choice == "onnx" and not onnx_installed():
        raise DataError(f"text runtime onnx needs onnxruntime: {INSTALL_HINT}")
    return choice


def takes_onnx(runtime: str, loaded) -> bool:
    """Whether a resolved ``runtime`` runs ``loaded`` (a ``LoadedBackbone``) with ONNX Runtime:
    ``onnx``, or ``auto`` for a model torch runs with eager attention (see the module's doc)."""
    if runtime == "auto":
        return getattr(loaded.model.config, "_attn_implementation", None) == "eager"
    return runtime == "onnx"


def onnx_forward(loaded, cache_root: Path) -> Forward | None:
    """``(input_ids, attention_mask) -> token states`` through ONNX Runtime for ``loaded``
    (a ``LoadedBackbone`` on CPU), exporting it on first use; ``None`` (logged) when the
    model cannot be exported or its export disagrees with torch, so the caller keeps torch."""
    import onnxruntime

    path = cache_root / "onnx" / export_key(loaded.identity) / "model.onnx"
    try:
        if not path.is_file():
            export(loaded, path)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = torch.get_num_threads()
        options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
    except Exception as error:  # an exporter or runtime failure must not stop the encode
        LOGGER.warning("text encoder: ONNX Runtime unavailable for this model (%s); torch", error)
        return None

    def forward(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        feed = {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()}
        return torch.from_numpy(session.run(None, feed)[0])

    return forward


def export_key(identity: str) -> str:
    """The export's folder name: the backbone's identity and what shapes the exported graph."""
    import transformers

    stamp = f"{identity}|torch-{torch.__version__}|transformers-{transformers.__version__}"
    return hashlib.sha256(f"{stamp}|opset-{OPSET}".encode()).hexdigest()[:32]


def export(loaded, path: Path) -> None:
    """Export ``loaded``'s transformer to ``path`` (written beside it and renamed, so a half
    export is never read), after checking the export's token states against torch's."""
    sample = loaded.tokenizer(
        ["a short text", "a longer text, so that the batch is padded and the mask matters"],
        padding=True,
        return_tensors="pt",
    )
    ids, mask = sample["input_ids"], sample["attention_mask"]
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=path.parent.parent, prefix=".tmp-export-"))
    try:
        _export_to(loaded.model, ids, mask, folder / "model.onnx")
        _check_export(loaded.model, folder / "model.onnx", ids, mask)
        os.replace(folder / "model.onnx", path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class _States(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def _export_to(model, ids: torch.Tensor, mask: torch.Tensor, target: Path) -> None:
    import warnings

    axes = {0: "batch", 1: "tokens"}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on shape-dependent Python code
        torch.onnx.export(
            _States(model).eval(),
            (ids, mask),
            str(target),
            input_names=["input_ids", "attention_mask"],
            output_names=["states"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "states": axes},
            opset_version=OPSET,
            dynamo=False,  # the TorchScript exporter: no onnxscript needed
        )


def _check_export(model, target: Path, ids: torch.Tensor, mask: torch.Tensor) -> None:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    exported = session.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0]
    with torch.no_grad():
        reference = model(input_ids=ids, attention_mask=mask).last_hidden_state
    real = mask.bool()  # padded positions are pooled away
    gap = (torch.from_numpy(exported) - reference)[real].abs().max().item()
    if not gap <= EXPORT_TOLERANCE:
        raise DataError(f"the ONNX export differs from torch by {gap:.2e} (> {EXPORT_TOLERANCE})")

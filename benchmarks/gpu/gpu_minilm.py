"""MiniLM's weights carried to the GPU machine in half precision, and restored there.

all-MiniLM-L6-v2's float32 safetensors are 87 MiB, over the 64 MiB the device tool carries.
``pack`` writes its sentence-transformers folder without them, plus ``weights.npz``: every
float tensor rounded to float16 and split into its high and low bytes, each plane deflated
(the high bytes, sign and exponent, compress well): 37 MiB, against 43 MiB of plain float16.
``restore`` (on the device) writes the float32 folder back, the float16 values widened, which
both the LM recommender (``backbone=FOLDER``) and the text pipeline (``text_encoder=FOLDER``)
read. Rounding to float16 moves each weight by at most 2^-11 of itself; the sentence
embeddings move by about 1e-4 (tests/perf/test_gpu_minilm.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

WEIGHTS = "model.safetensors"
PACKED = "weights.npz"
DTYPES = "weights.json"  # each tensor's dtype: float ones were packed, others kept as they are


def pack(source: Path, out: Path) -> int:
    """``source`` (a model folder with ``model.safetensors``) into ``out``, weights packed in
    float16 byte planes; the bytes written."""
    import torch
    from safetensors.torch import load_file

    out.mkdir(parents=True)
    for path in source.rglob("*"):
        relative = path.relative_to(source)
        if path.is_file() and relative.name != WEIGHTS and not relative.name.startswith("."):
            (out / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out / relative)
    arrays, dtypes = {}, {}
    for name, tensor in load_file(source / WEIGHTS).items():
        dtypes[name] = str(tensor.dtype).removeprefix("torch.")
        if tensor.is_floating_point():
            planes = tensor.half().contiguous().view(torch.int16).numpy().view(np.uint8)
            planes = planes.reshape(*tensor.shape, 2)  # little-endian: [..., 0] the low byte
            arrays[f"{name}:low"], arrays[f"{name}:high"] = planes[..., 0], planes[..., 1]
        else:
            arrays[name] = tensor.numpy()
    np.savez_compressed(out / PACKED, **arrays)
    (out / DTYPES).write_text(json.dumps(dtypes, indent=1))
    return sum(path.stat().st_size for path in out.rglob("*") if path.is_file())


def unpacked_weights(folder: Path) -> dict:
    """{name: tensor} of a packed folder, float tensors as float16 values in their own dtype."""
    import torch

    dtypes = json.loads((folder / DTYPES).read_text())
    tensors = {}
    with np.load(folder / PACKED) as arrays:
        for name, dtype in dtypes.items():
            if f"{name}:high" in arrays:
                high, low = arrays[f"{name}:high"], arrays[f"{name}:low"]
                half = (high.astype(np.uint16) << 8 | low).view(np.float16)
                tensors[name] = torch.from_numpy(half.copy()).to(getattr(torch, dtype))
            else:
                tensors[name] = torch.from_numpy(arrays[name].copy())
    return tensors


def restore(folder: Path, out: Path) -> Path:
    """The model folder ``out`` (float32 ``model.safetensors`` and every other file) from the
    packed ``folder``."""
    from safetensors.torch import save_file

    shutil.copytree(folder, out, ignore=shutil.ignore_patterns(PACKED, DTYPES))
    save_file(unpacked_weights(folder), out / WEIGHTS, metadata={"format": "pt"})
    return out

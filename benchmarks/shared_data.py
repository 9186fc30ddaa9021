"""What the benchmark scripts share: where the shared datasets are (``$COLDBREW_DATA``, else
../shared/data), loading one with generated feature widths, and mean ± std over seeds."""

from __future__ import annotations

import os
import sys
from pathlib import Path

DEFAULT_ROOT = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data").resolve()


def use_shared_data() -> Path:
    """Point ``COLDBREW_DATA`` at the shared data unless it is set; return the root."""
    os.environ.setdefault("COLDBREW_DATA", str(DEFAULT_ROOT))
    return Path(os.environ["COLDBREW_DATA"]).resolve()


def dataset_path(name: str) -> Path:
    """The folder of dataset ``name`` under the shared root, or exit with what to set."""
    path = use_shared_data() / name
    if not path.is_dir():
        sys.exit(f"{path} not found: set COLDBREW_DATA to the folder holding {name}/")
    return path


def load_shared(name: str, features: list[str], threads: int | None = None):
    """Dataset ``name`` from the shared data, its warnings silenced (ml-1m-coldstart's "no
    cold_test.csv: test metrics skipped"); ``threads`` CPU threads for torch when given."""
    import warnings

    import torch

    if threads:
        torch.set_num_threads(threads)
    use_shared_data()
    from coldbrew import load_dataset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_dataset(name, features=features)


def load_shaped(settings: dict):
    """The dataset of ``settings`` (options of ``coldbrew train``, plus ``feature_dims``: item
    features replaced by random ones of these widths, as ``coldbrew bench --feature-dims``)
    and its run configuration."""
    from coldbrew.config import make_config
    from coldbrew.data import load_dataset
    from coldbrew.perf.bench import random_features

    settings = dict(settings)
    widths = settings.pop("feature_dims", None)
    use_shared_data()
    config = make_config({"quiet": True, **settings})
    features = config.resolved_features() or ([] if widths else None)
    dataset = load_dataset(config.data, trust_pickle=True, features=features, seed=config.seed)
    if widths:
        dataset.features = random_features(dataset.num_items, widths, config.seed)
    return dataset, config


def mean_and_std(values: list[float]) -> dict:
    """Mean and sample standard deviation (``n − 1``; 0 for one value) with the values."""
    import statistics

    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": statistics.fmean(values), "std": spread, "values": values}


def seeds_list(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]

"""Selection never reads the report half: a run (best epoch, the monitored history, early
stopping) and a blend's weights are the same whatever the report positives are, while the
reported figures follow them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from coldbrew import load_dataset
from coldbrew.config import make_config
from coldbrew.data.splits.selection import carve_report
from coldbrew.training.run import train

FAST = {
    "data": "synthetic:small",
    "batch_size": 512,
    "num_neg": 16,
    "lr": 0.01,
    "quiet": True,
    "epochs": 4,
    "patience": 1,  # early stopping decides too: it must not see report either
}


def with_other_report(dataset):
    """``dataset`` whose report positives are given to other users (rows permuted): the same
    report items, other hits; val, train and test untouched."""
    order = np.random.default_rng(0).permutation(dataset.num_users)
    report = {group: matrix[order] for group, matrix in dataset.splits["report"].items()}
    for matrix in report.values():
        matrix.sort_indices()
    return dataclasses.replace(dataset, splits={**dataset.splits, "report": report})


@pytest.fixture(scope="module")
def datasets():
    dataset = carve_report(load_dataset("synthetic:small", seed=3), 0.5, 0)
    return dataset, with_other_report(dataset)


def test_a_run_chooses_the_same_whatever_the_report_half_holds(datasets, tmp_path):
    config = make_config(FAST)
    first, second = (
        train(config, tmp_path / f"run{index}", dataset=dataset)
        for index, dataset in enumerate(datasets)
    )
    assert first["best_epoch"] == second["best_epoch"]
    assert first["epochs_run"] == second["epochs_run"]
    assert [entry["val"] for entry in first["history"]] == [
        entry["val"] for entry in second["history"]
    ]
    assert first["early_stop"] == second["early_stop"]
    assert first["metrics"]["val"] == second["metrics"]["val"]
    assert first["metrics"]["test"] == second["metrics"]["test"]
    # the report figures are the report positives' own
    assert first["metrics"]["report"]["cold"] != second["metrics"]["report"]["cold"]


def test_blend_weights_are_chosen_without_the_report_half(datasets):
    import torch

    from coldbrew.research.boards.blend import choose_weights

    generator = torch.Generator().manual_seed(0)
    dataset = datasets[0]
    components = [
        (
            torch.randn(dataset.num_users, 4, generator=generator),
            torch.randn(dataset.num_items, 4, generator=generator),
        )
        for _ in range(2)
    ]
    chosen = [choose_weights([(data, components)], "all", log=lambda _: None) for data in datasets]
    assert chosen[0] == chosen[1]

"""The package facade (``coldbrew.evaluate_embeddings`` ...): what a notebook user calls."""

from __future__ import annotations

import pytest
import torch

import coldbrew


def test_evaluating_a_split_the_data_lacks_is_an_error_not_an_empty_result():
    dataset = coldbrew.load_dataset("synthetic:small", seed=1)
    dataset.splits.pop("test")  # as data published with a validation split alone
    users = torch.randn(dataset.num_users, 4)
    items = torch.randn(dataset.num_items, 4)
    with pytest.raises(coldbrew.DataError, match="has no test split to evaluate \\(it has: val\\)"):
        coldbrew.evaluate_embeddings(dataset, users, items, split="test")
    with pytest.raises(coldbrew.DataError, match="has no test split"):
        coldbrew.evaluate_scores(dataset, lambda rows: users[rows] @ items.T, split="test")
    assert set(coldbrew.evaluate_embeddings(dataset, users, items, split="val")) >= {"cold"}

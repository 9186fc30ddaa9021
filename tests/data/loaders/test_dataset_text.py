"""Item and user texts on a Dataset: lengths checked, kept by the pickle-free stored form."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from coldbrew.data.dataset import Dataset
from coldbrew.data.loaders import stored
from coldbrew.errors import DataError


def small(**texts) -> Dataset:
    train = sp.csr_matrix(np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32))
    return Dataset(name="small", num_users=2, num_items=3, train=train, cold_items=[2], **texts)


def test_text_lengths_must_match_the_counts():
    with pytest.raises(DataError, match="item_text has 2 entries, expected 3"):
        small(item_text=["a", "b"])
    with pytest.raises(DataError, match="user_text has 3 entries, expected 2"):
        small(user_text=["a", "b", "c"])


def test_stored_form_keeps_item_and_user_texts(tmp_path):
    dataset = small(item_text=["Name: x.", "Name: y.", "Name: z."], item_titles=["x", "y", "z"])
    dataset.user_text = ["User: 30.", "User: 40."]
    loaded = stored.load(stored.save(dataset, tmp_path / "saved"), None)
    assert loaded.item_text == dataset.item_text and loaded.user_text == dataset.user_text
    assert loaded.item_titles == ["x", "y", "z"]
    with pytest.raises(DataError, match="item_titles has 2 entries, expected 3"):
        small(item_titles=["a", "b"])


def test_stored_form_written_before_user_texts_still_loads(tmp_path):
    folder = stored.save(small(item_text=["x.", "y.", "z."]), tmp_path / "saved")
    manifest = json.loads((folder / stored.MANIFEST_FILE).read_text())
    del manifest["user_text"], manifest["item_titles"]
    (folder / stored.MANIFEST_FILE).write_text(json.dumps(manifest))
    assert stored.load(folder, None).user_text is None
    assert stored.load(folder, None).item_titles is None

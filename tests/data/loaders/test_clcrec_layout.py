"""The CLCRec folder loader on tiny hand-written folders, and on the shared MovieLens split."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from coldbrew.data import Dataset, WordIds
from coldbrew.data.loaders import clcrec_layout
from coldbrew.errors import DataError
from conftest import shared_path

# 4 users (ids 0..3) and 6 items (file ids 4..9 = internal 0..5); items 8 and 9 are cold.
TRAIN = {0: {4, 5}, 1: {5, 6}, 2: {4, 7}, 3: {6}}
EXTRA_KNOWN = {0: {8}, 1: {9}, 2: {6}, 3: {7}}


def object_rows(rows: list[list[int]]) -> np.ndarray:
    """An object array with one ``[user, item, ...]`` list per row, as CLCRec saves them."""
    array = np.empty(len(rows), dtype=object)
    for index, row in enumerate(rows):
        array[index] = list(row)
    return array


def write_folder(folder: Path, *, pairs: bool = False, features: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if pairs:
        train = [(user, item) for user, items in TRAIN.items() for item in sorted(items)]
        np.save(folder / "train.npy", np.array(train, dtype=np.int64))
    else:
        np.save(folder / "user_item_train_dict.npy", TRAIN)
    known = {user: TRAIN[user] | EXTRA_KNOWN[user] for user in TRAIN}
    np.save(folder / "user_item_all_dict.npy", known)
    np.save(folder / "val_full.npy", object_rows([[0, 8], [1], [2, 6]]))
    np.save(folder / "val_warm.npy", object_rows([[0], [1], [2, 6]]))
    np.save(folder / "val_cold.npy", object_rows([[0, 8], [1], [2]]))
    np.save(folder / "test_full.npy", object_rows([[1, 9], [3, 7]]))
    np.save(folder / "test_warm.npy", np.array([[3, 7]], dtype=np.int64))  # a plain 2-D form
    np.save(folder / "test_cold.npy", object_rows([[1, 9], [3]]))
    np.save(folder / "warm_set.npy", np.array([4, 5, 6, 7], dtype=np.int64))
    np.save(folder / "cold_set.npy", np.array([8, 9], dtype=np.int64))
    if features:
        np.save(folder / "feat_v.npy", np.arange(18, dtype=np.float64).reshape(6, 3))
        torch.save(torch.ones(6, 2), folder / "feat_a.pt")
        torch.save(torch.tensor([[4, 4, 5, 9], [0, 2, 1, 3]]), folder / "feat_t.pt")
    return folder


def dense(matrix) -> np.ndarray:
    return np.asarray(matrix.todense(), dtype=int)


def pairs_of(matrix) -> list[tuple[int, int]]:
    """(user, internal item) pairs of a CSR matrix, row by row."""
    users, items = matrix.nonzero()
    return [(int(user), int(item)) for user, item in zip(users, items, strict=True)]


def assert_same(left: Dataset, right: Dataset) -> None:
    assert (left.name, left.num_users, left.num_items) == (
        right.name,
        right.num_users,
        right.num_items,
    )
    for a, b in [(left.train, right.train), (left.known, right.known)]:
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape and (a != b).nnz == 0
    np.testing.assert_array_equal(left.cold_items, right.cold_items)
    assert {s: list(g) for s, g in left.splits.items()} == {
        s: list(g) for s, g in right.splits.items()
    }
    for split, groups in left.splits.items():
        for group, matrix in groups.items():
            assert (matrix != right.splits[split][group]).nnz == 0
    assert list(left.features) == list(right.features)
    for name, feature in left.features.items():
        other = right.features[name]
        if isinstance(feature, WordIds):
            assert feature.num_words == other.num_words
            assert torch.equal(feature.item_index, other.item_index)
            assert torch.equal(feature.word_index, other.word_index)
        else:
            assert feature.dtype == other.dtype and torch.equal(feature, other)
    for a, b in [(left.user_ids, right.user_ids), (left.item_ids, right.item_ids)]:
        np.testing.assert_array_equal(a, b)
    assert left.notes == right.notes and left.item_text == right.item_text


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_folder(tmp_path / "tiny")


def test_dict_form_counts_ids_and_matrices(folder: Path) -> None:
    dataset = clcrec_layout.load(folder, trust_pickle=True)
    assert clcrec_layout.detect(folder)
    assert (dataset.name, dataset.num_users, dataset.num_items) == ("tiny", 4, 6)
    expected_train = np.zeros((4, 6), dtype=int)
    for user, items in TRAIN.items():
        expected_train[user, [item - 4 for item in items]] = 1
    np.testing.assert_array_equal(dense(dataset.train), expected_train)
    np.testing.assert_array_equal(dataset.user_ids, [0, 1, 2, 3])
    np.testing.assert_array_equal(dataset.item_ids, [4, 5, 6, 7, 8, 9])
    np.testing.assert_array_equal(dataset.cold_items, [4, 5])
    known = dense(dataset.known)
    assert known.sum() == 7 + 4 and known[0, 4] == known[1, 5] == known[2, 2] == known[3, 3] == 1
    assert {split: sorted(groups) for split, groups in dataset.splits.items()} == {
        "val": ["all", "cold", "warm"],
        "test": ["all", "cold", "warm"],
    }
    assert pairs_of(dataset.splits["val"]["all"]) == [(0, 4), (2, 2)]  # file (0, 8), (2, 6)
    assert pairs_of(dataset.splits["val"]["cold"]) == [(0, 4)]
    assert pairs_of(dataset.splits["test"]["warm"]) == [(3, 3)]  # file (3, 7)
    assert pairs_of(dataset.splits["test"]["cold"]) == [(1, 5)]  # file (1, 9)


SEED_KNOWN = {0: {9}, 2: {8}}  # the seed system's user_item_dict.npy: other extra items


@pytest.mark.parametrize(
    ("files", "extra", "note"),
    [
        (
            ("user_item_all_dict.npy",),
            EXTRA_KNOWN,
            "negatives avoid user_item_all_dict.npy and the training interactions",
        ),
        (("user_item_dict.npy",), SEED_KNOWN, "negatives avoid user_item_dict.npy and the"),
        (
            ("user_item_dict.npy", "user_item_all_dict.npy"),
            SEED_KNOWN,
            "user_item_all_dict.npy is present too and not read",
        ),
        ((), {}, "negatives avoid the training interactions only"),
    ],
    ids=["original", "seed", "both", "neither"],
)
def test_negative_exclusion_file_is_chosen_and_noted(tmp_path: Path, files, extra, note) -> None:
    folder = write_folder(tmp_path / "tiny")
    (folder / "user_item_all_dict.npy").unlink()
    if "user_item_all_dict.npy" in files:
        np.save(folder / "user_item_all_dict.npy", {u: TRAIN[u] | EXTRA_KNOWN[u] for u in TRAIN})
    if "user_item_dict.npy" in files:
        np.save(
            folder / "user_item_dict.npy", {u: TRAIN[u] | SEED_KNOWN.get(u, set()) for u in TRAIN}
        )
    dataset = clcrec_layout.load(folder, trust_pickle=True)
    assert note in dataset.notes[-1]
    expected = {(user, item - 4) for user, items in TRAIN.items() for item in items}
    expected |= {(user, item - 4) for user, items in extra.items() for item in items}
    exclusion = dataset.exclusion_matrix()  # what the negative sampler avoids
    assert set(pairs_of(exclusion)) == expected
    assert (dataset.known is None) == (not files)


def test_pairs_form_equals_dict_form(tmp_path: Path) -> None:
    from_dict = clcrec_layout.load(write_folder(tmp_path / "tiny"), trust_pickle=True)
    from_pairs = clcrec_layout.load(
        write_folder(tmp_path / "b" / "tiny", pairs=True), trust_pickle=True
    )
    assert_same(from_dict, from_pairs)


def test_features_dense_word_ids_and_selection(folder: Path) -> None:
    dataset = clcrec_layout.load(folder, trust_pickle=True)
    assert list(dataset.features) == ["visual", "acoustic", "text"]
    visual = dataset.features["visual"]
    assert visual.dtype == torch.float32 and visual.shape == (6, 3) and visual[5, 2] == 17
    text = dataset.features["text"]
    assert isinstance(text, WordIds) and text.num_words == 4
    assert text.item_index.tolist() == [0, 0, 1, 5]  # file ids 4, 4, 5, 9 minus 4 users
    only = clcrec_layout.load(folder, trust_pickle=True, features=["acoustic"])
    assert list(only.features) == ["acoustic"]
    with pytest.raises(DataError, match="unknown feature 'genre'"):
        clcrec_layout.load(folder, trust_pickle=True, features=["genre"])


def test_word_ids_without_offset(folder: Path) -> None:
    torch.save(torch.tensor([[0, 3, 5], [1, 1, 0]]), folder / "feat_t.pt")
    text = clcrec_layout.load(folder, trust_pickle=True).features["text"]
    assert text.item_index.tolist() == [0, 3, 5] and text.num_words == 2


def test_missing_feature_files_warn_and_asking_for_one_fails(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "tiny", features=False)
    with pytest.warns(UserWarning, match="no feature file for visual"):
        dataset = clcrec_layout.load(folder, trust_pickle=True)
    assert dataset.features == {} and "no feature file" in dataset.notes[0]
    with pytest.raises(DataError, match="feat_v.npy/.pt is missing"):
        clcrec_layout.load(folder, trust_pickle=True, features=["visual"])


def test_empty_groups_are_left_out(folder: Path) -> None:
    np.save(folder / "val_cold.npy", object_rows([[0], [1], [2]]))
    np.save(folder / "val_full.npy", object_rows([[2, 6]]))
    dataset = clcrec_layout.load(folder, trust_pickle=True)
    assert sorted(dataset.splits["val"]) == ["all", "warm"]


def test_cold_items_default_to_untrained_items(folder: Path) -> None:
    (folder / "cold_set.npy").unlink()
    (folder / "warm_set.npy").unlink()
    np.testing.assert_array_equal(clcrec_layout.load(folder, trust_pickle=True).cold_items, [4, 5])


def test_pickles_are_refused_without_trust(folder: Path) -> None:
    with pytest.raises(DataError, match=r"is a pickle, which can execute code.*--trust-pickle"):
        clcrec_layout.load(folder)


def test_plain_numeric_files_load_without_trust(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "tiny", pairs=True)
    for path in folder.glob("*.npy"):  # drop the pickled dict and split rows
        if path.name.startswith(("user_item", "val_", "test_")):
            path.unlink()
    dataset = clcrec_layout.load(folder)
    assert dataset.num_train == 7 and dataset.splits == {} and dataset.known is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda f: np.save(f / "cold_set.npy", np.array([7, 8, 9])),
            "in both warm_set.npy and cold_set.npy",
        ),
        (
            lambda f: np.save(f / "feat_v.npy", np.ones((5, 3))),
            r"feat_v.npy: shape \(5, 3\).*6 items",
        ),
        (lambda f: np.save(f / "feat_v.npy", np.full((6, 3), np.nan)), "feat_v.npy: contains NaN"),
        (lambda f: np.save(f / "train.npy", np.array([[-1, 4], [0, 5]])), "negative user id -1"),
        (lambda f: np.save(f / "train.npy", np.array([[0, 2], [1, 5]])), "item id 2 is below 4"),
        (
            lambda f: np.save(f / "train.npy", np.ones((3, 3), dtype=int)),
            r"expected \[n, 2\] pairs",
        ),
        (lambda f: torch.save(torch.tensor([[4, 12], [0, 1]]), f / "feat_t.pt"), "out of range"),
        (
            lambda f: torch.save({"not": "a tensor"}, f / "feat_a.pt"),
            "feat_a.pt: expected a numeric matrix",
        ),
    ],
)
def test_inconsistent_folders_raise_one_clear_error(folder: Path, change, message: str) -> None:
    change(folder)
    with pytest.raises(DataError, match=message):
        clcrec_layout.load(folder, trust_pickle=True)


def test_missing_directory_or_training_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such dataset directory"):
        clcrec_layout.load(tmp_path / "absent")
    np.save(tmp_path / "warm_set.npy", np.array([1]))
    assert not clcrec_layout.detect(tmp_path)
    with pytest.raises(DataError, match="no training file"):
        clcrec_layout.load(tmp_path)
    with pytest.raises(DataError, match="no options"):
        clcrec_layout.load(tmp_path, num_users=3)


def test_convert_round_trip_needs_no_pickle(folder: Path, tmp_path: Path) -> None:
    original = clcrec_layout.load(folder, trust_pickle=True)
    with pytest.raises(DataError, match="pickle"):
        clcrec_layout.convert(folder, tmp_path / "safe", trust_pickle=False)
    assert not (tmp_path / "safe").exists()
    target = clcrec_layout.convert(folder, tmp_path / "safe", trust_pickle=True)
    assert sorted(path.name for path in target.iterdir()) == ["arrays.npz", "coldbrew.json"]
    assert clcrec_layout.detect(target)
    converted = clcrec_layout.load(target)  # no trust_pickle needed
    assert_same(original, converted)
    with np.load(target / "arrays.npz", allow_pickle=False) as arrays:
        assert all(arrays[key].dtype != object for key in arrays.files)
    selected = clcrec_layout.load(target, features=["text"])
    assert list(selected.features) == ["text"]
    with pytest.raises(DataError, match="unknown feature 'genre'"):
        clcrec_layout.load(target, features=["genre"])


def test_damaged_converted_folders_raise(folder: Path, tmp_path: Path) -> None:
    target = clcrec_layout.convert(folder, tmp_path / "safe", trust_pickle=True)
    manifest = (target / "coldbrew.json").read_text()
    (target / "coldbrew.json").write_text(manifest.replace('"num_users"', '"users"'))
    with pytest.raises(DataError, match="incomplete converted dataset"):
        clcrec_layout.load(target)
    (target / "coldbrew.json").write_text('{"format": "something-else"}')
    with pytest.raises(DataError, match="not a coldbrew-dataset manifest"):
        clcrec_layout.load(target)
    (target / "arrays.npz").write_bytes(b"garbage")
    with pytest.raises(DataError, match="cannot read the converted dataset"):
        clcrec_layout.load(target)


def test_convert_refuses_a_non_empty_destination(folder: Path, tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(DataError, match="not empty"):
        clcrec_layout.convert(folder, tmp_path / "taken", trust_pickle=True)
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"
    (tmp_path / "empty").mkdir()
    clcrec_layout.convert(folder, tmp_path / "empty", trust_pickle=True)
    assert not [path for path in tmp_path.iterdir() if path.name.endswith(".partial")]


def test_infinite_ids_are_refused_not_cast(tmp_path: Path) -> None:
    write_folder(tmp_path / "data", pairs=True)
    np.save(tmp_path / "data" / "train.npy", np.array([[0.0, 4.0], [1.0, np.inf]]))
    with pytest.raises(DataError, match="expected integer ids, found dtype float64"):
        clcrec_layout.load(tmp_path / "data", trust_pickle=True)


def test_convert_into_a_read_only_place_is_one_line(
    folder: Path, tmp_path: Path, monkeypatch, capsys
):
    import os

    from coldbrew.cli import main

    real_access = os.access
    locked = tmp_path / "locked"
    locked.mkdir()
    # the tests may run as root, whom no mode keeps out: the folder says it is read-only
    monkeypatch.setattr(
        os, "access", lambda path, mode: Path(path) != locked and real_access(path, mode)
    )
    monkeypatch.setattr(clcrec_layout, "load", lambda *a, **k: pytest.fail("loaded first"))
    argv = ["data", "convert", "--trust-pickle", str(folder), str(locked / "deep" / "safe")]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert (
        error
        == f"coldbrew: error: cannot write {locked / 'deep' / 'safe'}: {locked} is not a folder this user may write to\n"
    )
    # the write itself refused (a read-only file system): one line too, nothing left behind
    monkeypatch.undo()

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(locked))

    monkeypatch.setattr("tempfile.mkdtemp", refuse)
    assert main(["data", "convert", "--trust-pickle", str(folder), str(locked / "safe")]) == 1
    error = capsys.readouterr().err
    assert (
        error.startswith(f"coldbrew: error: Permission denied: {locked}") and error.count("\n") == 1
    )
    assert list(locked.iterdir()) == []


def test_shared_clcrec_movielens(tmp_path: Path) -> None:
    path = shared_path("clcrec-movielens")
    with pytest.raises(DataError, match="--trust-pickle"):
        clcrec_layout.load(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the features were never published
        dataset = clcrec_layout.load(path, trust_pickle=True)
    assert (dataset.num_users, dataset.num_items) == (55_485, 5_986)
    assert dataset.num_train == 922_007 and len(dataset.cold_items) == 867
    np.testing.assert_array_equal(dataset.cold_items, np.arange(5_119, 5_986))  # warm first
    for split in ("val", "test"):
        assert sorted(dataset.splits[split]) == ["all", "cold", "warm"]
    assert dataset.splits["val"]["all"].nnz == 149_366
    converted = clcrec_layout.load(clcrec_layout.save(dataset, tmp_path / "safe"))
    assert_same(dataset, converted)

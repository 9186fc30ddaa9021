"""``coldbrew recommend`` and ``coldbrew.load_run(R).recommend``: a user's items, a new item's
users, from CLCRec and the zoo (a feature vector) and the LM recommender (text)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import coldbrew
from coldbrew.cli import main
from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.evaluation.topk import tie_keys, tie_shifts
from coldbrew.training.run import train
from teacher_support import with_svd_teacher  # noqa: F401  (the fixture used below)


@pytest.fixture(scope="module")
def clcrec_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("runs") / "clcrec"
    config = make_config({"data": "synthetic:small", "epochs": 1, "num_neg": 8, "quiet": True})
    train(config, run)
    return run


def test_a_users_items_leave_out_training_items_and_follow_the_scores(clcrec_run):
    loaded = coldbrew.load_run(clcrec_run)
    rows = loaded.recommend(user=3, k=10)
    assert [row["rank"] for row in rows] == list(range(1, 11))
    seen = set(loaded.dataset.train[3].indices.tolist())
    assert not seen & {row["item"] for row in rows}
    scores = loaded.model.score_users(torch.tensor([3]))[0]
    scores[list(seen)] = -torch.inf
    assert [row["item"] for row in rows] == torch.topk(scores, 10).indices.tolist()
    cold = set(loaded.dataset.cold_items.tolist())
    assert all(row["cold"] == (row["item"] in cold) for row in rows)


def test_clcrec_ranks_users_for_a_new_item_from_its_feature_vector(clcrec_run, tmp_path, capsys):
    loaded = coldbrew.load_run(clcrec_run)
    item = int(loaded.dataset.cold_items[0])
    vector = loaded.dataset.features["content"][item].numpy()  # an existing cold item's content
    rows = loaded.recommend(item_features=vector, k=5)
    # the same users, in the same order, as the cold item's own column of scores
    column = loaded.model.user_embeddings() @ loaded.model.item_embeddings()[item]
    assert [row["user"] for row in rows] == torch.topk(column, 5).indices.tolist()
    np.save(tmp_path / "item.npy", vector)
    argv = ["recommend", "--run", str(clcrec_run), "--item-vector", str(tmp_path / "item.npy")]
    assert main([*argv, "--k", "5", "--json"]) == 0
    assert [row["user"] for row in json.loads(capsys.readouterr().out)] == [r["user"] for r in rows]


@pytest.mark.usefixtures("with_svd_teacher")
@pytest.mark.parametrize("model", ["deepmusic", "dropoutnet", "heater"])
def test_a_zoo_run_ranks_users_for_a_new_item_as_for_the_cold_item_of_that_content(
    model, tmp_path, capsys
):
    settings = {"data": "synthetic:small", "epochs": 1, "batch_size": 512, "quiet": True}
    train(make_config({**settings, "model": model, "backbone_dim": 8}), tmp_path / "run")
    loaded = coldbrew.load_run(tmp_path / "run")  # rebuilt without its backbone
    item = int(loaded.dataset.cold_items[0])
    vector = loaded.dataset.features["content"][item].numpy()
    rows = loaded.recommend(item_features=vector, k=5)
    column = loaded.model.score_users(torch.arange(loaded.dataset.num_users))[:, item]
    assert [row["user"] for row in rows] == torch.topk(column, 5).indices.tolist()
    # one vector against the whole score matrix: another float32 summation order (a matrix-vector
    # against a matrix-matrix product), so scores near 0 agree to float32's rounding, not to 1e-6
    # of themselves (seen on an AVX-512 machine: 9.5e-9 apart at -0.00065)
    expected = torch.topk(column, 5).values.tolist()
    assert [row["score"] for row in rows] == pytest.approx(expected, rel=1e-5, abs=1e-7)
    np.save(tmp_path / "item.npy", vector)
    argv = [
        "recommend",
        "--run",
        str(tmp_path / "run"),
        "--item-vector",
        str(tmp_path / "item.npy"),
    ]
    assert main([*argv, "--k", "5", "--json"]) == 0
    assert [row["user"] for row in json.loads(capsys.readouterr().out)] == [r["user"] for r in rows]
    assert main([*argv[:3], "--item-text", "a film"]) == 2
    assert "from its feature vector (--item-vector), not from text" in capsys.readouterr().err


def test_refusals(clcrec_run, capsys):
    loaded = coldbrew.load_run(clcrec_run)
    with pytest.raises(ColdbrewError, match="from its feature vector"):
        loaded.recommend(item_text="a film", k=3)
    with pytest.raises(ColdbrewError, match="user 99999 is not in the data"):
        loaded.recommend(user=99999)
    with pytest.raises(ColdbrewError, match="has 5 columns; this run reads 32"):
        loaded.recommend(item_features=np.ones(5))
    with pytest.raises(ColdbrewError, match="either a user or a new item"):
        loaded.recommend(user=1, item_text="x")
    with pytest.raises(ColdbrewError, match="either a user or a new item"):
        loaded.recommend(k=3)
    with pytest.raises(ColdbrewError, match="not from text"):  # CLCRec reads no text
        loaded.recommend(item_text="a film", item_features=np.ones(32), k=3)
    assert main(["recommend", "--run", str(clcrec_run), "--user", "1", "--item-text", "x"]) == 2
    assert "either a user or a new item" in capsys.readouterr().err
    assert main(["recommend", "--run", str(clcrec_run), "--user", "1", "--k", "0"]) == 2
    assert "k must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    "vector, message",
    [
        (np.full(32, np.nan, dtype=np.float32), "32 NaN or infinite value\\(s\\) of 32"),
        (np.r_[np.ones(31), np.inf], "1 NaN or infinite value"),
        (np.array(["a", "b"]), "must be numbers, not <U1 values"),
        (np.ones((2, 19), dtype=np.float32), "of shape \\(2, 19\\): give one item's vector"),
        (np.ones((2, 32), dtype=np.float32), "of shape \\(2, 32\\)"),
    ],
)
def test_item_vectors_that_cannot_be_scored_are_refused(clcrec_run, vector, message):
    loaded = coldbrew.load_run(clcrec_run)
    with pytest.raises(ColdbrewError, match=message):
        loaded.recommend(item_features=vector, k=3)


def test_bad_item_vector_files_are_one_line_errors(clcrec_run, tmp_path, capsys):
    np.save(tmp_path / "text.npy", np.array(["a", "b"]))
    np.save(tmp_path / "nan.npy", np.full(32, np.nan, dtype=np.float32))
    for name in ("text.npy", "nan.npy"):
        argv = ["recommend", "--run", str(clcrec_run), "--item-vector", str(tmp_path / name)]
        assert main(argv) == 2
        error = capsys.readouterr().err
        assert error.startswith("coldbrew: error: item features") and error.count("\n") == 1


def test_an_all_zero_item_vector_and_a_user_without_history_say_so(clcrec_run):
    loaded = coldbrew.load_run(clcrec_run)
    with pytest.warns(UserWarning, match="all zero"):
        assert len(loaded.recommend(item_features=np.zeros(32), k=3)) == 3
    dataset = loaded.dataset
    counts = np.diff(dataset.train.indptr)
    without = np.flatnonzero(counts == 0)
    if len(without) == 0:  # the synthetic data gives every user history: take one's away
        dataset.train.indices = dataset.train.indices[counts[0] :]
        dataset.train.indptr = np.r_[0, dataset.train.indptr[1:] - counts[0]]
        without = [0]
    with pytest.warns(UserWarning, match="no training interactions, so this list is not personal"):
        loaded.recommend(user=int(without[0]), k=3)


def test_equal_scores_are_listed_in_tie_key_order_whatever_k(clcrec_run, monkeypatch):
    loaded = coldbrew.load_run(clcrec_run)
    flat = torch.zeros(1, loaded.dataset.num_items)
    flat[0, 50] = 1.0  # one item above, every other item tied
    monkeypatch.setattr(loaded.model, "score_users", lambda users: flat.clone())
    seen = set(loaded.dataset.train[3].indices.tolist())
    num_users, num_items = loaded.dataset.num_users, loaded.dataset.num_items
    keys, shift = tie_keys(num_items), tie_shifts(num_users, num_items)[3]
    unseen = [item for item in range(num_items) if item not in seen and item != 50]
    unseen.sort(key=lambda item: (keys[item] + shift) % num_items)  # the evaluator's key for 3
    assert unseen[:10] != sorted(unseen)[:10]
    for k in (3, 10, 40):
        items = [row["item"] for row in loaded.recommend(user=3, k=k)]
        assert items == ([50] if 50 not in seen else []) + unseen[: k - (50 not in seen)]


def test_a_string_user_id_and_empty_text_are_refused(clcrec_run):
    loaded = coldbrew.load_run(clcrec_run)
    with pytest.raises(ColdbrewError, match="user must be an integer id .*not '1'"):
        loaded.recommend(user="1")
    with pytest.raises(ColdbrewError, match="k must be at least 1 \\(an integer\\)"):
        loaded.recommend(user=1, k=2.5)
    with pytest.raises(ColdbrewError, match="item text is empty"):
        loaded.recommend(item_text="  ")


def test_a_multi_seed_run_names_a_seed_to_recommend_from(tmp_path, capsys):
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "seeds.json").write_text('{"seeds": [1, 2]}')  # as train --seeds 1,2
    assert main(["recommend", "--run", str(tmp_path / "seeds"), "--user", "1"]) == 2
    error = capsys.readouterr().err
    assert "multi-seed run (seeds 1, 2)" in error
    assert f"--run {tmp_path / 'seeds' / 'seed-1'}" in error


def test_the_lm_recommender_ranks_users_for_a_new_items_text(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from lm_support import ITEM_TEXTS, tiny_dataset, tiny_gpt2

    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path / "cache"))
    folder = tiny_gpt2(tmp_path / "gpt2")
    dataset = tiny_dataset()
    settings = {"model": "lm", "backbone": str(folder), "dim": 8, "hidden": 16, "epochs": 1}
    settings["num_neg"] = 4  # the tiny data has 9 warm items
    config = make_config({**settings, "data": "synthetic", "quiet": True, "batch_size": 8})
    train(config, tmp_path / "run", dataset=dataset)
    import coldbrew.training.run_evaluation as evaluation

    monkeypatch.setattr(evaluation, "load_run_dataset", lambda config: dataset)
    loaded = coldbrew.load_run(tmp_path / "run")
    cold = int(dataset.cold_items[0])
    rows = loaded.recommend(item_text=ITEM_TEXTS[cold], k=3)
    # a cold item is scored from its text alone: its text as a new item gets its column
    column = loaded.model.user_embeddings() @ loaded.model.item_embeddings()[cold]
    assert [row["user"] for row in rows] == torch.topk(column, 3).indices.tolist()


def test_a_rotated_key_order_is_the_key_order_of_the_rotated_keys():
    # the served catalogue rotates one precomputed order instead of sorting per request
    import torch

    from coldbrew.evaluation.topk import tie_keys
    from coldbrew.recommend import key_order

    count = 11
    for shift in range(count):
        start = (count - shift) % count
        expected = torch.from_numpy((tie_keys(count) + shift) % count).argsort()
        assert torch.equal(torch.roll(key_order(count), -start), expected)
        assert torch.equal(key_order(count, shift), expected)
    assert key_order(3, extra=2)[3:].tolist() == [3, 4]  # added items after the catalogue


def test_a_new_item_by_its_column_names_and_a_wrong_width_named_by_its_columns(
    clcrec_run, tmp_path, capsys
):
    loaded = coldbrew.load_run(clcrec_run)
    with pytest.raises(ColdbrewError, match="columns without names \\(content\\)"):
        loaded.recommend(item_columns=["c3"], k=3)
    names = [f"c{column}" for column in range(32)]
    loaded.dataset.feature_columns = {"content": names}  # as a loader names genre flags
    vector = np.zeros(32, dtype=np.float32)
    vector[[3, 7]] = 1.0
    assert loaded.recommend(item_columns=["C3", "c7"], k=5) == loaded.recommend(
        item_features=vector, k=5
    )
    with pytest.raises(ColdbrewError, match="no column 'c99' \\(did you mean c9\\?\\)"):
        loaded.recommend(item_columns=["c99"], k=3)
    with pytest.raises(ColdbrewError, match="has 31 columns; this run reads 32: content: 32 col"):
        loaded.recommend(item_features=np.ones(31), k=3)
    config = (clcrec_run / "config.yaml").read_text()
    assert "# a new item's vector (recommend --item-vector): content: 32 columns" in config
    argv = ["recommend", "--run", str(clcrec_run), "--item-genres", "Action"]
    assert main(argv) == 2
    assert "columns without names" in capsys.readouterr().err


def test_a_text_file_named_npy_is_said_to_be_no_npy_array(clcrec_run, tmp_path, capsys):
    (tmp_path / "item.npy").write_text("0,1,0\n")
    argv = ["recommend", "--run", str(clcrec_run), "--item-vector", str(tmp_path / "item.npy")]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "not a .npy array (write one with numpy.save)" in error and "pickle" not in error

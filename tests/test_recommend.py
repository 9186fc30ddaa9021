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


def plain_lift(model, column: torch.Tensor) -> torch.Tensor:
    """The rule by hand: every user's score of every catalogue item, its mean and (population)
    standard deviation; a new item's lift is its ``(score - mean) / std``."""
    matrix = model.user_embeddings().double() @ model.item_embeddings().double().T
    return (column.double() - matrix.mean(1)) / matrix.std(1, correction=0)


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
    # the same users, in the same order, as the cold item's own column of scores, lifted
    column = loaded.model.user_embeddings() @ loaded.model.item_embeddings()[item]
    lift = plain_lift(loaded.model, column)
    assert [row["user"] for row in rows] == torch.topk(lift, 5).indices.tolist()
    assert [row["lift"] for row in rows] == pytest.approx(torch.topk(lift, 5).values.tolist())
    assert [row["score"] for row in rows] == pytest.approx(
        column[[r["user"] for r in rows]].tolist()
    )
    np.save(tmp_path / "item.npy", vector)
    argv = ["recommend", "--run", str(clcrec_run), "--item-vector", str(tmp_path / "item.npy")]
    assert main([*argv, "--k", "5", "--json"]) == 0
    assert [row["user"] for row in json.loads(capsys.readouterr().out)] == [r["user"] for r in rows]


@pytest.mark.usefixtures("with_svd_teacher")
@pytest.mark.parametrize(
    "model", ["deepmusic", "dropoutnet", "heater", "aldi", "gar", "ridge", "knn"]
)
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
    top = torch.topk(plain_lift(loaded.model, column), 5).indices
    assert [row["user"] for row in rows] == top.tolist()
    # one vector against the whole score matrix: another float32 summation order (a matrix-vector
    # against a matrix-matrix product), so scores near 0 agree to float32's rounding, not to 1e-6
    # of themselves (seen on an AVX-512 machine: 9.5e-9 apart at -0.00065)
    expected = column[top].tolist()
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
    lift = plain_lift(loaded.model, column)
    assert [row["user"] for row in rows] == torch.topk(lift, 3).indices.tolist()


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


class KnownVectors(torch.nn.Module):
    """Users, catalogue items and a new item's vector (its features as they are) given."""

    def __init__(self, users, items):
        super().__init__()
        self.users, self.items = torch.tensor(users), torch.tensor(items)

    def user_embeddings(self):
        return self.users

    def item_embeddings(self):
        return self.items

    def encode_items(self, *, texts=None, features=None):
        return features.float()


def known_run(users, items, model="clcrec"):
    from types import SimpleNamespace

    from coldbrew.recommend import LoadedRun

    dataset = SimpleNamespace(user_ids=None, features={}, item_text=None, text_fields=None)
    dataset.feature_layout = list
    config = SimpleNamespace(model=model)
    return LoadedRun(None, config, dataset, KnownVectors(users, items), "cpu")


# users 0 and 1 point the same way as users 2 and 3 but are ten times longer: the heavy ones
USERS = [[10.0, 0.0], [0.0, 10.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
ITEMS = [[1.0, 0.0], [0.0, 1.0], [3.0, 1.0], [0.0, 2.0]]


def test_a_new_items_users_are_ranked_by_its_lift_as_computed_by_hand():
    from coldbrew.new_item import UserBaseline

    # item mean m = (1, 1); centred items (0,-1), (-1,0), (2,0), (-1,1): covariance
    # C = [[6, -1], [-1, 2]] / 4. User 4 = (1, 1): mean 2, variance (6 - 2 + 2) / 4 = 1.5.
    baseline = UserBaseline.of(torch.tensor(USERS), torch.tensor(ITEMS))
    assert baseline.mean.tolist() == pytest.approx([10, 10, 1, 1, 2])
    spreads = [10 * 1.5**0.5, 10 * 0.5**0.5, 1.5**0.5, 0.5**0.5, 1.5**0.5]
    assert baseline.std.tolist() == pytest.approx(spreads)
    rows = known_run(USERS, ITEMS).recommend(item_features=np.array([0.0, 3.0]), k=5)
    # scores 0, 30, 0, 3, 3; lifts (s - mean) / std: -0.816, 2.828, -0.816, 2.828, 0.816.
    # A user ten times longer has the same lift: 1 ties with 3, 0 with 2 (up to rounding)
    users = [row["user"] for row in rows]
    assert set(users[:2]) == {1, 3} and users[2] == 4 and set(users[3:]) == {0, 2}
    lifts = [2**1.5, 2**1.5, (2 / 3) ** 0.5, -((2 / 3) ** 0.5), -((2 / 3) ** 0.5)]
    assert [row["lift"] for row in rows] == pytest.approx(lifts, rel=1e-5)
    scores = {0: 0, 1: 30, 2: 0, 3: 3, 4: 3}
    assert [row["score"] for row in rows] == pytest.approx([scores[user] for user in users])


def test_the_heaviest_users_do_not_top_every_new_items_list():
    run = known_run(USERS, ITEMS)
    tops = {
        name: [row["user"] for row in run.recommend(item_features=np.array(vector), k=2)]
        for name, vector in {"across": [1.0, 0.0], "up": [0.0, 1.0], "bias": [0.5, 0.5]}.items()
    }
    # raw scores put the long users 0 and 1 first for every one of these items
    assert {user for top in tops.values() for user in top[:1]} != {0, 1}
    assert set(tops["across"]) != set(tops["up"])  # the model tells these items apart
    assert tops["across"][0] in (0, 2) and tops["up"][0] in (1, 3)
    # the typical item (the catalogue's mean) stands out for nobody: every lift is 0
    with pytest.warns(UserWarning, match="stands out for no user"):
        flat = run.recommend(item_features=np.array([1.0, 1.0]), k=5)
    assert [row["lift"] for row in flat] == pytest.approx([0.0] * 5, abs=1e-6)


def test_a_new_item_scored_alike_for_every_user_is_warned_of():
    with pytest.warns(UserWarning, match=r"the item scores 0\.0000 for every user"):
        rows = known_run(USERS, ITEMS).recommend(item_features=np.array([0.0, 0.0]), k=5)
    assert len(rows) == 5  # listed, in tie order


def test_a_users_for_item_list_from_a_model_that_is_not_personalised_is_refused(capsys, tmp_path):
    settings = {"data": "synthetic:small", "model": "popularity", "quiet": True}
    train(make_config(settings), tmp_path / "run")
    np.save(tmp_path / "item.npy", np.ones(32, np.float32))
    argv = ["recommend", "--run", str(tmp_path / "run")]
    assert main([*argv, "--item-vector", str(tmp_path / "item.npy")]) == 2
    error = capsys.readouterr().err
    assert "popularity is not personalised: it gives a new item one score" in error
    assert error.count("\n") == 1
    assert main([*argv, "--user", "3", "--k", "2"]) == 0  # its items are still listed


def test_a_users_items_show_the_title_columns_plain_value_not_the_labelled_text(tmp_path, capsys):
    import pandas as pd

    events = pd.DataFrame(
        {"user": ["a", "a", "b", "b", "c", "c"], "item": ["d1", "d2", "d2", "d3", "d3", "d4"]}
    )
    names = ["Put a human face on it", "Heat: the remake", "", "Dr. No"]
    items = pd.DataFrame(
        {"item": ["d1", "d2", "d3", "d4"], "doc_full_name": names, "pages": [10, 20, 30, 40]}
    )
    items["summary"] = ["About faces.", "About heat.", "About nothing.", "About spies."]
    (tmp_path / "data").mkdir()
    events.to_csv(tmp_path / "data" / "events.csv", index=False)
    items.to_csv(tmp_path / "data" / "items.csv", index=False)
    (tmp_path / "data" / "coldbrew.yaml").write_text(
        "interactions: events.csv\nuser: user\nitem: item\nitems: items.csv\n"
        "text: [summary, doc_full_name]\nnumeric: [pages]\n"
    )
    data = coldbrew.Dataset.from_frames(
        events, items, text=["summary", "doc_full_name"], text_vectors=False
    )
    assert data.item_text[0] == "Summary: About faces. Doc full name: Put a human face on it."
    assert data.item_titles == ["About faces.", "About heat.", "About nothing.", "About spies."]
    named = items.rename(columns={"doc_full_name": "Title"})
    titled = coldbrew.Dataset.from_frames(
        events, named, text=["summary", "Title"], text_vectors=False
    )
    assert titled.item_titles == names  # the column named title, wherever it is
    run = tmp_path / "run"
    flags = ["--data", str(tmp_path / "data"), "--features", "numeric", "--quiet"]
    assert main(["train", *flags, "--model", "popularity", "--out", str(run)]) == 0
    assert main(["recommend", "--run", str(run), "--user", "a", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["item"]: row["title"] for row in rows} == {
        "d3": "About nothing.",
        "d4": "About spies.",
    }
    assert rows[0]["text"].startswith("Summary: ")  # the whole labelled text is still there
    assert main(["recommend", "--run", str(run), "--user", "a"]) == 0
    shown = capsys.readouterr().out
    assert "About spies." in shown and "Summary:" not in shown
    pytest.importorskip("safetensors")
    from coldbrew.serving.catalogue import load_catalogue

    assert main(["export", "--run", str(run), "--out", str(tmp_path / "export")]) == 0
    for source in (run, tmp_path / "export"):  # serve shows the same titles, from a run or export
        served = load_catalogue(source).items_for("a", 2)
        assert {row["item"]: row["title"] for row in served} == {
            "d3": "About nothing.",
            "d4": "About spies.",
        }

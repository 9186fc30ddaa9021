"""A new item from its text, on runs whose data has a sentence-encoded ``text`` block beside
genre flags (CLCRec and the zoo): ``coldbrew recommend --item-text`` scores it as ``coldbrew
serve`` does, and both name the blocks a text alone lacks."""

from __future__ import annotations

import json

import pytest

from coldbrew.cli import main
from serving_support import running_server, tiny_films, tiny_text_run
from teacher_support import with_svd_teacher  # noqa: F401  (the fixture used below)

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("transformers")

TEXT = "Film 13 (1999). Genres: Action."


@pytest.fixture(scope="module")
def films(tmp_path_factory):
    """``(data, encoder)`` with a private COLDBREW_CACHE kept for the module's tests."""
    from sentence_support import tiny_sentence_folder

    root = tmp_path_factory.mktemp("films")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLDBREW_CACHE", str(root / "cache"))
        yield tiny_films(root / "data"), tiny_sentence_folder(root / "encoder")


@pytest.fixture(scope="module")
def run(films, tmp_path_factory):
    return tiny_text_run(tmp_path_factory.mktemp("runs") / "clcrec", *films)


@pytest.fixture(scope="module")
def served(run):
    with running_server(run) as (url, holder), httpx.Client(base_url=url, timeout=30) as client:
        yield client, holder


def cli_users(capsys, run, *options) -> list[dict]:
    capsys.readouterr()
    argv = ["recommend", "--run", str(run), "--item-text", TEXT, *options, "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def assert_same(cli: list[dict], served: list[dict]) -> None:
    assert [row["user"] for row in cli] == [row["user"] for row in served]
    assert [row["score"] for row in cli] == pytest.approx(
        [row["score"] for row in served], abs=1e-6
    )


def test_the_cli_scores_a_new_items_text_as_the_server_does(run, served, capsys):
    client, _ = served
    info = client.get("/info").json()["new_items"]
    assert info["text_block"] == "text"
    assert info["feature_blocks"][0] == {
        "name": "genre",
        "width": 2,
        "columns": ["Action", "Drama"],
    }
    cli = cli_users(capsys, run, "--item-genres", "Action", "--k", "5")
    answer = client.post("/items/score", json={"text": TEXT, "features": [1.0, 0.0], "k": 5})
    assert answer.status_code == 200, answer.text
    assert_same(cli, answer.json()["users"])
    assert len({row["score"] for row in cli}) > 1  # the scores say something
    other = {"text": "Film 2 (1992)", "features": [1.0, 0.0], "k": 5}
    other = client.post("/items/score", json=other).json()
    assert [r["score"] for r in other["users"]] != [r["score"] for r in answer.json()["users"]]
    plain = client.post("/items/score", json={"text": TEXT, "features": [0, 0], "k": 5}).json()
    assert "warnings" not in plain  # no genre beside a text: not an item without content


def test_a_vector_of_the_other_blocks_goes_with_the_text(run, served, capsys, tmp_path):
    import numpy as np

    client, _ = served
    np.save(tmp_path / "genres.npy", np.array([0.0, 1.0], np.float32))
    cli = cli_users(capsys, run, "--item-vector", str(tmp_path / "genres.npy"), "--k", "4")
    answer = client.post("/items/score", json={"text": TEXT, "features": [0, 1], "k": 4})
    assert_same(cli, answer.json()["users"])
    np.save(tmp_path / "three.npy", np.ones(3, np.float32))
    argv = ["recommend", "--run", str(run), "--item-text", TEXT]
    assert main([*argv, "--item-vector", str(tmp_path / "three.npy")]) == 2
    assert "has 3 columns; this run reads 2 besides the text block (the item's text fills it)" in (
        capsys.readouterr().err
    )


def test_a_text_alone_is_answered_with_the_blocks_it_needs(run, served, capsys):
    client, _ = served
    needs = "this run's items need genre (2 columns: Action, Drama) besides text"
    assert main(["recommend", "--run", str(run), "--item-text", TEXT]) == 2
    error = capsys.readouterr().err
    assert needs in error and "--item-genres" in error and error.count("\n") == 1
    answer = client.post("/items/score", json={"text": TEXT, "k": 3})
    assert answer.status_code == 422
    assert needs in answer.json()["error"] and '"features"' in answer.json()["error"]
    # a bad k, or an id already taken, is named first
    answer = client.post("/items/score", json={"text": TEXT, "k": 0, "add": True, "id": 1})
    assert answer.status_code == 422 and "k must be at least 1" in answer.json()["error"]
    answer = client.post("/items/score", json={"text": TEXT, "add": True, "id": 1, "k": 3})
    assert answer.status_code == 409 and "already in the catalogue" in answer.json()["error"]


def test_all_zero_features_are_warned_of_in_the_answer(served):
    client, _ = served
    width = sum(b["width"] for b in client.get("/info").json()["new_items"]["feature_blocks"])
    answer = client.post("/items/score", json={"features": [0.0] * width, "k": 3})
    assert answer.status_code == 200
    assert answer.json()["warnings"] == [
        "the item's features are all zero: its users are ranked from no content at all"
    ]


def test_a_text_beside_features_of_every_block_is_said_to_be_unread(run, served, tmp_path, capsys):
    import numpy as np

    client, _ = served
    width = sum(b["width"] for b in client.get("/info").json()["new_items"]["feature_blocks"])
    full = [0.5] * width  # genre and text blocks both given: the text has no block to fill
    answer = client.post("/items/score", json={"text": TEXT, "features": full, "k": 3})
    alone = client.post("/items/score", json={"features": full, "k": 3})
    assert answer.status_code == 200 and answer.json()["users"] == alone.json()["users"]
    assert answer.json()["warnings"] == [
        "the features hold every block the model reads, so they are used as they are and the "
        "text is not read (it only labels the item): send the blocks besides text, or no text"
    ]
    assert "warnings" not in alone.json()
    np.save(tmp_path / "full.npy", np.full(width, 0.5, np.float32))  # the CLI refuses the pair
    argv = ["recommend", "--run", str(run), "--item-text", TEXT, "--item-vector"]
    assert main([*argv, str(tmp_path / "full.npy")]) == 2
    assert "this run reads 2 besides the text block" in capsys.readouterr().err


@pytest.mark.usefixtures("with_svd_teacher")
def test_a_zoo_run_scores_a_new_items_text_as_its_server_does(films, tmp_path, capsys):
    run = tiny_text_run(tmp_path / "dropoutnet", *films, model="dropoutnet", backbone_dim=8)
    cli = cli_users(capsys, run, "--item-genres", "Drama", "--k", "6")
    with running_server(run) as (url, _), httpx.Client(base_url=url, timeout=30) as client:
        answer = client.post("/items/score", json={"text": TEXT, "features": [0, 1], "k": 6})
    assert answer.status_code == 200, answer.text
    assert_same(cli, answer.json()["users"])


def test_a_run_on_the_text_block_alone_scores_a_text_alone(films, tmp_path, capsys):
    run = tiny_text_run(tmp_path / "text-only", *films, features="text")
    cli = cli_users(capsys, run, "--k", "6")
    with running_server(run) as (url, _), httpx.Client(base_url=url, timeout=30) as client:
        answer = client.post("/items/score", json={"text": TEXT, "k": 6})
    assert answer.status_code == 200, answer.text
    assert_same(cli, answer.json()["users"])

"""``--text-encoder`` on ``data info``, ``train`` and ``evaluate``, with a tiny local
sentence-transformers folder: recorded in config.yaml and results.json, reused by evaluate."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from coldbrew.cli import main
from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from sentence_support import tiny_sentence_folder

pytest.importorskip("transformers")

ITEMS = "iid,title,genres\n" + "".join(
    f"{item},Film {item} (199{item % 10}),{'Action' if item % 2 else 'Drama'}\n"
    for item in range(1, 13)
)
TRAIN = "uid,iid\n" + "".join(
    f"{user},{(user + shift) % 9 + 1}\n" for user in range(1, 7) for shift in (0, 1, 3)
)
COLD_VAL = "uid,iid\n" + "".join(f"{user},{10 + user % 3}\n" for user in range(1, 7))


pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "films"
    folder.mkdir()
    for name, text in (("items.csv", ITEMS), ("train.csv", TRAIN), ("cold_val.csv", COLD_VAL)):
        (folder / name).write_text(text)
    return str(folder)


@pytest.fixture
def encoder(tmp_path):
    return str(tiny_sentence_folder(tmp_path / "encoder"))


def test_data_info_shows_the_chosen_encoder_width(data, encoder, capsys):
    argv = ["data", "info", data, "--features", "genre,text", "--json"]
    assert main([*argv, "--text-encoder", encoder]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["features"]["text"] == [12, 32] and summary["text_encoder"] == encoder
    assert main([*argv, "--text-encoder", "bert-base"]) == 2
    assert "option text_encoder: 'bert-base' is neither" in capsys.readouterr().err


def test_train_records_the_encoder_and_evaluate_reuses_it(data, encoder, tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["train", "--data", data, "--features", "genre,text", "--text-encoder", encoder]
    argv += ["--epochs", "1", "--batch-size", "16", "--num-neg", "2", "--out", str(run), "--quiet"]
    assert main(argv) == 0
    assert yaml.safe_load((run / "config.yaml").read_text())["text_encoder"] == encoder
    results = json.loads((run / "results.json").read_text())
    assert results["config"]["text_encoder"] == encoder
    assert results["dataset"]["features"]["text"] == [12, 32]
    capsys.readouterr()
    assert main(["evaluate", "--run", str(run), "--json"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert output["text_encoder"] == encoder
    assert output["metrics"]["val"] == results["metrics"]["val"]

    moved = tmp_path / "moved-encoder"
    shutil.move(encoder, moved)  # the run's folder is gone: evaluate is told the new place
    assert main(["evaluate", "--run", str(run), "--json"]) == 2
    assert f"option text_encoder: '{encoder}' is neither" in capsys.readouterr().err
    assert main(["evaluate", "--run", str(run), "--text-encoder", str(moved), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["val"] == results["metrics"]["val"]


def test_the_option_is_a_typed_run_setting(encoder):
    assert make_config({}).text_encoder.spelling == "minilm"
    assert make_config({"text_encoder": "mpnet"}).text_encoder.spelling == "mpnet"
    assert make_config({"text-encoder": encoder}).to_dict()["text_encoder"] == encoder
    with pytest.raises(ColdbrewError, match="option text_encoder: 'gpt2' is neither"):
        make_config({"text_encoder": "gpt2"})


def test_evaluate_refuses_another_encoder_of_the_same_width_unless_asked(
    data, encoder, tmp_path, capsys
):
    run = tmp_path / "run"
    argv = ["train", "--data", data, "--features", "genre,text", "--text-encoder", encoder]
    argv += ["--epochs", "1", "--batch-size", "16", "--num-neg", "2", "--out", str(run), "--quiet"]
    assert main(argv) == 0
    assert main(["evaluate", "--run", str(run)]) == 0
    kept = (run / "evaluation.json").read_text()
    other = str(tiny_sentence_folder(tmp_path / "other", seed=1))  # 32-wide too, other weights
    capsys.readouterr()
    assert main(["evaluate", "--run", str(run), "--text-encoder", other]) == 2
    assert "is another model than the one" in capsys.readouterr().err
    allow = ["--text-encoder", other, "--allow-other-encoder"]
    assert main(["evaluate", "--run", str(run), *allow]) == 0
    assert (run / "evaluation.json").read_text() == kept
    assert json.loads((run / "evaluation-other-encoder.json").read_text())["text_encoder"] == other
    genre = tmp_path / "genre"
    argv = ["train", "--data", data, "--features", "genre", "--epochs", "1", "--batch-size", "16"]
    assert main([*argv, "--num-neg", "2", "--out", str(genre), "--quiet"]) == 0
    assert main(["evaluate", "--run", str(genre), "--text-encoder", encoder]) == 2
    assert "reads no text features (features: genre)" in capsys.readouterr().err


def test_recommend_finds_a_moved_encoder_folder_and_refuses_another(
    data, encoder, tmp_path, capsys
):
    run = tmp_path / "run"
    argv = ["train", "--data", data, "--features", "genre,text", "--text-encoder", encoder]
    argv += ["--epochs", "1", "--batch-size", "16", "--num-neg", "2", "--out", str(run), "--quiet"]
    assert main(argv) == 0
    moved = tmp_path / "moved-encoder"
    shutil.move(encoder, moved)
    ask = ["recommend", "--run", str(run), "--user", "1", "--k", "3", "--json"]
    capsys.readouterr()
    assert main([*ask, "--text-encoder", str(moved)]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3
    other = str(tiny_sentence_folder(tmp_path / "other", seed=1))
    assert main([*ask, "--text-encoder", other]) == 2
    assert "is another model than the one" in capsys.readouterr().err


def test_data_info_describes_the_text_block_without_encoding_it(
    data, encoder, tmp_path, monkeypatch, capsys
):
    from coldbrew.data import load_dataset
    from coldbrew.data.text import backbones

    argv = ["data", "info", data, "--features", "genre,text", "--text-encoder", encoder]
    assert main([*argv, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["text"]
    (member,) = plan["members"]
    assert (plan["items_with_text"], plan["distinct_texts"], plan["width"]) == (12, 12, 32)
    assert (member["cached"], member["to_encode"], member["precision"]) == (0, 12, "fp32")
    assert member["rate"] == "probed" and member["estimate_s"] > 0  # one batch timed
    cache = tmp_path / "cache" / "text"
    assert not list(cache.glob("store-*"))  # nothing encoded into the cache

    load_dataset(data, features="genre,text", text_encoder=encoder)  # encodes the 12 texts
    monkeypatch.setattr(backbones, "load_backbone", refuse_loading)
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert "12 items with text, 12 distinct; " in said and "32 columns (fp32), 12 cached\n" in said
    assert "new item vector      genre: 2 columns (Action, Drama), then text: 32 columns\n" in said


def test_data_info_names_a_long_blocks_first_columns_and_counts_the_rest():
    from coldbrew.cli.data_info import shortened

    names = [f"author {n}" for n in range(2000)]
    entry = shortened({"block": "author", "width": 2000, "columns": names})
    assert entry["columns"] == [*names[:5], "... 1,995 more"] and entry["width"] == 2000
    few = {"block": "genre", "width": 20, "columns": names[:20]}
    assert shortened(few) == few  # MovieLens's 19 genres: each named


def refuse_loading(*args, **kwargs):
    raise AssertionError("the model must not be loaded")

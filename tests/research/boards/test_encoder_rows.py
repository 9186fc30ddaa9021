"""``coldbrew leaderboard --text-encoders``: a row per model and encoder (``MODEL@ENCODER``), every
row on the same folds, blends across encoders, the paired test across them; what it refuses.

The sentence encoder is a stand-in: each encoder gives each text its own fixed random vector,
so two encoders give the runs other text blocks (no model runs, nothing is cached)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

from coldbrew.cli import main
from coldbrew.config import load_saved_config, make_config
from coldbrew.data.tables import content
from coldbrew.errors import ColdbrewError
from coldbrew.research.boards.blend_names import parse_blends
from coldbrew.research.boards.encoder_rows import (
    board_rows,
    parse_text_encoders,
    row_name,
    split_row,
)
from coldbrew.research.boards.leaderboard import (
    board_preset,
    leaderboard,
    load_text_vectors_first,
)
from coldbrew.research.search.study import DataCache

ENCODERS = ["minilm", "mpnet@128"]
FOLDS = 3
ROWS = ["ridge@minilm", "ridge@mpnet@128", "popularity@minilm", "popularity@mpnet@128"]
BLEND = "blend-ridge@mpnet@128+popularity@minilm"


def encoder_vectors(texts, encoding) -> torch.Tensor:
    """Each (encoder, text) its own 8 numbers, the same on every call."""
    rows = []
    for text in texts:
        seed = zlib.crc32(f"{encoding.encoder.spelling}|{text}".encode())
        rows.append(np.random.default_rng(seed).standard_normal(8))
    return torch.tensor(np.array(rows), dtype=torch.float32)


def write_titles(folder: Path, *, items: int = 150, users: int = 80) -> Path:
    """Users buying 8 of ``items`` each; every item a title (the text block) and a tag."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    pairs = sorted({(u, int(i)) for u in range(users) for i in rng.choice(items, 8, replace=False)})
    lines = ["customer,sku"] + [f"c{u},sku-{i}" for u, i in pairs]
    (folder / "events.csv").write_text("\n".join(lines) + "\n")
    rows = ["sku,title,tags"] + [f"sku-{i},item number {i},{'abc'[i % 3]}" for i in range(items)]
    (folder / "products.csv").write_text("\n".join(rows) + "\n")
    (folder / "coldbrew.yaml").write_text(
        "interactions: events.csv\nuser: customer\nitem: sku\nitems: products.csv\n"
        "text: [title]\ncategories: [tags]\n"
    )
    return folder


def layers(data: Path, **more) -> tuple[dict, ...]:
    base = {"data": str(data), "cold_split": "random:0.25", "quiet": True, "ks": [5, 20]}
    return ({**base, **more},)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    root = tmp_path_factory.mktemp("encoders")
    data = write_titles(root / "titles")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(content, "text_embeddings", encoder_vectors)
        patch.setattr(content, "text_encoder_available", lambda: True)
        options = {"plot": False, "log": lambda _: None, "text_encoders": ENCODERS}
        blends = parse_blends(BLEND.removeprefix("blend-"), ROWS)
        out = root / "board"
        result = leaderboard(layers(data, folds=FOLDS), ["ridge", "popularity"], [1], out,
                             blends=blends, **options)  # fmt: skip
        yield out, result


def fold_dataset(out: Path, row: str, fold: int):
    """The data a fold run trained on, loaded as its saved config says."""
    saved = load_saved_config(out / "folds" / row / f"fold-{fold}" / "seed-1" / "config.yaml")
    return DataCache()(make_config(saved, {"quiet": True, "device": "cpu"}))


def test_a_row_per_model_and_encoder_each_trained_with_its_encoder(board):
    out, result = board
    assert [row["model"] for row in result["rows"]] == [*ROWS, BLEND]
    assert [row["text_encoder"] for row in result["rows"]] == [*ENCODERS, *ENCODERS, None]
    for row in ROWS:
        model, encoder = split_row(row)
        for run in (out / row / "seed-1", out / "folds" / row / "fold-0" / "seed-1"):
            saved = load_saved_config(run / "config.yaml")
            assert (saved["model"], saved["text_encoder"]) == (model, encoder)


def test_every_encoder_is_cross_validated_on_the_same_fold_items(board):
    out, _ = board
    held = {}
    for row in ("ridge@minilm", "ridge@mpnet@128"):
        for fold in range(FOLDS):
            dataset = fold_dataset(out, row, fold)
            held[row, fold] = set(dataset.splits["val"]["cold"].nonzero()[1].tolist())
        text = fold_dataset(out, row, 0).features["text"]
        held[row, "text"] = text
    for fold in range(FOLDS):
        assert held["ridge@minilm", fold] == held["ridge@mpnet@128", fold]
        assert held["ridge@minilm", fold]  # each fold holds items out
    assert not held["ridge@minilm", 0] & held["ridge@minilm", 1]  # folds do not overlap
    # the same items, other vectors: the encoder reached the runs
    assert not torch.equal(held["ridge@minilm", "text"], held["ridge@mpnet@128", "text"])


def test_the_paired_test_compares_rows_across_encoders_pair_by_pair(board):
    _, result = board
    for lead in result["leads"].values():
        names = {lead["best"], *lead["versus"]}
        assert names == {*ROWS, BLEND}
        for interval in lead["versus"].values():
            assert interval["n"] == FOLDS  # every fold paired (one seed)
    rows = {row["model"]: row for row in result["rows"]}
    pairs = {name: sorted((f, s) for f, s, _ in rows[name]["fold_values"]["all"]) for name in rows}
    assert len({tuple(keys) for keys in pairs.values()}) == 1  # the same (fold, seed) keys
    ridge = [value for _, _, value in rows["ridge@minilm"]["fold_values"]["all"]]
    other = [value for _, _, value in rows["ridge@mpnet@128"]["fold_values"]["all"]]
    assert ridge != other  # other vectors, other scores: the rows are not copies


def test_a_blend_mixes_runs_of_two_encoders_fold_by_fold(board):
    out, _ = board
    for fold in range(FOLDS):
        saved = load_saved_config(out / "folds" / BLEND / f"fold-{fold}" / "seed-1" / "config.yaml")
        assert saved["blend"]["runs"] == [
            str(out / "folds" / "ridge@mpnet@128" / f"fold-{fold}" / "seed-1"),
            str(out / "folds" / "popularity@minilm" / f"fold-{fold}" / "seed-1"),
        ]
    final = load_saved_config(out / BLEND / "seed-1" / "config.yaml")
    assert final["blend"]["runs"] == [
        str(out / "ridge@mpnet@128" / "seed-1"),
        str(out / "popularity@minilm" / "seed-1"),
    ]


def test_the_markdown_and_json_name_each_rows_model_and_encoder(board):
    out, _ = board
    written = json.loads((out / "leaderboard.json").read_text())
    assert [(row["model"], row["text_encoder"]) for row in written["rows"][:2]] == [
        ("ridge@minilm", "minilm"),
        ("ridge@mpnet@128", "mpnet@128"),
    ]
    markdown = (out / "leaderboard.md").read_text()
    for name in [*ROWS, BLEND]:
        assert f"| {name} " in markdown


def test_the_terminal_table_names_every_row_and_aligns_the_leads_of_long_names(board):
    _, result = board
    table = result["table"].splitlines()
    for name in [*ROWS, BLEND]:
        assert any(line.startswith(name + " ") for line in table)
    leads = [line for line in table if line.startswith("  ")]
    assert len(leads) == 2 * len(ROWS)  # per convention, every row but the best
    # each lead's mean starts in one column, past the longest name (the blend's, 39 letters)
    starts = {line.index(" +") if " +" in line else line.index(" -") for line in leads}
    assert len(starts) == 1 and starts.pop() >= 2 + len(BLEND)


def test_a_second_call_with_one_encoder_keeps_the_others_rows_and_trains_nothing(board):
    out, _ = board
    trained = (out / "ridge@mpnet@128" / "seed-1" / "results.json").stat().st_mtime_ns
    data = Path(load_saved_config(out / "ridge@minilm" / "seed-1" / "config.yaml")["data"])
    options = {"plot": False, "log": lambda _: None, "text_encoders": ["minilm"]}
    again = leaderboard(layers(data, folds=FOLDS), ["ridge"], [1], out, **options)
    # the rows asked for, then those trained there before, by name
    earlier = ["popularity@minilm", "popularity@mpnet@128", "ridge@mpnet@128"]
    assert [row["model"] for row in again["rows"]] == ["ridge@minilm", *earlier, BLEND]
    assert (out / "ridge@mpnet@128" / "seed-1" / "results.json").stat().st_mtime_ns == trained


def test_a_model_that_reads_no_text_block_gets_one_row():
    base = ({"data": "synthetic:small,users=120,items=80"},)
    rows = board_rows(base, ["lm", "bpr", "ridge"], ENCODERS)  # bpr reads no content at all
    assert [name for name, _ in rows] == ["lm", "bpr", "ridge@minilm", "ridge@mpnet@128"]
    assert [str(config.text_encoder) for _, config in rows] == ["minilm", "minilm", *ENCODERS]
    assert board_rows(base, ["ridge"], []) == [("ridge", make_config(*base, {"model": "ridge"}))]
    with pytest.raises(ColdbrewError, match="no model here reads the text block"):
        board_rows(({**base[0], "features": ["genre"]},), ["ridge"], ENCODERS)


def test_with_jobs_each_encoders_vectors_are_loaded_once_before_the_processes():
    base = ({"data": "synthetic:small,users=120,items=80"},)
    configs = [config for _, config in board_rows(base, ["lm", "ridge", "knn"], ENCODERS)]
    loaded, lines = [], []
    load_text_vectors_first(configs, 2, loaded.append, lines.append)
    # the LM reads no text vectors: ridge's data once per encoder, for the first seed
    assert [(c.model, str(c.text_encoder), c.seed) for c in loaded] == [
        ("ridge", "minilm", 2),
        ("ridge", "mpnet@128", 2),
    ]
    assert lines[1].endswith("(its mpnet@128 text vectors)")


def test_row_names_split_at_the_first_mark_and_keep_the_encoders_spelling():
    assert row_name("aldi", "mpnet@128") == "aldi@mpnet@128"
    assert split_row("aldi@mpnet@128") == ("aldi", "mpnet@128")
    assert split_row("aldi") == ("aldi", None)
    assert parse_text_encoders(" minilm , mpnet@128 ") == ENCODERS
    assert parse_blends("ALDI@mpnet@128+ridge@minilm", ["aldi@mpnet@128", "ridge@minilm"]) == [
        ["aldi@mpnet@128", "ridge@minilm"]
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("minilm+mpnet@128", "cannot name a row"),
        ("minilm,/no/such/folder", "cannot name a row"),
        ("minilm,minilm", "names an encoder twice"),
        ("minilm,nosuchencoder", "neither"),
        (" , ", "at least one encoder"),
    ],
)
def test_what_a_list_of_encoders_refuses(text, message):
    with pytest.raises(ColdbrewError, match=message):
        parse_text_encoders(text)


def test_a_blend_of_a_model_on_a_board_of_encoders_names_the_rows():
    with pytest.raises(ColdbrewError, match="its rows name the text encoder: ridge@minilm"):
        parse_blends("ridge+popularity@minilm", ["ridge@minilm", "popularity@minilm"])


SYNTHETIC = ["--data", "synthetic:small,users=120,items=80", "--ks", "5,20", "--quiet"]
SYNTHETIC_LAYER = {"data": "synthetic:small,users=120,items=80", "ks": [5, 20], "quiet": True}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--text-encoders", "minilm,mpnet@128", "--text-encoder", "mpnet"],
            "give --text-encoders LIST (a row per encoder) or --text-encoder NAME (one), not both",
        ),
        (["--text-encoders", "minilm", "--blend", "ridge+popularity"], "its rows name"),
    ],
)
def test_the_command_refuses_in_one_line_and_writes_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "board"
    command = ["leaderboard", *SYNTHETIC, "--models", "ridge,popularity", "--seeds", "1"]
    assert main([*command, *argv, "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1
    assert not out.exists()


def test_a_preset_gives_the_list_and_not_with_its_own_encoder(tmp_path, capsys):
    assert board_preset({"leaderboard": {"text_encoders": ENCODERS}}) == {
        "text_encoders": "minilm,mpnet@128"
    }
    preset = tmp_path / "board.yaml"
    preset.write_text("text_encoder: mpnet\nleaderboard:\n  text_encoders: [minilm, mpnet@128]\n")
    command = ["leaderboard", *SYNTHETIC, "--models", "ridge", "--config", str(preset)]
    assert main([*command, "--out", str(tmp_path / "board")]) == 2
    assert "gives text_encoder and leaderboard: text_encoders" in capsys.readouterr().err


def test_the_command_without_folds_puts_every_encoder_on_the_same_split(tmp_path, capsys):
    out = tmp_path / "board"
    command = ["leaderboard", *SYNTHETIC, "--models", "ridge", "--seeds", "1", "--no-plot"]
    assert main([*command, "--text-encoders", "minilm,mpnet@128", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ridge@minilm" in printed and "ridge@mpnet@128" in printed
    summaries = [
        json.loads((out / row / "seed-1" / "results.json").read_text())["dataset"]
        for row in ("ridge@minilm", "ridge@mpnet@128")
    ]
    assert summaries[0] == summaries[1]  # the same users, items and cold split


def test_a_worker_sharing_the_board_claims_each_rows_folds_and_final_run(tmp_path):
    lines: list[str] = []
    options = {"plot": False, "log": lines.append, "text_encoders": ENCODERS}
    claims = str(tmp_path / "claims")
    result = leaderboard(({**SYNTHETIC_LAYER, "folds": 2},), ["ridge"], [1], tmp_path / "board",
                         claims=claims, **options)  # fmt: skip
    claimed = sorted(
        line.split("claimed ")[1].split(" (")[0] for line in lines if "claimed " in line
    )
    rows = ["ridge@minilm", "ridge@mpnet@128"]
    assert claimed == sorted(
        f"{row}/{unit}" for row in rows for unit in ("fold-0", "fold-1", "final")
    )
    assert [row["model"] for row in result["rows"]] == rows


def test_a_presets_list_makes_the_rows_and_a_text_encoder_flag_wins_over_it(tmp_path, capsys):
    preset = tmp_path / "board.yaml"
    preset.write_text("leaderboard:\n  models: [ridge]\n  text_encoders: [minilm, mpnet@128]\n")
    command = ["leaderboard", *SYNTHETIC, "--config", str(preset), "--seeds", "1", "--no-plot"]
    assert main([*command, "--out", str(tmp_path / "list")]) == 0
    board = json.loads((tmp_path / "list" / "leaderboard.json").read_text())
    assert [row["model"] for row in board["rows"]] == ["ridge@minilm", "ridge@mpnet@128"]
    assert main([*command, "--text-encoder", "mpnet", "--out", str(tmp_path / "one")]) == 0
    board = json.loads((tmp_path / "one" / "leaderboard.json").read_text())
    assert [(row["model"], row["text_encoder"]) for row in board["rows"]] == [("ridge", None)]
    saved = load_saved_config(tmp_path / "one" / "ridge" / "seed-1" / "config.yaml")
    assert saved["text_encoder"] == "mpnet"

"""``coldbrew leaderboard --folds K``: folds choose, the final runs report, nothing chooses on
the report; the epochs are the mean fold curve's best; blends' weights come from the folds."""

from __future__ import annotations

import json

import pytest

from coldbrew.config import load_saved_config
from coldbrew.research.boards.blend_names import parse_blends
from coldbrew.research.boards.board_text import WIDTH
from coldbrew.research.boards.cross_validation import (
    chosen_epochs,
    fold_histories,
    mean_curve,
)
from coldbrew.research.boards.leaderboard import leaderboard
from research_tiny_run import TINY

FOLDS = 3
TINY_RUN = {key: value for key, value in TINY.items() if key != "num_neg"}  # clcrec's own
LAYERS = ({**TINY_RUN, "epochs": 3, "folds": FOLDS, "clcrec": {"num_neg": 4}},)
MODELS = ["clcrec", "ridge"]


def history(*values: float) -> list[dict]:
    return [{"epoch": e + 1, "val": {"cold": {"recall@20": v}}} for e, v in enumerate(values)]


def test_the_mean_curve_and_its_first_best_by_hand():
    # runs stopped at 4, 3 and 5 epochs: the mean covers the first 3, where all three are
    # epoch 1: (0.1 + 0.2 + 0.3) / 3 = 0.2; epoch 2: (0.3 + 0.2 + 0.4) / 3 = 0.3;
    # epoch 3: (0.2 + 0.3 + 0.3) / 3 = 0.2667 (epoch 4's 0.9 is one run's alone): epoch 2
    histories = [
        history(0.1, 0.3, 0.2, 0.9),
        history(0.2, 0.2, 0.3),
        history(0.3, 0.4, 0.3, 0, 0),
    ]
    curve = mean_curve(histories, "cold/recall@20")
    assert curve == pytest.approx([0.2, 0.3, 0.8 / 3])
    assert chosen_epochs([0.1, 0.3, 0.3]) == 2  # the first of equal maxima
    assert chosen_epochs(curve) == 2


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    out = tmp_path_factory.mktemp("folds") / "board"
    blends = parse_blends("clcrec+ridge", MODELS)
    result = leaderboard(LAYERS, MODELS, [1], out, blends=blends, plot=False, log=lambda _: None)
    return out, result


def test_the_final_run_trains_the_mean_fold_curves_epochs_and_chooses_nothing(board):
    out, result = board
    curve = mean_curve(fold_histories(out, "clcrec", FOLDS, [1]), "cold/recall@20")
    final = json.loads((out / "clcrec" / "seed-1" / "results.json").read_text())
    assert final["config"]["epochs"] == chosen_epochs(curve)
    assert final["epochs_run"] == final["best_epoch"] == chosen_epochs(curve)  # the last kept
    assert all(entry["val"] == {} for entry in final["history"])  # no epoch was evaluated
    assert set(final["metrics"]) == {"report", "test"}
    row = next(row for row in result["rows"] if row["model"] == "clcrec")
    assert row["epochs"] == chosen_epochs(curve)


def test_no_fold_run_reads_the_report_and_every_fold_is_scored(board):
    out, result = board
    for name in ("clcrec", "ridge", "blend-clcrec+ridge"):
        for fold in range(FOLDS):
            run = out / "folds" / name / f"fold-{fold}" / "seed-1"
            results = json.loads((run / "results.json").read_text())
            assert set(results["metrics"]) == {"val"}
            assert results["dataset"]["cross_validation"]["fold"] == fold
        row = next(row for row in result["rows"] if row["model"] == name)
        for convention in ("all", "split"):
            assert row["folds"][convention]["recall@20"]["n"] == FOLDS
            assert len(row["fold_values"][convention]) == FOLDS


def test_a_blends_weights_are_chosen_once_on_the_folds_and_used_everywhere(board):
    out, _ = board
    weights = [
        load_saved_config(
            out / "folds" / "blend-clcrec+ridge" / f"fold-{f}" / "seed-1" / "config.yaml"
        )["blend"]["weights"]
        for f in range(FOLDS)
    ]
    final = load_saved_config(out / "blend-clcrec+ridge" / "seed-1" / "config.yaml")["blend"]
    assert all(each == final["weights"] for each in weights)


def test_the_table_is_one_screen_wide_marks_the_best_and_prints_the_leads(board):
    _, result = board
    lines = result["table"].splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    assert any("*" in line for line in lines)
    for convention in ("all", "split"):
        assert result["leads"][convention]["best"] in {row["model"] for row in result["rows"]}
        assert any(line.startswith(f"{convention}: ") for line in lines)


def test_a_second_call_reads_everything_back(board, monkeypatch):
    out, result = board

    def no_training(*args, **kwargs):
        raise AssertionError("a finished fold was trained again")

    monkeypatch.setattr("coldbrew.research.curves.train_with_curves", no_training)
    blends = parse_blends("clcrec+ridge", MODELS)
    again = leaderboard(LAYERS, MODELS, [1], out, blends=blends, plot=False, log=lambda _: None)
    assert [row["folds"] for row in again["rows"]] == [row["folds"] for row in result["rows"]]


def test_an_earlier_models_folds_are_checked_not_its_final_epochs(board, tmp_path):
    """A second call naming fewer models still reads the earlier ones back (their final run
    trained the folds' epochs, not the flag's); another setting is still refused."""
    from coldbrew.errors import ColdbrewError

    out, result = board
    again = leaderboard(LAYERS, ["ridge"], [1], out, plot=False, log=lambda _: None)
    assert {row["model"] for row in again["rows"]} == {row["model"] for row in result["rows"]}
    other = ({**LAYERS[0], "lr": 0.02},)
    with pytest.raises(ColdbrewError, match="other settings"):
        leaderboard(other, ["ridge"], [1], out, plot=False, log=lambda _: None)


def test_the_final_runs_epoch_lines_say_nothing_chooses(board):
    out, _ = board
    log = (out / "clcrec" / "seed-1" / "train.log").read_text()
    # validation reports here, after training: not "no validation"
    assert "nothing chooses: the last epoch is kept, report and test scored after" in log
    assert "no validation" not in log and "not scored" not in log


def test_data_with_no_cold_split_runs_a_board_on_folds(tmp_path):
    """A user's own interactions and items, no validation or test: folds choose, the final runs
    train on everything, and the table has nothing to report beyond the folds."""
    import numpy as np

    rng = np.random.default_rng(0)
    data = tmp_path / "shop"
    data.mkdir()
    users, items = 60, 40
    pairs = {(u, i) for u in range(users) for i in rng.choice(items, 8, replace=False)}
    lines = ["customer,sku"] + [f"c{u},sku-{i}" for u, i in sorted(pairs)]
    (data / "events.csv").write_text("\n".join(lines) + "\n")
    tags = ["a", "b", "c", "a|b"]
    rows = ["sku,tags"] + [f"sku-{i},{tags[i % 4]}" for i in range(items)]
    (data / "products.csv").write_text("\n".join(rows) + "\n")
    (data / "coldbrew.yaml").write_text(
        "interactions: events.csv\nuser: customer\nitem: sku\nitems: products.csv\n"
        "categories: [tags]\n"
    )
    layers = ({"data": str(data), "folds": 2, "quiet": True, "ks": [5, 20]},)
    lines = []
    result = leaderboard(layers, ["ridge"], [1], tmp_path / "board", log=lines.append)
    row = result["rows"][0]
    assert row["folds"]["all"]["recall@20"]["n"] == 2
    assert row["metrics"] == {}  # nothing was held out of the final runs: no report
    assert "no report scores to plot" in " ".join(lines)  # nor a bar chart of nothing
    assert not (tmp_path / "board" / "leaderboard.png").exists()
    log = (tmp_path / "board" / "ridge" / "seed-1" / "train.log").read_text()
    assert "no validation: the last epoch is kept, nothing to score" in log
    assert "so this run is not scored: its folds' runs (--fold 0 to 1) score the model" in log
    assert not list((tmp_path / "board" / "ridge" / "seed-1").glob("evaluation*.json"))
    final = json.loads((tmp_path / "board" / "ridge" / "seed-1" / "results.json").read_text())
    assert final["dataset"]["train_interactions"] == len(pairs)


def trained_runs(out):
    """Every seed run of the board: each model's and the blend's, final and on each fold."""
    for name in [*MODELS, "blend-clcrec+ridge"]:
        yield out / name / "seed-1"
        for fold in range(FOLDS):
            yield out / "folds" / name / f"fold-{fold}" / "seed-1"


def test_a_runs_own_metrics_are_what_a_rescore_gives(board, tmp_path):
    """The board reads a run's own convention from its results.json instead of scoring its best
    checkpoint again: the numbers are the ones that re-score gave."""
    from coldbrew.research.boards.board import own_metrics
    from coldbrew.training.run_evaluation import evaluate_run

    out, _ = board
    for run in trained_runs(out):
        convention = json.loads((run / "results.json").read_text())["config"]["cold_candidates"]
        own = own_metrics(run, convention)
        rescored = evaluate_run(run, cold_candidates=convention, output="rescored.json")
        assert own is not None and own == rescored["metrics"], run
        other = "split" if convention == "all" else "all"
        assert own_metrics(run, other) is None  # another convention is scored, once


def test_a_run_is_scored_under_the_other_convention_once_and_read_back(board, monkeypatch):
    """Every run was scored under both conventions where it was trained: read back, the board
    loads no checkpoint, and its rows are the same."""
    out, result = board
    for run in trained_runs(out):
        own = json.loads((run / "results.json").read_text())["config"]["cold_candidates"]
        other = "split" if own == "all" else "all"
        assert (run / f"evaluation-{other}.json").exists() and not (
            run / f"evaluation-{own}.json"
        ).exists()

    def no_scoring(*args, **kwargs):
        raise AssertionError("the board scored a run again")

    monkeypatch.setattr("coldbrew.training.run_evaluation.evaluate_run", no_scoring)
    blends = parse_blends("clcrec+ridge", MODELS)
    again = leaderboard(LAYERS, MODELS, [1], out, blends=blends, plot=False, log=lambda _: None)
    assert again["rows"] == result["rows"]


def test_a_fold_that_would_stop_early_runs_to_the_floor(tmp_path):
    """Patience 1 stops some fold run before epoch 6 under the old rule (``min_epochs`` 0);
    by default every fold run reaches the floor (capped by ``epochs``: 6), so the mean fold
    curve covers all 6 epochs, and each fold's score is its best over them."""
    layer = {**TINY_RUN, "epochs": 6, "patience": 1, "folds": FOLDS, "clcrec": {"num_neg": 4}}
    quiet = {"plot": False, "log": lambda _: None}
    leaderboard(({**layer, "min_epochs": 0},), ["clcrec"], [1], tmp_path / "old", **quiet)
    leaderboard((layer,), ["clcrec"], [1], tmp_path / "new", **quiet)

    def fold_results(board):
        return [
            json.loads(
                (board / "folds" / "clcrec" / f"fold-{f}" / "seed-1" / "results.json").read_text()
            )
            for f in range(FOLDS)
        ]

    old, new = fold_results(tmp_path / "old"), fold_results(tmp_path / "new")
    assert any(run["epochs_run"] < 6 for run in old)  # the old rule did stop a fold early
    assert all(run["epochs_run"] == 6 for run in new)
    assert all(run["early_stop"]["min_epochs"] == 6 for run in new)
    assert (
        len(mean_curve(fold_histories(tmp_path / "new", "clcrec", FOLDS, [1]), "cold/recall@20"))
        == 6
    )
    for before, after in zip(old, new, strict=True):
        # the same run up to the old stop (a constant schedule): the floor only adds epochs
        length = before["epochs_run"]
        assert [e["val"] for e in after["history"][:length]] == [
            e["val"] for e in before["history"]
        ]
        assert after["early_stop"]["best"] >= before["early_stop"]["best"]


def test_a_fold_run_from_before_the_floor_that_stopped_below_it_is_refused(tmp_path):
    from coldbrew.errors import ColdbrewError

    run = tmp_path / "folds" / "aldi" / "fold-0" / "seed-1"
    run.mkdir(parents=True)
    old = {"config": {"epochs": 30, "min_epochs": None}, "stopped": "early_stop"}
    old |= {"epochs_run": 5, "early_stop": {"monitor": "cold/recall@20"}, "history": history(0.1)}
    (run / "results.json").write_text(json.dumps(old))
    with pytest.raises(ColdbrewError, match="stopped after epoch 5, below 10; give another --out"):
        fold_histories(tmp_path, "aldi", 1, [1])
    kept = old | {"config": {"epochs": 30, "min_epochs": 0}}  # asked for the old rule
    (run / "results.json").write_text(json.dumps(kept))
    assert fold_histories(tmp_path, "aldi", 1, [1]) == [history(0.1)]
    new = old | {"early_stop": {"monitor": "cold/recall@20", "min_epochs": 0}}  # today's record
    (run / "results.json").write_text(json.dumps(new))
    assert fold_histories(tmp_path, "aldi", 1, [1]) == [history(0.1)]


def test_fold_runs_that_ranked_own_split_among_other_counts_are_refused(tmp_path):
    from coldbrew.errors import ColdbrewError

    def write(row: str, cut: dict) -> None:
        run = tmp_path / "folds" / row / "fold-0" / "seed-1"
        run.mkdir(parents=True)
        results = {"dataset": {"cross_validation": cut}, "history": history(0.1)}
        (run / "results.json").write_text(json.dumps(results))

    write("ridge", {"folds": 2, "fold": 0, "fold_candidates": 905})
    write("knn", {"folds": 2, "fold": 0, "fold_candidates": 905})
    seen: dict = {}  # shared by the board's rows
    for row in ("ridge", "knn"):  # the same count: nothing to say
        assert fold_histories(tmp_path, row, 1, [1], seen) == [history(0.1)]
    write("aldi", {"folds": 2, "fold": 0})  # trained before the option: its fold's items alone
    with pytest.raises(ColdbrewError, match=r"fold_candidates: 0 in .*aldi.*; 905 in"):
        fold_histories(tmp_path, "aldi", 1, [1], seen)

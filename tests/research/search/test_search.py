"""Optuna search: a 3-trial study on synthetic data where the median pruner stops the bad
trials, the best preset, resume to more trials, and an interrupted trial tried again."""

from __future__ import annotations

import json

import pytest

from coldbrew.config import load_yaml, make_config
from coldbrew.errors import ColdbrewError
from coldbrew.research.search.report import format_trials_table
from coldbrew.research.search.space import parse_space
from coldbrew.research.search.study import open_study, search, search_settings
from research_optional import require

BASE = {
    "data": "synthetic:small,users=200,items=100",
    "batch_size": 256,
    "num_neg": 4,
    "epochs": 2,
    "ks": [5],
    "early_stop_metric": "cold/recall@5",
    "quiet": True,
}
GOOD, BAD = 0.05, 1e-7  # val cold recall@5 after epoch 1: 0.37 against 0.24 (untrained)


def test_three_trials_prune_the_bad_ones_and_the_study_resumes(tmp_path):
    optuna = require("optuna")
    space = parse_space({"lr": {"categorical": [GOOD, BAD]}, "dim": 16}, (BASE,))
    out = tmp_path / "study"
    out.mkdir()
    settings = search_settings(make_config(BASE, space.fixed), space, None)
    study, _ = open_study(out, "maximize", settings, startup=1, warmup=0, seed=1)
    for lr in (GOOD, BAD, BAD):  # the order is fixed; TPE's own draws are not tested here
        study.enqueue_trial({"lr": lr})
    lines: list[str] = []
    options = {"startup_trials": 1, "warmup_epochs": 0, "tensorboard": False, "plot": False}
    result = search((BASE,), space, out, trials=3, log=lines.append, **options)

    states = [row["state"] for row in result["rows"]]
    assert states == ["complete", "pruned", "pruned"]
    rows = result["rows"]
    # pruned after epoch 1: its best so far is below the only completed trial's at epoch 1
    assert rows[1]["epochs_run"] == 1 and rows[1]["last_reported"] < rows[0]["value"]
    assert not (out / "trial-001" / "results.json").exists()
    completed = json.loads((out / "trial-000" / "results.json").read_text())
    assert rows[0]["value"] == completed["early_stop"]["best"]
    assert rows[0]["best_epoch"] == completed["best_epoch"]
    # the report half's value of the completed trial is shown beside the select half's
    assert rows[0]["report"] == completed["metrics"]["report"]["cold"]["recall@5"]
    assert rows[0]["report"] != rows[0]["value"] and rows[1]["report"] is None  # pruned
    assert json.loads((out / "trials.json").read_text())["trials"] == json.loads(json.dumps(rows))
    table = format_trials_table(rows, "cold/recall@5").splitlines()
    assert table[0].split()[:4] == ["trial", "state", "val", "cold/recall@5"]
    assert table[2].split()[2] == f"~{rows[1]['last_reported']:.4f}"  # pruned: its last report
    assert table[1].split()[3] == f"{rows[0]['report']:.4f}" and table[0].split()[4] == "report"
    assert table[-1] == "~ pruned: its best val cold/recall@5 before it was stopped"
    joint = format_trials_table(rows, "joint cold/recall@5").splitlines()
    assert joint[-1].endswith("(its own convention's alone, not a joint cold/recall@5)")
    assert format_trials_table(rows[:1], "cold/recall@5").splitlines()[-1].startswith("0 ")
    assert any("trial 1 pruned after epoch 1: best val" in line for line in lines)

    preset = load_yaml(result["preset"])
    assert preset["lr"] == GOOD and preset["dim"] == 16 and preset["epochs"] == 2
    assert "quiet" not in preset  # how the search ran, not what the trial trained
    assert make_config(preset).model_options.dim == 16

    # a trial left running by a killed search is marked failed and its settings tried again
    stale = optuna.load_study(study_name="coldbrew", storage=f"sqlite:///{out / 'study.db'}")
    stale.ask({"lr": optuna.distributions.CategoricalDistribution([GOOD, BAD])})
    lines.clear()
    result = search((BASE,), space, out, trials=4, log=lines.append, **options)
    states = [row["state"] for row in result["rows"]]
    assert states[:4] == ["complete", "pruned", "pruned", "interrupted"]
    assert len(states) == 5 and states[4] in ("complete", "pruned")
    assert result["rows"][4]["params"] == result["rows"][3]["params"]
    assert any("1 trial(s) to run" in line for line in lines)


def test_a_study_with_other_settings_is_refused(tmp_path):
    require("optuna")
    space = parse_space({"lr": {"log_uniform": [1e-4, 1e-2]}}, (BASE,))
    out = tmp_path / "study"
    out.mkdir()
    settings = search_settings(make_config(BASE), space, None)
    open_study(out, "maximize", settings, startup=1, warmup=0, seed=1)
    with pytest.raises(ColdbrewError, match="other settings .*base.num_neg"):
        search((BASE, {"num_neg": 8}), space, out, trials=1, log=lambda line: None)
    # another training budget would mix two searches' trials: refused too
    for budget in ({"epochs": 3}, {"patience": 2}):
        name = next(iter(budget))
        with pytest.raises(ColdbrewError, match=f"other settings .*base.{name}"):
            search((BASE, budget), space, out, trials=1, log=lambda line: None)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "file.txt").write_text("x")
    with pytest.raises(ColdbrewError, match="holds no study"):
        search((BASE,), space, tmp_path / "other", trials=1, log=lambda line: None)


def test_space_parsing_and_checks():
    space = parse_space(
        {
            "lr": {"log_uniform": ["5e-4", 0.01]},  # YAML 1.1 reads 5e-4 as text
            "num-neg": {"int": [32, 256], "step": 32},
            "batch_size": {"categorical": [1024, 2048]},
            "epochs": 8,
        }
    )
    assert space.dimensions["lr"].low == 0.0005 and space.dimensions["num_neg"].step == 32
    assert space.fixed == {"epochs": 8}
    for mapping, message in (
        ({"epochs": 3}, "no searched field"),
        ({"lr": {"uniform": [0.1, 0.01]}}, "below high"),
        ({"lr": {"log_uniform": [0, 0.1]}}, "low > 0"),
        ({"lr": {"normal": [0, 1]}}, "give one of"),
        ({"num_neg": {"int": [0, 8]}}, "num_neg.* = 0"),
        ({"no_such_option": {"uniform": [0, 1]}}, "unknown config key"),
        ({"lr": {"log_uniform": [1e-4, 1e-2], "step": 1e-4}}, "step cannot go with a log"),
    ):
        with pytest.raises(ColdbrewError, match=message):
            parse_space(mapping)
    with pytest.raises(ColdbrewError, match="model cannot be searched"):
        search(({},), parse_space({"model": {"categorical": ["clcrec"]}}), "unused", trials=1)


def test_an_interrupted_trial_is_retried_with_its_settings_at_most_three_times():
    optuna = require("optuna")
    from optuna.trial import TrialState

    from coldbrew.research.search.shared_study import interrupted_trials
    from coldbrew.research.search.study import MAX_RETRIES, retry_interrupted

    study = optuna.create_study(study_name="coldbrew")  # in memory
    lr = optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True)
    study.ask({"lr": lr})  # killed while running
    lines: list[str] = []
    for attempt in range(MAX_RETRIES + 1):
        retry_interrupted(study, lines.append)
        waiting = study.get_trials(states=(TrialState.WAITING,))
        if attempt == MAX_RETRIES:
            assert waiting == [] and lines[-1].endswith(f"given up after {MAX_RETRIES} retries")
            break
        assert len(waiting) == 1 and waiting[0].params == study.trials[0].params
        assert lines[-1].endswith("its settings queued again")
        study.ask()  # the retry starts (WAITING -> RUNNING) and is killed again
    states = [trial.state for trial in study.trials]
    assert states == [TrialState.FAIL] * (MAX_RETRIES + 1)
    assert interrupted_trials(study) == set(range(MAX_RETRIES + 1))


def test_a_model_that_trains_nothing_is_never_pruned(tmp_path):
    # ridge solves once and evaluates once: a trial below the median has nothing left to save,
    # so it completes (its results kept) where a trained model's would be pruned
    require("optuna")
    require("implicit")
    base = {"model": "ridge", "data": "synthetic:small", "backbone_dim": 8, "ks": [5]}
    base |= {"early_stop_metric": "cold/recall@5", "quiet": True, "device": "cpu"}
    space = parse_space({"ridge_lambda": {"categorical": [0.1, 1e4, 1e5]}}, (base,))
    out = tmp_path / "study"
    out.mkdir()
    settings = search_settings(make_config(base, space.fixed), space, None)
    study, _ = open_study(out, "maximize", settings, startup=1, warmup=0, seed=1)
    for value in (0.1, 1e4, 1e5):
        study.enqueue_trial({"ridge_lambda": value})
    options = {"startup_trials": 1, "warmup_epochs": 0, "tensorboard": False, "plot": False}
    result = search((base,), space, out, trials=3, log=lambda line: None, **options)

    values = [row["value"] for row in result["rows"]]
    assert [row["state"] for row in result["rows"]] == ["complete"] * 3
    assert min(values[1:]) < values[0]  # the median pruner would have stopped one of them
    assert all((out / f"trial-{n:03d}" / "results.json").exists() for n in range(3))


def test_a_new_study_first_trains_its_starting_settings(tmp_path):
    # lr 0.05 is the preset's value and inside the range: trial 0 trains it; dim 7 is outside
    # its choices, so trial 0 draws it like any other trial
    require("optuna")
    base = {**BASE, "lr": GOOD, "dim": 7, "epochs": 1}
    space = parse_space(
        {"lr": {"log_uniform": [1e-3, 0.1]}, "dim": {"categorical": [8, 16]}}, (base,)
    )
    lines: list[str] = []
    options = {"startup_trials": 1, "warmup_epochs": 0, "tensorboard": False, "plot": False}
    result = search((base,), space, tmp_path / "study", trials=2, log=lines.append, **options)

    first, second = (row["params"] for row in result["rows"])
    assert first["lr"] == GOOD and first["dim"] in (8, 16)
    assert second["lr"] != GOOD
    assert "trial 0 trains the starting settings (lr=0.05)" in lines


def test_dimensions_know_what_they_can_draw():
    space = parse_space(
        {
            "lr": {"log_uniform": [1e-3, 0.1]},
            "epochs": {"int": [1, 4]},
            "dim": {"categorical": [8, 16]},
        },
        (BASE,),
    )
    lr, epochs, dim = (space.dimensions[name] for name in ("lr", "epochs", "dim"))
    assert lr.contains(0.1) and not lr.contains(0.2) and not lr.contains(None)
    assert epochs.contains(3) and not epochs.contains(2.5) and not epochs.contains(5)
    assert dim.contains(16) and not dim.contains(32)


def test_a_joint_trial_is_the_geometric_mean_of_both_conventions(tmp_path):
    # the run's own convention (all) from its results, the other (split) scored again from its
    # best checkpoint; both halves, the report half shown and never chosen on
    require("optuna")
    base = {**BASE, "epochs": 1, "lr": GOOD}
    space = parse_space({"dim": {"categorical": [8, 16]}}, (base,))
    out = tmp_path / "study"
    options = {"startup_trials": 1, "warmup_epochs": 0, "tensorboard": False, "plot": False}
    lines: list[str] = []
    result = search((base,), space, out, trials=2, objective="joint", log=lines.append, **options)

    for row in result["rows"]:
        run = out / row["run_dir"]
        own = json.loads((run / "results.json").read_text())["metrics"]
        other = json.loads((run / "evaluation-split.json").read_text())
        assert other["cold_candidates"] == "split"
        by_hand = {
            half: (own[half]["cold"]["recall@5"] * other["metrics"][half]["cold"]["recall@5"])
            ** 0.5
            for half in ("val", "report")
        }
        assert row["value"] == pytest.approx(by_hand["val"], rel=1e-12)
        assert row["report"] == pytest.approx(by_hand["report"], rel=1e-12)
        assert row["conventions"]["all"]["val"] == own["val"]["cold"]["recall@5"]
        # the two conventions differ here, so the joint value is neither of them
        assert row["conventions"]["split"]["val"] != row["conventions"]["all"]["val"]
    assert "val joint cold/recall@5" in lines[0] and result["monitor"] == "joint cold/recall@5"
    assert "val joint cold/recall@5 = " in (out / "best.yaml").read_text()

    # the objective is part of the study: the same study with the default one is refused
    with pytest.raises(ColdbrewError, match=r"other settings \(objective\)"):
        search((base,), space, out, trials=3, log=lambda line: None, **options)


def test_a_joint_objective_needs_cold_items(tmp_path):
    require("optuna")
    base = {**BASE, "early_stop_metric": "all/recall@5"}
    space = parse_space({"dim": {"categorical": [8, 16]}}, (base,))
    with pytest.raises(ColdbrewError, match="needs cold items"):
        search((base,), space, tmp_path / "s", trials=1, objective="joint", log=print)
    with pytest.raises(ColdbrewError, match="expected monitored or joint"):
        search((base,), space, tmp_path / "s", trials=1, objective="both", log=print)


def test_a_pruned_joint_trial_names_the_metric_its_pruning_read():
    # a joint trial is pruned on its own convention's values, never on the joint value
    optuna = require("optuna")
    from coldbrew.research.search.study import trial_line

    pruned = optuna.trial.create_trial(
        state=optuna.trial.TrialState.PRUNED,
        params={"dim": 8},
        distributions={"dim": optuna.distributions.CategoricalDistribution([8, 16])},
        intermediate_values={1: 0.25},
        user_attrs={"pruned_at_epoch": 1},
    )
    line = trial_line(pruned, "joint cold/recall@5", "cold/recall@5")
    assert "after epoch 1: best val cold/recall@5 so far 0.2500 (dim=8)" in line
    done = optuna.trial.create_trial(
        state=optuna.trial.TrialState.COMPLETE,
        value=0.5,
        params={"dim": 8},
        distributions={"dim": optuna.distributions.CategoricalDistribution([8, 16])},
    )
    assert "complete val joint cold/recall@5 0.5000" in trial_line(done, "joint cold/recall@5", "x")


def test_a_log_range_with_zero_can_start_from_and_draw_exactly_zero(tmp_path):
    # the preset's weight decay is 0, which no log range holds: with zero: true, trial 0 trains
    # exactly 0, its row, line and the best preset read 0, never the switch "weight_decay=0"
    require("optuna")
    base = {**BASE, "lr": GOOD, "epochs": 1, "weight_decay": 0.0}
    spec = {"weight_decay": {"log_uniform": [1e-6, 1e-3], "zero": True}}
    space = parse_space(spec, (base,))
    decay = space.dimensions["weight_decay"]
    assert decay.contains(0) and decay.contains(1e-4) and not decay.contains(1e-2)
    assert decay.start(0.0) == {"weight_decay=0": True}
    assert decay.start(1e-4) == {"weight_decay=0": False, "weight_decay": 1e-4}
    assert space.settings({"weight_decay=0": True}) == {"weight_decay": 0.0}
    assert space.settings({"weight_decay=0": False, "weight_decay": 1e-4}) == {"weight_decay": 1e-4}
    assert space.to_dict()["searched"]["weight_decay"]["zero"] is True
    plain = parse_space({"lr": {"log_uniform": [1e-3, 0.1]}}, (base,))
    assert "zero" not in plain.to_dict()["searched"]["lr"]  # older studies keep their identity

    lines: list[str] = []
    options = {"startup_trials": 1, "warmup_epochs": 0, "tensorboard": False, "plot": False}
    out = tmp_path / "study"
    result = search((base,), space, out, trials=2, log=lines.append, **options)
    first = result["rows"][0]["params"]
    assert first == {"weight_decay": 0.0}
    trained = json.loads((out / "trial-000" / "results.json").read_text())
    assert trained["config"]["weight_decay"] == 0.0
    assert all("weight_decay=0" not in row["params"] for row in result["rows"])
    assert any(line.startswith("trial 0 complete") and "(weight_decay=0)" in line for line in lines)
    assert isinstance(load_yaml(result["preset"])["weight_decay"], float)


@pytest.mark.parametrize(
    "spec",
    [
        {"uniform": [0.0, 1.0], "zero": True},
        {"int": [1, 4], "zero": True},
        {"log_uniform": [1e-6, 1e-3], "zero": "yes"},
    ],
)
def test_zero_goes_with_a_log_uniform_range_only(spec):
    with pytest.raises(ColdbrewError, match="zero: true goes with a log_uniform range"):
        parse_space({"weight_decay": spec}, (BASE,))


def test_a_trial_on_folds_trains_every_fold_and_is_their_mean(tmp_path):
    """With --folds K each trial trains K fold runs; its value is their mean val metric, and no
    fold run holds the report split (no trial reads it)."""
    require("optuna")
    base = {**BASE, "folds": 2, "epochs": 1}
    space = parse_space({"lr": {"categorical": [GOOD]}, "dim": 16}, (base,))
    options = {"startup_trials": 1, "warmup_epochs": 0, "tensorboard": False, "plot": False}
    out = tmp_path / "study"
    result = search((base,), space, out, trials=1, log=lambda line: None, **options)
    folds = [
        json.loads((out / "trial-000" / f"fold-{fold}" / "results.json").read_text())
        for fold in range(2)
    ]
    assert all(set(run["per_seed"]["1"]["metrics"]) == {"val"} for run in folds)
    # every fold run got the fold floor (FOLD_MIN_EPOCHS, capped by its one epoch)
    for fold in range(2):
        run = json.loads(
            (out / "trial-000" / f"fold-{fold}" / "seed-1" / "results.json").read_text()
        )
        assert run["early_stop"]["min_epochs"] == 1
    values = [run["metrics"]["val"]["cold"]["recall@5"]["mean"] for run in folds]
    assert result["best"]["value"] == pytest.approx(sum(values) / 2)

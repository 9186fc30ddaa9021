"""The stopping rule: patience, minimum relative gain, time budget, minimum epochs; the trainer
applies the same rule that ``replay`` applies to a finished run's history."""

from __future__ import annotations

import pytest

from coldbrew import load_dataset
from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.training.build import build_trainer
from coldbrew.training.stopping import StopCount, StopRule, beats, replay, stop_line

# monitored values after epochs 1..7 and the cumulative seconds then (10 s an epoch)
VALUES = [0.100, 0.120, 0.121, 0.119, 0.122, 0.118, 0.117]
SECONDS = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]
# a run whose first epoch is a false peak: it dips, then climbs past it from epoch 5
LATE = [0.20, 0.15, 0.14, 0.13, 0.21, 0.25, 0.22, 0.21, 0.20]
LATE_SECONDS = [10.0 * epoch for epoch in range(1, 10)]


def test_beats_by_a_relative_margin():
    # 0.10 * (1 + 0.05) = 0.105: equal is not a gain, 0.1051 is
    assert not beats(0.105, 0.10, "max", 0.05)
    assert beats(0.1051, 0.10, "max", 0.05)
    # minimised: 2.0 * (1 - 0.1) = 1.8
    assert not beats(1.8, 2.0, "min", 0.1) and beats(1.79, 2.0, "min", 0.1)
    assert beats(0.0, None, "max") and not beats(float("nan"), None, "max")
    assert beats(-5.0, float("-inf"), "max", 0.5)  # an infinite start: no margin


def test_replay_plain_patience():
    # 0.121 (epoch 3) and 0.122 (epoch 5) reset the count; 0.118, 0.117: two without -> stop at 7
    result = replay(VALUES, SECONDS, StopRule(patience=2))
    assert (result.best_epoch, result.stop_epoch, result.reason) == (5, 7, "early_stop")
    assert result.best_value == 0.122 and result.seconds == 70.0


def test_replay_min_gain_stops_on_small_gains_but_keeps_the_best():
    # reference 0.10 -> 0.12 (> 0.105, reset); 0.121 < 0.12 * 1.05 = 0.126: a new best epoch (3)
    # but count 1; 0.119: count 2 -> stop after epoch 4, at 40 s
    result = replay(VALUES, SECONDS, StopRule(patience=2, min_gain=0.05))
    assert (result.best_epoch, result.stop_epoch, result.seconds) == (3, 4, 40.0)


def test_replay_time_budget_and_end():
    result = replay(VALUES, SECONDS, StopRule(patience=7, time_budget=25.0))
    assert (result.best_epoch, result.stop_epoch, result.reason) == (3, 3, "time_budget")
    result = replay(VALUES, SECONDS, StopRule(patience=7))
    assert (result.best_epoch, result.stop_epoch, result.reason) == (5, 7, "end")
    with pytest.raises(ValueError):
        replay([], [], StopRule(patience=1))


def test_replay_min_epochs_holds_patience_until_the_floor():
    # no floor: epochs 2-4 without a gain on 0.20 -> stop after epoch 4, best epoch 1
    result = replay(LATE, LATE_SECONDS, StopRule(patience=3))
    assert (result.best_epoch, result.stop_epoch, result.best_value) == (1, 4, 0.20)
    # floor 6: the count reaches 3 at epoch 4 but cannot stop; 0.21 (5) and 0.25 (6) reset it;
    # 0.22, 0.21, 0.20 (7-9): 3 without a gain -> stop after epoch 9, best epoch 6
    result = replay(LATE, LATE_SECONDS, StopRule(patience=3, min_epochs=6))
    assert (result.best_epoch, result.stop_epoch, result.reason) == (6, 9, "early_stop")
    assert result.best_value == 0.25
    # a floor past the history: the history runs out first
    result = replay(LATE, LATE_SECONDS, StopRule(patience=3, min_epochs=20))
    assert (result.best_epoch, result.stop_epoch, result.reason) == (6, 9, "end")


def test_replay_the_time_budget_stops_a_run_below_its_floor():
    # 25 s: spent after epoch 3 (30 s), floor 6 or not
    result = replay(LATE, LATE_SECONDS, StopRule(patience=3, time_budget=25.0, min_epochs=6))
    assert (result.best_epoch, result.stop_epoch, result.reason) == (1, 3, "time_budget")


@pytest.mark.parametrize(
    "rule",
    [
        StopRule(2),
        StopRule(2, min_gain=0.05),
        StopRule(3, min_gain=0.01),
        StopRule(9, 0, 35.0),
        # patience 1 stops after epoch 4 (0.119); held to 5: 0.122 resets, 0.118 stops after 6
        StopRule(1, min_epochs=5),
        StopRule(1, 0, 25.0, min_epochs=5),
    ],
)
def test_the_trainer_stops_where_replay_says(rule):
    """The trainer's loop on scripted evaluations (10 s each) against ``replay``."""
    options = {
        "patience": rule.patience,
        "min_gain": rule.min_gain,
        "time_budget": rule.time_budget,
        "min_epochs": rule.min_epochs,
    }
    config = make_config({"data": "synthetic:small", "quiet": True, "epochs": 7, **options})
    trainer = build_trainer(config, load_dataset("synthetic:small", seed=3), log=lambda _: None)
    monitor = trainer.task.monitor

    def scripted():
        state = trainer.state
        state.train_seconds += 10.0
        state.epoch += 1
        return {}, {monitor.section: {monitor.metric: VALUES[state.epoch - 1]}}

    trainer._train_and_evaluate = scripted
    state = trainer.fit()
    expected = replay(VALUES, SECONDS, rule)
    assert (state.best_epoch, state.epoch) == (expected.best_epoch, expected.stop_epoch)
    assert state.best_score == expected.best_value
    assert trainer.stop_reason() == (None if expected.reason == "end" else expected.reason)


def test_a_bad_min_gain_or_budget_is_refused():
    with pytest.raises(ColdbrewError, match="min_gain"):
        make_config({"min_gain": -0.1})
    with pytest.raises(ColdbrewError, match="time_budget"):
        make_config({"time_budget": 0})


def test_a_run_spent_by_its_time_budget_says_so(tmp_path):
    from coldbrew.training.run import train

    config = make_config(
        {"data": "synthetic:small", "quiet": True, "epochs": 5, "time_budget": 1e-6}
    )
    results = train(config, tmp_path / "run", dataset=load_dataset("synthetic:small", seed=3))
    assert results["stopped"] == "time_budget" and results["epochs_run"] == 1
    assert (
        "time budget of 1e-06 s spent after epoch 1" in (tmp_path / "run" / "train.log").read_text()
    )


def test_a_run_spent_below_its_floor_says_so(tmp_path):
    from coldbrew.training.run import train

    overrides = {"epochs": 5, "time_budget": 1e-6, "min_epochs": 3}
    config = make_config({"data": "synthetic:small", "quiet": True, **overrides})
    results = train(config, tmp_path / "run", dataset=load_dataset("synthetic:small", seed=3))
    assert results["stopped"] == "time_budget" and results["epochs_run"] == 1
    assert results["early_stop"]["min_epochs"] == 3
    log = (tmp_path / "run" / "train.log").read_text()
    assert "spent after epoch 1, before its minimum of 3 epochs" in log


def test_the_stop_lines_name_the_floor():
    count = StopCount(best_epoch=1, without_gain=9)
    line = stop_line("early_stop", StopRule(4, min_epochs=10), count, "cold/recall@20", 10)
    assert line == (
        "early stop: cold/recall@20 did not improve for 9 evaluations (patience 4, held to "
        "epoch 10 at least); best epoch 1"
    )
    assert "held" not in stop_line("early_stop", StopRule(4), count, "cold/recall@20", 10)
    line = stop_line("time_budget", StopRule(4, 0, 60.0, 10), count, "cold/recall@20", 10)
    assert line == "time budget of 60 s spent after epoch 10; best epoch 1"  # floor reached


def test_a_fold_run_gets_a_floor_a_plain_run_none_and_a_flag_wins():
    from coldbrew.config.run_options import FOLD_MIN_EPOCHS

    assert FOLD_MIN_EPOCHS > 4  # above ALDI's and CLCRec's patience: the floor is no no-op
    assert make_config({}).resolved_min_epochs() == 0  # a plain train: today's rule
    fold = {"folds": 5, "fold": 2}
    assert make_config(fold).resolved_min_epochs() == FOLD_MIN_EPOCHS
    assert make_config({**fold, "epochs": 3}).resolved_min_epochs() == 3  # capped by epochs
    assert make_config(fold, {"min_epochs": 0}).resolved_min_epochs() == 0  # the old rule
    assert make_config({}, {"min_epochs": 6}).resolved_min_epochs() == 6
    with pytest.raises(ColdbrewError, match="min_epochs"):
        make_config({"min_epochs": -1})


def test_the_trainer_reads_the_resolved_floor():
    config = make_config({"data": "synthetic:small", "quiet": True, "folds": 2, "fold": 0})
    trainer = build_trainer(config, load_dataset("synthetic:small", seed=3), log=lambda _: None)
    assert trainer.stop_rule().min_epochs == config.resolved_min_epochs() > 0


def test_clcrec_waits_4_evaluations_the_original_protocol_7_and_a_flag_wins():
    assert make_config({"model": "clcrec"}).patience == 4
    assert make_config({"model": "aldi"}).patience == 4
    assert make_config({"model": "heater"}).patience == 7  # not replayed yet
    assert make_config({"model": "clcrec", "protocol": "original"}).patience == 7
    assert make_config({"model": "clcrec"}, {"patience": 9}).patience == 9

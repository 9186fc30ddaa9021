"""``--protocol original``: the original CLCRec's settings in one flag, and re-scoring a run."""

from __future__ import annotations

import json

import pytest

from coldbrew.cli import main
from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.training.run import train
from coldbrew.training.run_evaluation import evaluate_run


def test_the_original_protocol_sets_the_originals_defaults_under_given_options():
    config = make_config({"protocol": "original"})
    assert (config.batch_size, config.lr, config.epochs) == (256, 0.001, 1000)
    assert config.early_stop_metric == "all/recall@10" and config.patience == 7
    assert config.model_options.distinct_negatives is True
    assert make_config({"protocol": "original", "batch_size": 1024}).batch_size == 1024
    assert make_config().model_options.distinct_negatives is False


def test_the_original_protocol_loads_every_modality_whatever_has_says():
    assert make_config({"has_v": True}).resolved_features() == ["visual"]
    assert make_config({"has_v": True, "protocol": "original"}).resolved_features() is None


def test_a_run_under_the_original_protocol(tmp_path):
    settings = {"data": "synthetic:small", "protocol": "original", "epochs": 2, "quiet": True}
    results = train(make_config({**settings, "num_neg": 8}), tmp_path / "run")
    assert results["early_stop"]["monitor"] == "all/recall@10"
    assert results["config"]["clcrec"]["distinct_negatives"] is True
    # selection starts from 0.0: the best epoch's validation all recall@10 beat it
    best = results["history"][results["best_epoch"] - 1]["val"]["all"]["recall@10"]
    assert best > 0.0 and results["early_stop"]["best"] == best


def test_rescoring_a_run_under_each_protocol(tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["train", "--data", "synthetic:small", "--epochs", "1", "--num-neg", "8", "--quiet"]
    assert main([*argv, "--out", str(run)]) == 0
    ours = evaluate_run(run, splits=["val"])
    theirs = evaluate_run(run, splits=["val"], protocol="original")
    assert ours["protocol"] == "coldbrew" and theirs["protocol"] == "original"
    # in the original's cold ranking every warm item sits at 1e-15, above negative cold scores
    assert theirs["metrics"]["val"]["cold"] != ours["metrics"]["val"]["cold"]
    with pytest.raises(SystemExit):  # argparse refuses an unknown protocol
        main(["evaluate", "--run", str(run), "--protocol", "nope"])
    assert ours["cold_candidates"] == "all"  # the run's own (the default)
    capsys.readouterr()
    assert main(["evaluate", "--run", str(run), "--cold-candidates", "split", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cold_candidates"] == "split"
    saved = json.loads((run / "evaluation.json").read_text())
    assert saved["cold_candidates"] == "split"


def test_cold_candidates_is_a_run_option(tmp_path):
    assert make_config().cold_candidates == "all"
    assert make_config({"cold_candidates": "split"}).cold_candidates == "split"
    with pytest.raises(ColdbrewError, match="cold_candidates"):
        make_config({"cold_candidates": "own"})


def test_distinct_negatives_need_enough_free_items(tmp_path):
    from coldbrew.errors import ColdbrewError

    data = "synthetic:users=30,items=20,interactions=8"
    config = make_config({"data": data, "num_neg": 14, "distinct_negatives": True, "quiet": True})
    with pytest.raises(ColdbrewError, match="distinct"):
        train(config, tmp_path / "run")

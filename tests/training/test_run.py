"""The run directory: refusals before anything is written, resume rules, the lock, JSON,
evaluation on other data."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from coldbrew import load_dataset
from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.training.checkpoint import LAST, RunLock, atomic_write, load_checkpoint
from coldbrew.training.run import resume_config, train, write_json
from coldbrew.training.run_evaluation import evaluate_run

FAST = {
    "data": "synthetic:small",
    "batch_size": 512,
    "num_neg": 8,
    "lr": 0.01,
    "quiet": True,
    "epochs": 1,
}


@pytest.fixture(scope="module")
def dataset():
    return load_dataset("synthetic:small", seed=1)


def test_resume_refuses_flags_that_change_data_split_or_model(dataset, tmp_path):
    train(make_config(FAST), tmp_path / "run", dataset=dataset)
    for flags in ({"seed": 7}, {"data": "ml-100k"}, {"dim": 32}, {"features": "text"}, {"lr": 0.1}):
        with pytest.raises(ColdbrewError, match=f"--resume cannot change {next(iter(flags))}"):
            resume_config(tmp_path / "run", flags)
    assert resume_config(tmp_path / "run", {"epochs": 3, "quiet": True}).epochs == 3


def test_resume_refuses_fewer_epochs_than_the_run_has_trained(dataset, tmp_path):
    train(make_config(FAST, {"epochs": 2}), tmp_path / "run", dataset=dataset)
    before = (tmp_path / "run" / "config.yaml").read_text()
    with pytest.raises(ColdbrewError, match="has trained 2 epochs: --epochs 1 would train none"):
        resume_config(tmp_path / "run", {"epochs": 1})
    (tmp_path / "run" / "results.json").unlink()  # an interrupted run: its checkpoint counts
    with pytest.raises(ColdbrewError, match="has trained 2 epochs"):
        resume_config(tmp_path / "run", {"epochs": 1})
    assert (tmp_path / "run" / "config.yaml").read_text() == before


def test_resume_of_a_run_stopped_in_its_first_epoch_starts_it_again(dataset, tmp_path):
    def crash(state):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(make_config(FAST), tmp_path / "run", dataset=dataset, on_epoch_end=crash)
    assert not (tmp_path / "run" / ".lock").exists()  # released and removed on the way out
    (tmp_path / "run" / LAST).unlink()  # as if killed before the first checkpoint
    (tmp_path / "run" / "best.pt").unlink()
    (tmp_path / "run" / ".lock").write_text("process 1")  # left by a process killed with -9
    results = train(make_config(FAST), tmp_path / "run", dataset=dataset, resume=True)
    assert results["epochs_run"] == 1
    assert not (tmp_path / "run" / ".lock").exists()
    assert (
        "no checkpoint yet: starting it again from epoch 1"
        in (tmp_path / "run" / "train.log").read_text()
    )


def test_a_second_process_on_a_run_directory_is_refused(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(ColdbrewError, match=r"is in use by process \d+"):
            with RunLock(tmp_path):
                pass
    with RunLock(tmp_path):  # released: usable again
        pass


def hold_the_lock_in_turns(run_dir: str, rounds: int) -> int:
    """Take the lock ``rounds`` times; inside, claim ``inside`` exclusively (O_EXCL): a second
    holder at the same moment would fail to create it. Returns how often the lock was busy."""
    import os
    from pathlib import Path

    busy, done = 0, 0
    while done < rounds:
        try:
            with RunLock(Path(run_dir)):
                marker = os.open(os.path.join(run_dir, "inside"), os.O_CREAT | os.O_EXCL)
                os.close(marker)
                os.unlink(os.path.join(run_dir, "inside"))
                done += 1
        except ColdbrewError:
            busy += 1
    return busy


def test_removing_the_lock_file_keeps_the_lock_exclusive(tmp_path):
    # three processes take and release (and so remove) the lock in a tight loop: a process that
    # locked a file its holder then removed must not hold it beside one that made a new file
    # (removing the file after releasing it, not before, fails here: FileExistsError on inside)
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(3) as pool:
        busy = pool.starmap(hold_the_lock_in_turns, [(str(tmp_path), 300)] * 3)
    assert sum(busy) > 0  # they did contend
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def test_atomic_writes_use_unique_temporaries(tmp_path, monkeypatch):
    names = []
    import tempfile

    real = tempfile.mkstemp

    def recording(**options):
        descriptor, name = real(**options)
        names.append(name)
        return descriptor, name

    monkeypatch.setattr(tempfile, "mkstemp", recording)
    for text in (b"one", b"two"):
        atomic_write(tmp_path / "file", lambda handle, text=text: handle.write(text))
    assert len(set(names)) == 2 and (tmp_path / "file").read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["file"]  # no temporary left behind


def test_out_naming_a_file_or_an_unwritable_folder_fails_before_loading(tmp_path, monkeypatch):
    import coldbrew.training.run as run_module

    def no_loading(config):
        raise AssertionError("data was loaded")

    monkeypatch.setattr(run_module, "load_run_dataset", no_loading)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ColdbrewError, match="is a file"):
        train(make_config(FAST), tmp_path / "file")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if not __import__("os").access(locked, __import__("os").W_OK):  # root can write anywhere
        with pytest.raises(ColdbrewError, match="is not writable"):
            train(make_config(FAST), locked / "run")


def test_results_json_writes_infinities_as_null(tmp_path):
    write_json({"best": -math.inf, "nested": [math.nan, 1.0]}, tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text()) == {"best": None, "nested": [None, 1.0]}


def test_the_run_records_its_data_as_an_absolute_path(tmp_path, monkeypatch):
    from coldbrew.data.loaders.synthetic import load as synthetic_load

    folder = tmp_path / "mydata"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        "coldbrew.training.run.load_run_dataset", lambda config: synthetic_load(seed=1)
    )
    train(make_config({**FAST, "data": "mydata"}), tmp_path / "run")
    saved = (tmp_path / "run" / "config.yaml").read_text()
    assert f"data: {folder}" in saved


def test_early_stop_metric_group_missing_from_validation_is_refused(dataset, tmp_path):
    config = make_config({**FAST, "early_stop_metric": "nope/recall@20"})
    with pytest.raises(ColdbrewError, match="not in validation"):
        train(config, tmp_path / "run", dataset=dataset)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "model, options, monitored",
    [
        ("bpr", {}, "warm/recall@20"),  # its cold scores are all zero
        ("bpr", {"ks": [10, 50]}, "warm/recall@10"),  # the smallest K without 20
        ("bpr", {"early_stop_metric": "cold/ndcg@20"}, "cold/ndcg@20"),  # told otherwise
        ("clcrec", {}, "cold/recall@20"),
    ],
)
def test_each_model_monitors_its_own_group_unless_told(dataset, model, options, monitored):
    from coldbrew.tasks import build_task

    config = make_config({**FAST, "model": model, "num_neg": 1, **options})
    task = build_task("recommendation", dataset, config, torch.device("cpu"))
    assert task.monitor.key == monitored


def test_a_model_monitors_all_where_validation_lacks_its_group(dataset):
    import dataclasses

    from coldbrew.tasks import build_task

    cold_only = dataclasses.replace(dataset, splits={"val": {**dataset.splits["val"]}})
    del cold_only.splits["val"]["warm"]  # as ml-1m-coldstart's validation: no warm group
    config = make_config({**FAST, "model": "bpr", "num_neg": 1})
    task = build_task("recommendation", cold_only, config, torch.device("cpu"))
    assert task.monitor.key == "all/recall@20"


def test_a_bpr_run_selects_its_epoch_by_warm_recall(dataset, tmp_path):
    results = train(
        make_config({**FAST, "model": "bpr", "num_neg": 1}), tmp_path / "run", dataset=dataset
    )
    assert results["early_stop"]["monitor"] == "warm/recall@20"
    assert results["early_stop"]["best"] == results["metrics"]["val"]["warm"]["recall@20"]


def test_num_neg_above_the_warm_items_is_a_clear_error(tmp_path):
    data = "synthetic:users=30,items=20,interactions=5"
    with pytest.raises(ColdbrewError, match=r"num_neg 500 is larger than the \d+ warm items"):
        train(make_config({**FAST, "data": data, "num_neg": 500}), tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("batch_size", [1, 2])
def test_tiny_batches_and_num_neg_equal_to_the_warm_items_train(tmp_path, batch_size):
    # issue 16.1: 1 + K draws covering fewer than 1 + K distinct items crashed the CPU path
    dataset = load_dataset("synthetic:users=12,items=10,interactions=4", seed=1)
    num_warm = len(dataset.warm_items)
    config = make_config({**FAST, "batch_size": batch_size, "num_neg": num_warm})
    results = train(config, tmp_path / "run", dataset=dataset)
    assert results["epochs_run"] == 1 and math.isfinite(results["history"][0]["losses"]["loss"])


def test_evaluate_on_data_with_other_features_uses_those_features(dataset, tmp_path):
    train(make_config(FAST), tmp_path / "run", dataset=dataset)
    own = evaluate_run(tmp_path / "run", splits=["val"])["metrics"]["val"]
    # the same interactions with the item features shuffled across items: cold items now
    # carry other items' content, so cold scores (and metrics) must change
    from coldbrew.data.loaders import synthetic

    shuffled = synthetic.load("synthetic:small", seed=1)
    permutation = np.random.default_rng(0).permutation(shuffled.num_items)
    shuffled.features = {name: f[permutation] for name, f in shuffled.features.items()}
    import coldbrew.training.run_evaluation as evaluation_module

    real = evaluation_module.load_run_dataset
    evaluation_module.load_run_dataset = lambda config: shuffled
    try:
        other = evaluate_run(tmp_path / "run", data="other", splits=["val"])["metrics"]["val"]
    finally:
        evaluation_module.load_run_dataset = real
    assert other["cold"] != own["cold"]
    assert other["warm"] == own["warm"]  # warm items are scored by their ID embeddings


def test_checkpoints_hold_no_data(dataset, tmp_path):
    train(make_config(FAST), tmp_path / "run", dataset=dataset)
    state = load_checkpoint(tmp_path / "run" / "best.pt")["model"]
    assert set(state) == {
        "user_embedding",
        "item_embedding",
        "encoder.layer1.weight",
        "encoder.layer1.bias",
        "encoder.layer2.weight",
        "encoder.layer2.bias",
    }


def test_garbage_checkpoint_is_a_one_line_error_without_unsafe_advice(tmp_path):
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint at all")
    with pytest.raises(ColdbrewError) as caught:
        load_checkpoint(tmp_path / "bad.pt")
    assert "weights_only=False" not in str(caught.value) and "\n" not in str(caught.value)
    torch.save({"something": 1}, tmp_path / "other.pt")
    with pytest.raises(ColdbrewError, match="not a coldbrew checkpoint"):
        load_checkpoint(tmp_path / "other.pt")


def test_evaluate_a_split_the_data_lacks_writes_nothing(tmp_path):
    dataset = load_dataset("synthetic:small", seed=1)
    dataset.splits.pop("test")
    train(make_config(FAST), tmp_path / "run", dataset=dataset)
    import coldbrew.training.run_evaluation as evaluation_module

    real = evaluation_module.load_run_dataset
    evaluation_module.load_run_dataset = lambda config: dataset
    try:
        with pytest.raises(ColdbrewError, match="has no test split"):
            evaluate_run(tmp_path / "run", splits=["test"])
    finally:
        evaluation_module.load_run_dataset = real
    assert not (tmp_path / "run" / "evaluation.json").exists()


def test_extending_a_cosine_run_rebuilds_the_schedule_and_says_so(dataset, tmp_path):
    config = make_config({**FAST, "lr_schedule": "cosine", "epochs": 1})
    train(config, tmp_path / "run", dataset=dataset)
    longer = resume_config(tmp_path / "run", {"epochs": 2})
    results = train(longer, tmp_path / "run", dataset=dataset, resume=True)
    assert results["epochs_run"] == 2
    log = (tmp_path / "run" / "train.log").read_text()
    assert "cosine schedule rebuilt for 2 epochs (was 1)" in log


def test_a_diverging_loss_stops_the_run_and_says_why(dataset, tmp_path):
    from coldbrew.training.trainer import DivergedLoss

    # lr 1e6: the first epoch's mean loss is ~1e20 against ~4 at the first step
    with pytest.raises(DivergedLoss, match=r"diverged: epoch 1's mean .* learning rate \(1e\+06\)"):
        train(make_config(FAST, {"lr": 1e6, "epochs": 3}), tmp_path / "run", dataset=dataset)
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["stopped"] == "diverged" and results["history"] == []
    assert results["processes"] == 1
    assert "diverged" in (tmp_path / "run" / "train.log").read_text()


def test_a_full_disk_while_saving_leaves_the_previous_checkpoint_and_results(
    tmp_path, monkeypatch, capsys
):
    import errno

    import coldbrew.training.checkpoint as checkpoint
    from coldbrew.cli import main

    run = tmp_path / "run"
    argv = ["train", "--data", "synthetic:small", "--num-neg", "8", "--quiet", "--epochs", "1"]
    assert main([*argv, "--out", str(run)]) == 0
    before = {path.name: path.read_bytes() for path in run.iterdir() if path.suffix != ".log"}

    def fill_the_disk(payload, handle):
        handle.write(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint.torch, "save", fill_the_disk)
    assert main(["train", "--resume", str(run), "--epochs", "2", "--quiet"]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "No space left on device" in error
    assert f"cannot write {run}/" in error and "the previous one is intact" in error
    for name in (LAST, "best.pt", "results.json"):
        assert (run / name).read_bytes() == before[name], name
    assert not [path for path in run.iterdir() if path.name.endswith(".tmp")]


def test_written_files_take_the_umask_not_a_private_mode(tmp_path):
    import os

    previous = os.umask(0o022)
    try:
        atomic_write(tmp_path / "results.json", lambda handle: handle.write(b"{}"))
    finally:
        os.umask(previous)
    assert (tmp_path / "results.json").stat().st_mode & 0o777 == 0o644


def test_a_batch_larger_than_the_training_data_is_said(dataset, tmp_path):
    samples = int(dataset.train.nnz)
    with pytest.warns(UserWarning, match=f"more than the {samples:,} training samples"):
        train(make_config(FAST, {"batch_size": samples + 1}), tmp_path / "run", dataset=dataset)


def test_resumed_runs_count_the_time_of_every_session(dataset, tmp_path, monkeypatch):
    import time

    from coldbrew.training.trainer import Trainer

    real_epoch = Trainer.train_epoch

    def slow_epoch(self):
        time.sleep(0.3)  # the first session's epochs are long, the resumed ones short
        return real_epoch(self)

    monkeypatch.setattr(Trainer, "train_epoch", slow_epoch)
    train(make_config(FAST, {"epochs": 2}), tmp_path / "run", dataset=dataset)
    monkeypatch.setattr(Trainer, "train_epoch", real_epoch)
    results = train(resume_config(tmp_path / "run", {"epochs": 3}), tmp_path / "run", resume=True)
    timing = results["timing"]
    assert timing["train_seconds"] >= 0.6
    assert timing["wall_seconds"] >= timing["train_seconds"] + timing["eval_seconds"]
    # resuming the finished run trains nothing and keeps its time
    again = train(resume_config(tmp_path / "run"), tmp_path / "run", resume=True)["timing"]
    assert again["wall_seconds"] >= timing["train_seconds"] + timing["eval_seconds"]
    assert again["train_seconds"] == timing["train_seconds"]


def test_the_run_records_a_text_encoder_folder_as_an_absolute_path(tmp_path, monkeypatch):
    from coldbrew.training.run_dir import absolute_data

    (tmp_path / "encoder").mkdir()
    monkeypatch.chdir(tmp_path)
    config = absolute_data(make_config({**FAST, "text_encoder": "encoder"}))
    assert config.text_encoder.spelling == str(tmp_path / "encoder")
    assert absolute_data(make_config(FAST)).text_encoder.spelling == "minilm"


def test_a_one_user_file_is_refused_before_the_backbone_trains(tmp_path, monkeypatch):
    import pandas as pd

    from coldbrew import Dataset
    from coldbrew.registry import ModelSpec

    def no_backbone(*args, **kwargs):
        raise AssertionError("the backbone was trained")

    monkeypatch.setattr(ModelSpec, "build_teacher", no_backbone)
    items = pd.DataFrame({"item": [f"b{i}" for i in range(12)], "year": range(1990, 2002)})
    events = pd.DataFrame({"user": ["alice"] * 10, "item": [f"b{i}" for i in range(10)]})
    dataset = Dataset.from_frames(events, items, numeric=["year"])
    config = make_config(FAST, {"model": "aldi", "features": "numeric"})
    with pytest.raises(ColdbrewError, match=r"1 of the 1 training user\(s\) know every warm item "):
        train(config, tmp_path / "run", dataset=dataset)
    with pytest.raises(ColdbrewError, match=r"\(e\.g\. user 'alice'\).*add other users"):
        train(config, tmp_path / "run", dataset=dataset)
    assert not (tmp_path / "run").exists()


def test_too_few_free_items_for_distinct_negatives_are_refused_by_the_users_id(tmp_path):
    import pandas as pd

    from coldbrew import Dataset

    items = pd.DataFrame({"item": [f"b{i}" for i in range(12)], "year": range(1990, 2002)})
    rows = [("alice", f"b{i}") for i in range(9)] + [("bob", "b9"), ("bob", "b0")]
    dataset = Dataset.from_frames(pd.DataFrame(rows, columns=["user", "item"]), items)
    # 10 warm items: alice has 1 free, bob 8; num_neg 8 drawn without replacement
    config = make_config(FAST, {"model": "clcrec", "distinct_negatives": True})
    with pytest.raises(ColdbrewError, match=r"1 training user\(s\) .* \(e\.g\. user 'alice': 1\)"):
        train(config, tmp_path / "run", dataset=dataset)
    assert not (tmp_path / "run").exists()

"""Several processes on the CPU (gloo), as torchrun runs them; out-of-memory recovery."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import torch
import torch.multiprocessing as mp

from coldbrew import load_dataset
from coldbrew.config import make_config
from coldbrew.models.base import Batch
from coldbrew.training.distributed import Distributed
from coldbrew.training.memory.safety import OutOfMemory
from coldbrew.training.run import build_trainer, train
from coldbrew.training.run_evaluation import evaluate_run

STEP = {"data": "synthetic:small", "num_neg": 8, "num_sample": 0.0, "quiet": True, "device": "cpu"}
ROWS = 128


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fixed_batch(num_users: int, num_items: int) -> Batch:
    generator = torch.Generator().manual_seed(3)
    users = torch.randint(num_users, (ROWS,), generator=generator)
    return Batch(users, torch.randint(num_items, (ROWS, 9), generator=generator))


def one_step(distributed: Distributed, batch_size: int) -> torch.Tensor:
    """One SGD step on the fixed batch's rows this process owns; all parameters, flattened."""
    torch.set_num_threads(1)
    dataset = load_dataset("synthetic:small", seed=2)
    config = make_config({**STEP, "batch_size": batch_size})
    trainer = build_trainer(config, dataset, distributed=distributed)
    batch = fixed_batch(dataset.num_users, dataset.num_items)
    trainer.task.make_batch = lambda part: Batch(batch.users[part], batch.items[part])
    trainer.optimizer = torch.optim.SGD(trainer.model.parameters(), lr=1.0)  # update = gradient
    trainer.train_step(torch.arange(ROWS))
    return torch.cat([p.detach().reshape(-1) for p in trainer.model.parameters()])


def rank_main(rank: int, port: int, folder: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2")
    distributed = Distributed.from_environment()
    try:
        parameters = one_step(distributed, batch_size=ROWS // 2)
        torch.save(parameters, os.path.join(folder, f"rank{rank}.pt"))
    finally:
        distributed.stop()


def test_two_ranks_with_half_batches_take_the_one_process_step(tmp_path):
    mp.spawn(rank_main, args=(free_port(), str(tmp_path)), nprocs=2, join=True)
    single = one_step(Distributed(), batch_size=ROWS)
    for rank in (0, 1):  # DDP keeps the replicas equal, and equal to one process on all rows
        torch.testing.assert_close(torch.load(tmp_path / f"rank{rank}.pt"), single)


def test_a_rank_takes_its_slice_of_each_global_step():
    index = torch.arange(10)
    parts = [Distributed(rank, rank, 3).shard(index).tolist() for rank in range(3)]
    assert parts == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    # fewer samples than ranks: every rank still gets one (it must join the all-reduce)
    assert [Distributed(r, r, 3).shard(torch.tensor([5])).tolist() for r in range(3)] == [[5]] * 3


def torchrun(*arguments: str, restarts: int = 0) -> list[str]:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    return [*command, f"--max-restarts={restarts}", "-m", "coldbrew", "train", *arguments]


RUN = ["--data", "synthetic:small", "--num-neg", "8", "--batch-size", "128", "--quiet"]


def test_a_two_rank_run_writes_one_run_and_evaluates_like_one_process(tmp_path):
    run = tmp_path / "run"
    environment = {**os.environ, "COLDBREW_INJECT_OOM": "2"}
    done = subprocess.run(
        torchrun(*RUN, "--epochs", "2", "--out", str(run)),
        env=environment,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = sorted(p.name for p in run.iterdir() if not p.name.startswith("events.out.tfevents."))
    assert names == [
        "best.pt", "config.yaml", "curves.png", "last.pt", "results.json", "train.log"
    ]  # fmt: skip
    assert len(list(run.glob("events.out.tfevents.*"))) == 1  # rank 0 alone logs the curves
    results = json.loads((run / "results.json").read_text())
    assert results["processes"] == 2
    log = (run / "train.log").read_text()
    # both ranks hit the injected fault; rank 0 alone says so, once
    assert log.count("out of memory at optimizer step 2: micro-batch 128 -> 64") == 1
    # the run's metrics were ranked in two shards of users, their totals all-reduced: equal to
    # one process ranking every user, up to float64 rounding (sums added in another order)
    single = evaluate_run(run, device="cpu")["metrics"]
    for split in ("val", "test"):
        for group, values in single[split].items():
            assert results["metrics"][split][group] == pytest.approx(values, rel=1e-12, abs=1e-15)


@pytest.mark.slow
def test_a_killed_worker_is_restarted_and_the_run_completes(tmp_path):
    run = tmp_path / "run"
    arguments = [*RUN, "--batch-size", "16", "--epochs", "3", "--out", str(run)]
    process = subprocess.Popen(
        torchrun(*arguments, restarts=1), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 300
    while not (run / "last.pt").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (run / "last.pt").exists(), "the first epoch never finished"
    workers = worker_pids(process.pid)
    assert workers, "no worker processes found"
    os.kill(workers[-1], signal.SIGKILL)  # mid-epoch 2
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-2000:]
    results = json.loads((run / "results.json").read_text())
    assert results["epochs_run"] == 3
    assert "resuming" in (run / "train.log").read_text()


def worker_pids(launcher: int) -> list[int]:
    """The launcher's child processes (the workers), from /proc."""
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == launcher:
                children.append(int(entry))
    return sorted(children)


# ---------------------------------------------------------------------- out-of-memory recovery
FAST = {
    "data": "synthetic:small",
    "batch_size": 512,
    "num_neg": 8,
    "lr": 0.01,
    "quiet": True,
    "epochs": 2,
}


def test_an_out_of_memory_step_is_redone_with_half_the_micro_batch(
    tmp_path, monkeypatch, one_thread
):
    dataset = load_dataset("synthetic:small", seed=5)
    monkeypatch.setenv("COLDBREW_INJECT_OOM", "3")
    recovered = train(make_config(FAST), tmp_path / "oom", dataset=dataset)
    log = (tmp_path / "oom" / "train.log").read_text()
    assert log.count("out of memory at optimizer step 3: micro-batch 512 -> 256") == 1
    monkeypatch.delenv("COLDBREW_INJECT_OOM")

    from coldbrew.training.trainer import Trainer

    real = Trainer._accumulate

    def halve_at_step_three(self, index):
        if self.state.optimizer_steps == 3:
            self.micro_batch = 256
        return real(self, index)

    monkeypatch.setattr(Trainer, "_accumulate", halve_at_step_three)
    planned = train(make_config(FAST), tmp_path / "planned", dataset=dataset)
    assert recovered["metrics"] == planned["metrics"]
    assert [h["losses"] for h in recovered["history"]] == [h["losses"] for h in planned["history"]]


def test_out_of_memory_at_one_sample_is_a_clear_error_and_last_pt_survives(tmp_path, monkeypatch):
    dataset = load_dataset("synthetic:users=20,items=16,interactions=4", seed=1)
    config = make_config({**FAST, "batch_size": 1, "epochs": 2})
    steps_per_epoch = dataset.num_train
    monkeypatch.setenv("COLDBREW_INJECT_OOM", str(steps_per_epoch + 1))  # in epoch 2
    with pytest.raises(OutOfMemory, match=r"micro-batch of 1 sample \(process resident"):
        train(config, tmp_path / "run", dataset=dataset)
    from coldbrew.training.checkpoint import load_checkpoint

    assert load_checkpoint(tmp_path / "run" / "last.pt")["state"]["epoch"] == 1


def test_the_injection_variable_is_checked(monkeypatch):
    from coldbrew.errors import ColdbrewError
    from coldbrew.training.memory.safety import injected_steps

    monkeypatch.setenv("COLDBREW_INJECT_OOM", "3, 10")
    assert injected_steps() == {3, 10}
    for wrong in ("soon", "-5", "3,-1", ","):
        monkeypatch.setenv("COLDBREW_INJECT_OOM", wrong)
        with pytest.raises(ColdbrewError, match="COLDBREW_INJECT_OOM must be .*0 or more"):
            injected_steps()


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("COLDBREW_INJECT_OOM", "-5", "COLDBREW_INJECT_OOM must be optimizer step numbers"),
        ("COLDBREW_KEEP_FREED_MEMORY", "banana", "COLDBREW_KEEP_FREED_MEMORY must be 0 or 1"),
    ],
)
def test_bad_environment_variables_are_refused_before_the_run_starts(
    tmp_path, monkeypatch, capsys, variable, value, message
):
    from coldbrew.cli import main

    monkeypatch.setenv(variable, value)
    assert main(["train", "--data", "synthetic:small", "--out", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert not (tmp_path / "run").exists()


def test_an_injected_step_the_run_never_reaches_is_said(tmp_path, monkeypatch):
    dataset = load_dataset("synthetic:small", seed=5)
    monkeypatch.setenv("COLDBREW_INJECT_OOM", "99999")
    with pytest.warns(UserWarning, match="step\\(s\\) 99999, which this run never reached"):
        train(make_config(FAST), tmp_path / "run", dataset=dataset)

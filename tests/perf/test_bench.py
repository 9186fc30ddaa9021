"""`coldbrew bench`: one JSON line with what was measured, for each kind of measurement."""

import json

import pytest

from coldbrew.cli import main


@pytest.mark.parametrize("what", ["sample", "train", "eval"])
def test_bench_prints_one_json_line_of_measurements(capsys, what):
    argv = ["bench", what, "--data", "synthetic:users=60,items=40", "--num-neg", "4"]
    argv += ["--batch-size", "32", "--feature-dims", "8,4", "--seconds", "0.2", "--warmup", "1"]
    argv += ["--device", "cpu"]  # the CPU's sampler and device name are asserted below
    assert main([*argv, "--json"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert result["benchmark"] == what
    assert result["calls"] >= 1 and result["seconds"] > 0
    assert result["samples_per_second"] > 0
    assert result["peak_memory_bytes"] > 0
    assert sorted(result["feature_dims"].values()) == [4, 8]
    assert result["sampler"] == "rejection"  # the CPU default while the bitset fits
    assert result["device"].startswith("cpu")


def test_bench_train_passes_the_neighbor_terms_negatives(capsys):
    argv = ["bench", "train", "--data", "synthetic:users=60,items=40", "--num-neg", "4"]
    argv += ["--batch-size", "32", "--seconds", "0.1", "--warmup", "1", "--device", "cpu"]
    assert main([*argv, "--neighbor-loss", "--neighbor-negatives", "0", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["neighbor_loss"] is True and result["neighbor_negatives"] == 0

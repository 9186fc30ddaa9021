"""`coldbrew bench`: one JSON line with what was measured, for each kind of measurement."""

import json

import pytest

from coldbrew.cli import main
from teacher_support import with_svd_teacher  # noqa: F401  (the fixture used below)


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


def test_bench_times_each_variant_in_turn_with_its_own_options(capsys):
    argv = ["bench", "train", "--data", "synthetic:users=60,items=40", "--num-neg", "4"]
    argv += ["--batch-size", "32", "--seconds", "0.1", "--warmup", "1", "--device", "cpu"]
    argv += ["--against", "batch_size=16", "--against", "num-neg=8,dim=16"]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    smaller, wider = result["variants"]["batch_size=16"], result["variants"]["num-neg=8,dim=16"]
    assert (smaller["batch_size"], smaller["num_neg"]) == (16, 4)
    assert (wider["batch_size"], wider["num_neg"]) == (32, 8)
    assert result["calls"] >= 3 and smaller["calls"] == result["calls"] == wider["calls"]
    # medians: samples/s is the batch over the median call, the ratio the two rates'
    assert smaller["samples_per_second"] == pytest.approx(16 / smaller["seconds_per_call"])
    assert result["samples_per_second"] == pytest.approx(32 / result["seconds_per_call"])
    ratio = wider["samples_per_second"] / result["samples_per_second"]
    assert wider["throughput_over_base"] == pytest.approx(ratio)


@pytest.mark.parametrize(
    ("against", "named"),
    [("data=ml-100k", "cannot change data"), ("lm", "OPTION=VALUE"), ("=3", "OPTION=VALUE")],
)
def test_bench_refuses_a_variant_it_cannot_run_beside_the_run(capsys, against, named):
    argv = ["bench", "train", "--data", "synthetic:small", "--against", against]
    assert main(argv) == 2
    assert named in capsys.readouterr().err


def test_variant_flags_keep_commas_inside_a_value():
    from coldbrew.cli.bench import variant_flags

    assert variant_flags("model=lm,lora=8,16,lm-mode=dynamic") == {
        "model": "lm",
        "lora": "8,16",
        "lm_mode": "dynamic",
    }


@pytest.mark.usefixtures("with_svd_teacher")
def test_bench_gives_negatives_only_to_the_models_that_draw_them(capsys):
    # content KNN has no num_neg; the DeepMusic variant gets bench's default, 128
    argv = ["bench", "eval", "--model", "knn", "--data", "synthetic:small", "--seconds", "0.1"]
    argv += ["--warmup", "0", "--device", "cpu", "--against", "model=deepmusic", "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["model"], result["num_neg"]) == ("knn", None)
    assert result["variants"]["model=deepmusic"]["num_neg"] == 128
    assert main([*argv[:-3], "--num-neg", "8"]) == 2
    assert "--num-neg: model knn draws no negatives" in capsys.readouterr().err


@pytest.mark.parametrize("knn", [["--model", "knn"], ["--against", "model=knn"]])
def test_bench_train_refuses_a_model_with_nothing_to_train(capsys, knn):
    assert main(["bench", "train", "--data", "synthetic:small", *knn]) == 2
    assert "knn has nothing to train: bench eval measures its scoring" in capsys.readouterr().err


def test_bench_without_data_says_it_measures_generated_data(capsys):
    argv = ["bench", "sample", "--num-neg", "4", "--seconds", "0.1", "--warmup", "0", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "no --data given: measuring on generated data (synthetic)" in captured.err
    assert json.loads(captured.out)["dataset"] == "synthetic"

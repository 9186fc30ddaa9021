"""coldbrew compare: one row per run, settings that differ, mean ± std for multi-seed runs."""

from __future__ import annotations

import json

import pytest

from coldbrew.cli import main
from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.research.boards.compare import compare_table, format_table
from coldbrew.research.seeds import seed_results


def single_run(seed: int, lr: float, recall: float, best_epoch: int) -> dict:
    return {
        "model": "clcrec",
        "dataset": {"name": "ml-1m-coldstart"},
        "metrics": {"val": {"cold": {"recall@20": recall, "ndcg@20": recall / 2}}},
        "best_epoch": best_epoch,
        "epochs_run": best_epoch + 7,
        "early_stop": {"monitor": "cold/recall@20", "mode": "max", "best": recall},
        "timing": {"train_seconds": 99.0, "eval_seconds": 9.0, "samples_per_second": 20000.0},
        "config": make_config({"seed": seed, "lr": lr}).to_dict(),
        "history": [
            {"epoch": epoch, "train_seconds": 10.0 * epoch, "eval_seconds": 1.0 * epoch}
            for epoch in range(1, best_epoch + 8)
        ],
    }


def write(run_dir, results) -> str:
    run_dir.mkdir(parents=True)
    (run_dir / "results.json").write_text(json.dumps(results))
    return str(run_dir)


def test_a_table_of_single_and_multi_seed_runs(tmp_path):
    seeds = {1: single_run(1, 0.002, 0.10, 2), 2: single_run(2, 0.002, 0.14, 4)}
    multi = seed_results(make_config({"lr": 0.002}), [1, 2], seeds)
    runs = [
        write(tmp_path / "multi", multi),
        write(tmp_path / "one", single_run(3, 0.004, 0.12, 3)),
    ]
    header, rows = compare_table(runs)
    assert header == [
        "run",
        "model",
        "data",
        "seeds",
        "lr",
        "val (chose)/cold/recall@20",
        "val (chose)/cold/ndcg@20",
        "best epoch",
        "s to best",
        "samples/s",
    ]  # fmt: skip  (runs without a report half: val, marked as the items that chose)
    # recall 0.10, 0.14: mean 0.12; std sqrt(((-0.02)^2 + 0.02^2) / 1) = 0.0283
    # seconds to best: 2 x 11 = 22 and 4 x 11 = 44: mean 33, std sqrt((121 + 121) / 1) = 15.6
    assert rows[0] == [
        runs[0], "clcrec", "ml-1m-coldstart", "1,2", "0.002",
        "0.1200 ± 0.0283", "0.0600 ± 0.0141", "3.0 ± 1.4", "33.0 ± 15.6", "20000 ± 0",
    ]  # fmt: skip
    assert rows[1] == [
        runs[1], "clcrec", "ml-1m-coldstart", "3", "0.004",
        "0.1200", "0.0600", "3", "33.0", "20000",
    ]  # fmt: skip
    markdown = format_table(header, rows, markdown=True).splitlines()
    assert markdown[0].startswith("| run | model |") and markdown[1].startswith("|---|")
    assert len(markdown) == 4


def test_cli_compare_and_its_refusal(tmp_path, capsys):
    first = write(tmp_path / "a", single_run(1, 0.002, 0.1, 2))
    second = write(tmp_path / "b", single_run(1, 0.002, 0.2, 2))
    assert main(["compare", first, second, "--metric", "val/cold/ndcg@20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "val (chose)/cold/ndcg@20" in lines[0] and "recall" not in lines[0]
    assert "lr" not in lines[0].split()  # same settings: no settings column
    assert lines[2].split()[4] == "0.1000"
    with pytest.raises(ColdbrewError, match="no results.json"):
        compare_table([str(tmp_path / "missing")])
    assert main(["compare", str(tmp_path / "missing")]) == 2
    capsys.readouterr()
    assert main(["compare", first, "--metric", "bogus"]) == 2
    error = capsys.readouterr().err
    assert "--metric 'bogus' is in none of these runs' results" in error
    assert "e.g. val/" in error and error.count("\n") == 1


def test_evaluate_names_the_seed_runs_of_a_multi_seed_run(tmp_path, capsys):
    (tmp_path / "seeds.json").write_text('{"seeds": [1, 2]}')
    assert main(["evaluate", "--run", str(tmp_path)]) == 2
    assert "multi-seed run: evaluate one seed's run" in capsys.readouterr().err


def test_runs_with_a_report_half_are_compared_on_it(tmp_path):
    """The default columns are report's: the validation items no choice read."""
    results = single_run(1, 0.002, 0.30, 2)  # val (the half that chose): 0.30
    results["metrics"]["report"] = {"cold": {"recall@20": 0.11, "ndcg@20": 0.05}}
    results["metrics"]["test"] = {"cold": {"recall@20": 0.09, "ndcg@20": 0.04}}
    header, rows = compare_table([write(tmp_path / "run", results)])
    assert header[4:8] == [
        "report/cold/recall@20", "report/cold/ndcg@20", "test/cold/recall@20", "test/cold/ndcg@20",
    ]  # fmt: skip
    assert rows[0][4:8] == ["0.1100", "0.0500", "0.0900", "0.0400"]


def test_runs_on_data_with_no_cold_split_are_compared_with_a_warning(tmp_path, capsys):
    """Their metric columns are empty: a warning says why and how to get scores."""
    for name, metrics in (("scored", {"val": {"cold": {"recall@20": 0.1}}}), ("unscored", {})):
        (tmp_path / name).mkdir()
        results = {**single_run(1, 0.001, 0.1, 2), "metrics": metrics}
        (tmp_path / name / "results.json").write_text(json.dumps(results))
    runs = [str(tmp_path / "scored"), str(tmp_path / "unscored")]
    assert main(["compare", *runs]) == 0
    captured = capsys.readouterr()
    assert f"{runs[1]} scored nothing: trained on data with no cold split" in captured.err
    assert runs[0] not in captured.err and "--cold-split time:0.2" in captured.err
    assert runs[1] in captured.out  # the table still lists its settings

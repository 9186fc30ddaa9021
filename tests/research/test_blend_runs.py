"""``coldbrew blend``: weights chosen on val, the blend saved as a run that evaluate, recommend
and compare take; what a blend refuses."""

from __future__ import annotations

import json

import pytest
import torch
from tiny_run import TINY

from coldbrew.cli import main
from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.research.blend import blend, choose_weights
from coldbrew.training.blend import run_vectors
from coldbrew.training.run import load_run_dataset, train
from coldbrew.training.run_evaluation import evaluate_run


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("blend")
    for dim in (8, 16):
        train(make_config(TINY, {"seed": 3, "dim": dim}), root / f"dim{dim}")
    return root / "dim8", root / "dim16"


def quiet(_line: str) -> None:
    pass


def test_a_run_blended_with_its_mirror_image_keeps_the_run(two_runs):
    # run B's vectors are A's with users negated: B ranks every list backwards, so any weight
    # on B above A's reverses the ranking, and equal weights tie everything; the best weights
    # put more on A and score exactly A's val cold recall@20
    first = two_runs[0]
    dataset = load_run_dataset(make_config(TINY, {"seed": 3}))
    users, items = run_vectors(first, dataset)
    weights, score = choose_weights(dataset, [(users, items), (-users, items)], "all", log=quiet)
    alone = json.loads((first / "results.json").read_text())["metrics"]["val"]["cold"]
    assert weights[0] > weights[1]
    assert score == pytest.approx(alone["recall@20"], abs=1e-9)


def test_blend_is_a_run_that_evaluate_recommend_and_compare_take(two_runs, tmp_path, capsys):
    out = tmp_path / "blend"
    results = blend(two_runs, out, overrides={"quiet": True}, log=quiet)
    config = (out / "config.yaml").read_text()
    assert "model: blend" in config and "weights:" in config
    evaluated = evaluate_run(out)["metrics"]
    assert evaluated["val"]["cold"] == pytest.approx(results["metrics"]["val"]["cold"])
    assert main(["recommend", str(out), "--user", "1", "--k", "3"]) == 0
    assert main(["compare", str(out), *map(str, two_runs)]) == 0
    assert "blend" in capsys.readouterr().out


def test_fixed_weights_from_the_command_line(two_runs, tmp_path, capsys):
    out = tmp_path / "fixed"
    runs = ",".join(map(str, two_runs))
    assert main(["blend", "--runs", runs, "--weights", "1,0", "--out", str(out), "--quiet"]) == 0
    blended = json.loads((out / "results.json").read_text())["metrics"]["val"]["cold"]
    alone = json.loads((two_runs[0] / "results.json").read_text())["metrics"]["val"]["cold"]
    assert blended["recall@20"] == pytest.approx(alone["recall@20"], abs=1e-9)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--weights", "1,2,3"], "needs 2 weights"),
        (["--weights", "0,0"], "all zero"),
        (["--weights", "a,b"], "--weights must be numbers"),
    ],
)
def test_bad_blends_are_refused_before_anything_is_written(two_runs, tmp_path, argv, message):
    out = tmp_path / "bad"
    runs = ",".join(map(str, two_runs))
    with pytest.raises(ColdbrewError, match=message):
        from coldbrew.cli import build_parser, handler

        args = build_parser().parse_args(["blend", "--runs", runs, "--out", str(out), *argv])
        handler("blend")(args)
    assert not out.exists()


def test_one_run_or_other_data_is_refused(two_runs, tmp_path):
    with pytest.raises(ColdbrewError, match="2 to 6 runs"):
        blend(two_runs[:1], tmp_path / "one", log=quiet)
    other = tmp_path / "other"
    train(make_config(TINY, {"seed": 4, "data": "synthetic:small,users=90,items=80"}), other)
    with pytest.raises(ColdbrewError, match="other data"):
        blend([two_runs[0], other], tmp_path / "mixed", log=quiet)


def test_blend_refuses_to_train():
    from coldbrew.models.blend import Blend

    with pytest.raises(ColdbrewError, match="nothing to train"):
        Blend(2, 3)(None)
    assert torch.is_tensor(Blend(2, 3).users)

"""``coldbrew blend``: weights chosen on val, the blend saved as a run that evaluate, recommend
and compare take; what a blend refuses."""

from __future__ import annotations

import json

import pytest
import torch

from coldbrew.cli import main
from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.evaluation import evaluate_embeddings
from coldbrew.models.blend import blended
from coldbrew.research.boards.blend import blend, choose_weights, weight_grid
from coldbrew.training.blend import run_vectors
from coldbrew.training.run import load_run_dataset, train
from coldbrew.training.run_evaluation import evaluate_run
from research_tiny_run import TINY

# 400 items, 80 of them cold: enough that recall@20 (what the weights are chosen on) is not 1
# for every ranking of the cold candidates
BLENDED = {**TINY, "data": "synthetic:small,users=120,items=400", "seed": 3}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("blend")
    for dim in (8, 16):
        train(make_config(BLENDED, {"dim": dim}), root / f"dim{dim}")
    return root / "dim8", root / "dim16"


def quiet(_line: str) -> None:
    pass


def test_the_chosen_weights_are_the_grid_point_with_the_best_val_cold_recall(two_runs):
    # the plain reference: every grid point blended and scored on its own; the choice is the
    # first best one in grid order, and its score is that point's
    dataset = load_run_dataset(make_config(BLENDED))
    components = [run_vectors(run, dataset) for run in two_runs]
    weights, score = choose_weights([(dataset, components)], "all", log=quiet)
    scores = {}
    for point in weight_grid(2):
        vectors = blended(components, list(point))
        metrics = evaluate_embeddings(dataset, vectors.users, vectors.items, "val", ks=(20,))
        scores[point] = metrics["cold"]["recall@20"]
    best = max(scores.values())
    assert score == pytest.approx(best, abs=1e-12)
    assert tuple(weights) == next(point for point, value in scores.items() if value == best)
    # the ends of the grid are each run alone: their own val cold recall@20
    for point, run in (((1.0, 0.0), two_runs[0]), ((0.0, 1.0), two_runs[1])):
        alone = json.loads((run / "results.json").read_text())["metrics"]["val"]["cold"]
        assert scores[point] == pytest.approx(alone["recall@20"], abs=1e-9)


def test_the_joint_objective_chooses_the_best_geometric_mean_of_both_conventions(two_runs):
    # the plain reference: every grid point scored under each convention on its own; joint
    # takes the first point whose sqrt(all × split) is largest
    dataset = load_run_dataset(make_config(BLENDED))
    components = [run_vectors(run, dataset) for run in two_runs]
    lines = []
    weights, score = choose_weights(
        [(dataset, components)], "all", objective="joint", log=lines.append
    )
    joint = {}
    for point in weight_grid(2):
        vectors = blended(components, list(point))
        each = [
            evaluate_embeddings(
                dataset, vectors.users, vectors.items, "val", ks=(20,), cold_candidates=convention
            )["cold"]["recall@20"]
            for convention in ("all", "split")
        ]
        joint[point] = (each[0] * each[1]) ** 0.5
    best = max(joint.values())
    assert score == pytest.approx(best, abs=1e-12)
    assert tuple(weights) == next(point for point, value in joint.items() if value == best)
    assert "joint val cold recall@20" in lines[-1] and "split" in lines[-1]


def test_the_objective_is_recorded_checked_and_read_back(two_runs, tmp_path, capsys):
    from coldbrew.research.boards.leaderboard import check_blend_objective

    out = tmp_path / "joint"
    runs = ",".join(map(str, two_runs))
    argv = ["blend", "--runs", runs, "--objective", "joint", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    assert "(weights chosen on val, joint objective)" in capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["blend"]["chosen_by"] == "joint"
    check_blend_objective(results, "joint", out)
    with pytest.raises(ColdbrewError, match="chosen by the joint objective, not monitored"):
        check_blend_objective(results, "monitored", out)
    # weights given: nothing is chosen, so nothing is recorded, and joint beside them is refused
    fixed = tmp_path / "fixed"
    blend(two_runs, fixed, weights=[0.5, 0.5], overrides={"quiet": True}, log=quiet)
    given = json.loads((fixed / "results.json").read_text())
    assert given["config"]["blend"]["chosen_by"] is None
    check_blend_objective(given, "monitored", fixed)  # as blends from before the record
    with pytest.raises(ColdbrewError, match="give it or the weights"):
        blend(two_runs, tmp_path / "both", weights=[0.5, 0.5], objective="joint", log=quiet)
    with pytest.raises(ColdbrewError, match="expected monitored or joint"):
        blend(two_runs, tmp_path / "bad", objective="best", log=quiet)
    assert not (tmp_path / "both").exists() and not (tmp_path / "bad").exists()


def test_blend_is_a_run_that_evaluate_recommend_and_compare_take(two_runs, tmp_path, capsys):
    out = tmp_path / "blend"
    results = blend(two_runs, out, overrides={"quiet": True}, log=quiet)
    config = (out / "config.yaml").read_text()
    assert "model: blend" in config and "weights:" in config
    evaluated = evaluate_run(out)["metrics"]
    assert evaluated["val"]["cold"] == pytest.approx(results["metrics"]["val"]["cold"])
    assert main(["recommend", "--run", str(out), "--user", "1", "--k", "3"]) == 0
    assert main(["compare", str(out), *map(str, two_runs)]) == 0
    assert "blend" in capsys.readouterr().out


def test_fixed_weights_from_the_command_line(two_runs, tmp_path, capsys):
    out = tmp_path / "fixed"
    runs = ",".join(map(str, two_runs))
    assert main(["blend", "--runs", runs, "--weights", "1,0", "--out", str(out), "--quiet"]) == 0
    assert "(weights given)" in capsys.readouterr().out
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
    train(make_config(BLENDED, {"seed": 4, "data": "synthetic:small,users=90,items=400"}), other)
    with pytest.raises(ColdbrewError, match="other data"):
        blend([two_runs[0], other], tmp_path / "mixed", log=quiet)


def test_blend_refuses_to_train():
    from coldbrew.models.blend import Blend

    with pytest.raises(ColdbrewError, match="nothing to train"):
        Blend(2, 3)(None)
    assert torch.is_tensor(Blend(2, 3).users)


def test_a_used_out_is_refused_before_the_weight_search_and_an_unfinished_one_resumes(
    two_runs, tmp_path, monkeypatch
):
    import coldbrew.research.boards.blend as blend_module

    out = tmp_path / "blend"
    first = blend(two_runs, out, overrides={"quiet": True}, log=quiet)
    (out / "results.json").unlink()  # interrupted before its results were written

    def no_search(*args, **kwargs):
        raise AssertionError("the weight search ran before --out was checked")

    monkeypatch.setattr(blend_module, "choose_weights", no_search)
    with pytest.raises(ColdbrewError, match="already exists and is not empty"):
        blend(two_runs, out, log=quiet)
    monkeypatch.undo()
    again = blend(two_runs, out, overrides={"quiet": True}, log=quiet, resume=True)
    assert again["metrics"]["val"]["cold"] == pytest.approx(first["metrics"]["val"]["cold"])


def test_blends_that_cannot_mean_anything_say_why(two_runs, tmp_path):
    import shutil

    with pytest.raises(ColdbrewError, match="names .*dim8 twice: a run blended with itself"):
        blend([two_runs[0], two_runs[0]], tmp_path / "self", log=quiet)
    seeds = tmp_path / "seeds"
    (seeds / "seed-1").mkdir(parents=True)
    (seeds / "seeds.json").write_text('{"seeds": [1]}')
    with pytest.raises(ColdbrewError, match="multi-seed run: blend one seed's runs, e.g. .*seed-1"):
        blend([two_runs[0], seeds], tmp_path / "multi", log=quiet)
    other_seed = tmp_path / "seed5"
    train(make_config(BLENDED, {"seed": 5}), other_seed)
    with pytest.raises(
        ColdbrewError, match="trained with seed 5, the blend's first run with seed 3"
    ):
        blend([two_runs[0], other_seed], tmp_path / "mixed", log=quiet)
    other_cut = tmp_path / "cut"  # chose on other items: maybe on the blend's report half
    train(make_config(BLENDED, {"report_share": 0.3}), other_cut)
    with pytest.raises(ColdbrewError, match="cut validation with report_share 0.3, selection_"):
        blend([two_runs[0], other_cut], tmp_path / "cuts", log=quiet)
    unfinished = tmp_path / "unfinished"
    shutil.copytree(two_runs[0], unfinished)
    (unfinished / "results.json").unlink()
    with pytest.warns(UserWarning, match="is unfinished .*coldbrew train --resume"):
        evaluate_run(unfinished)


def test_compare_says_what_a_folder_of_seed_runs_is_and_cuda_is_checked_first(
    two_runs, tmp_path, monkeypatch, capsys
):
    import shutil

    import coldbrew.research.boards.blend as blend_module

    board_blend = tmp_path / "blend-a+b"
    shutil.copytree(two_runs[0], board_blend / "seed-1")
    assert main(["compare", str(board_blend)]) == 2
    assert "holds one run per seed, no aggregate" in capsys.readouterr().err
    if not torch.cuda.is_available():
        monkeypatch.setattr(blend_module, "choose_weights", lambda *a, **k: 1 / 0)
        with pytest.raises(ColdbrewError, match="CUDA is not available"):
            blend(two_runs, tmp_path / "cuda", overrides={"device": "cuda"}, log=quiet)


def test_a_blend_on_data_with_no_cold_split_says_it_is_not_scored(tmp_path, capsys):
    from shop_support import shop_run

    first = shop_run(tmp_path / "clcrec")
    runs = [first, shop_run(tmp_path / "knn", model="knn", data=tmp_path / "clcrec" / "shop")]
    given = ",".join(str(run) for run in runs)
    assert main(["blend", "--runs", given, "--out", str(tmp_path / "chosen"), "--quiet"]) == 2
    error = capsys.readouterr().err
    assert "has no cold val users: nothing to choose weights on; give --weights" in error
    assert not (tmp_path / "chosen").exists()
    argv = ["blend", "--runs", given, "--weights", "1,1", "--out", str(tmp_path / "given")]
    assert main([*argv, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "not scored, the data has no cold val items" in out and "nan" not in out

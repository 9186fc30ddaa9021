"""A leaderboard's rows and how they are shown: each model's (or blend's) seeds scored under
every convention, as mean ± std per split, group and metric with the seeds' whole-run seconds
(``model_row``); the table's columns and cells (``table_cells``), its text or Markdown, and a
bar chart of the reported cold Recall@20 (``plot_board``). ``coldbrew.research.boards.leaderboard``
trains the runs these read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from coldbrew.registry import MODELS
from coldbrew.research.boards.blend_names import PREFIX
from coldbrew.research.boards.compare import NO_COLD_SIGNAL
from coldbrew.research.boards.encoder_rows import split_row
from coldbrew.research.summary import format_mean_std, mean_std, reported_split

METRICS = ("recall@20", "ndcg@20")
ONE_LIST = " (one list for all users)"  # beside a model that does not personalise
FEW_ITEMS = "<= {k} items"  # a cold column whose users rank no more items than its K


def seed_seconds(name: str, trained: dict) -> list:
    """Each seed's whole-run seconds of ``trained[name]`` (training, evaluation and a zoo
    model's backbone, cached or not); a blend's own seconds plus those of the runs it blends,
    an inner blend's with its runs' (its own are only the weight search and one evaluation)."""
    return [seconds_at(name, str(seed), trained) for seed in trained[name]["per_seed"]]


def seconds_at(name: str, seed: str, trained: dict) -> float:
    """``trained[name]``'s seconds at ``seed`` (as text), with those of its ``parts``."""
    results = trained[name]
    # a multi-seed run keys its seeds as JSON does ("3"), a blend as ints: by text
    entry = {str(key): value for key, value in results["per_seed"].items()}[seed]
    parts = results.get("parts", ())
    return run_seconds(entry) + sum(seconds_at(part, seed, trained) for part in parts)


def run_seconds(results: dict) -> float:
    """One run's seconds: its wall time and its backbone's training (absent in older runs)."""
    timing = results["timing"]
    return timing["wall_seconds"] + timing.get("backbone_seconds", 0.0)


def no_cold_signal(runs: Sequence[dict], split: str) -> bool:
    """Whether some seed's cold scores on ``split`` were all equal (``cold_signal`` 0.0, from
    ``coldbrew.evaluation.engine``): its cold metrics then measure how ties fall, no model."""
    flags = [run.get(split, {}).get("cold", {}).get("cold_signal") for run in runs]
    return any(flag == 0.0 for flag in flags)


def convention_metrics(seed_run: Path, convention: str, load_data=None) -> dict:
    """A seed's best checkpoint scored under ``convention``: the run's own metrics when it was
    trained under it (``own_metrics``), else its evaluation read back when already written,
    else scored now; ``load_data(config)``: its data from a cache shared by the board's runs."""
    from coldbrew.training.run_evaluation import evaluate_run

    if not json.loads((seed_run / "results.json").read_text()).get("metrics"):
        return {}  # data with no cold split: nothing to score (evaluate_run refuses it)
    own = own_metrics(seed_run, convention)
    if own is not None:
        return own
    path = seed_run / f"evaluation-{convention}.json"
    if path.exists():
        saved = json.loads(path.read_text())
        if saved.get("cold_candidates") == convention:
            return saved["metrics"]
    options = {"cold_candidates": convention, "output": path.name, "load_data": load_data}
    return evaluate_run(seed_run, **options)["metrics"]


def own_metrics(seed_run: Path, convention: str) -> dict | None:
    """The metrics a trained run wrote (``results.json``) when it was trained under
    ``convention`` in one process: the best checkpoint on every split, what a re-score would
    give (the val of its best epoch is that checkpoint's own). None otherwise (a blend's, a
    run of several processes, whose totals were summed in another order)."""
    from coldbrew.data.dataset import EVALUATION_SPLITS
    from coldbrew.training.run import RESULTS

    path = seed_run / RESULTS
    if not path.exists():
        return None
    results = json.loads(path.read_text())
    trained = "history" in results and results.get("processes", 1) == 1
    if not trained or results.get("config", {}).get("cold_candidates") != convention:
        return None
    metrics = {split: v for split, v in results["metrics"].items() if split in EVALUATION_SPLITS}
    return metrics or None


def model_row(
    model: str, trained: dict, out: Path, conventions: Sequence[str], load_data=None
) -> dict:
    """``{"model", "text_encoder", "one_list", "seeds", "wall_seconds", "metrics": {convention:
    {split: {group: {metric: mean_std}}}}, "no_cold_signal": [[convention, split], ...]}`` of
    one row's seeds (``model``: the row's name, ``aldi`` or ``aldi@mpnet@128``;
    ``text_encoder``: the encoder its name gives; ``one_list``: the model gives every user the
    same ranking)."""
    results = trained[model]
    seeds = results["seeds"]
    per_seed = {
        convention: [
            convention_metrics(out / model / f"seed-{seed}", convention, load_data)
            for seed in seeds
        ]
        for convention in conventions
    }
    metrics: dict = {}
    flagged = [
        [convention, split]
        for convention, runs in per_seed.items()
        for split in runs[0]
        if no_cold_signal(runs, split)
    ]
    for convention, runs in per_seed.items():
        for split in runs[0]:
            for group in runs[0][split]:
                for name in METRICS:
                    values = [run.get(split, {}).get(group, {}).get(name) for run in runs]
                    cell = metrics.setdefault(convention, {}).setdefault(split, {})
                    cell.setdefault(group, {})[name] = mean_std(values)
    wall = mean_std(seed_seconds(model, trained))
    summary = results.get("dataset") or next(iter(results["per_seed"].values())).get("dataset")
    trained_model, encoder = (model, None) if model.startswith(PREFIX) else split_row(model)
    return {
        "model": model,
        "text_encoder": encoder,  # its name's, on a board of several encoders; else None
        "one_list": trained_model in MODELS and not MODELS[trained_model].personalised,
        "seeds": seeds,
        "wall_seconds": wall,
        "metrics": metrics,
        "no_cold_signal": flagged,
        "candidates": candidate_counts(
            summary or {}, conventions, list(per_seed[conventions[0]][0])
        ),
    }


def candidate_counts(summary: dict, conventions: Sequence[str], splits: Sequence[str]) -> dict:
    """``{convention: {split: the cold items its users rank}}`` from a run's dataset summary:
    every cold item (``all``), or the split's own (``split``). A Recall@K over no more items
    than K is 1 whatever the model: tables mark such columns."""
    counts = {}
    for convention in conventions:
        for split in splits:
            own = summary.get(f"{split}_cold", {}).get("items")
            count = summary.get("cold_items") if convention == "all" else own
            counts.setdefault(convention, {})[split] = count
    return counts


def shown(split: str) -> str:
    """A split as a column names it: ``val`` is marked as the items that chose."""
    return "val (chose)" if split == "val" else split


def table_cells(rows: Sequence[dict]) -> tuple[list[str], list[list[str]]]:
    """Column names ``convention split/group metric`` for every measured combination, and the
    rows' ``mean ± std`` text. The splits shown are those that report: ``report`` (the
    validation items no choice read) and ``test``; ``val`` (the items that chose: best epoch,
    blend weights) only where the runs have no report half, marked so. leaderboard.json keeps
    every split. "no cold signal" fills the cold columns of a model whose cold
    scores were all equal: its numbers there only say how ties fell. A model that gives every
    user the same list is named with ``ONE_LIST``: its score is mostly which items a half holds."""
    keys = []
    for row in rows:
        for convention, splits in row["metrics"].items():
            for split, groups in splits.items():
                for group, names in groups.items():
                    keys += [(convention, split, group, name) for name in names]
    keys = list(dict.fromkeys(keys))
    reported = {c for c, s, _, _ in keys if s == "report"}
    keys = [key for key in keys if not (key[1] == "val" and key[0] in reported)]
    folds = list(
        dict.fromkeys((c, m) for row in rows for c, ms in row.get("folds", {}).items() for m in ms)
    )
    header = ["model"] + [f"{c} folds/cold {m}" for c, m in folds]
    header += [f"{c} {shown(s)}/{g} {m}" for c, s, g, m in keys] + ["seconds"]
    cells = []
    for row in rows:
        flagged = [list(pair) for pair in row.get("no_cold_signal", [])]
        text = [format_mean_std(row.get("folds", {}).get(c, {}).get(m)) for c, m in folds]
        text += [
            NO_COLD_SIGNAL
            if g == "cold" and [c, s] in flagged
            else FEW_ITEMS.format(k=m.partition("@")[2])
            if g == "cold" and few_items(row, c, s, m)
            else format_mean_std(row["metrics"].get(c, {}).get(s, {}).get(g, {}).get(m))
            for c, s, g, m in keys
        ]
        seconds = format_mean_std(row["wall_seconds"], digits=0)
        if row.get("fold_seconds"):  # a seed's folds and final run
            seconds = f"{row['wall_seconds']['mean'] + row['fold_seconds']['mean']:,.0f}"
        name = row["model"] + (ONE_LIST if row.get("one_list") else "")
        cells.append([name, *text, seconds])
    return header, cells


def few_items(row: dict, convention: str, split: str, metric: str) -> bool:
    """Whether ``split``'s users rank no more cold items than ``metric``'s K under
    ``convention``: its Recall@K is then 1 (and its NDCG@K near it) for any model."""
    count = row.get("candidates", {}).get(convention, {}).get(split)
    cutoff = metric.partition("@")[2]
    return count is not None and cutoff.isdigit() and count <= int(cutoff)


def format_board(header: list[str], cells: list[list[str]], *, markdown: bool = False) -> str:
    from coldbrew.research.boards.compare import format_table

    return format_table(header, cells, markdown=markdown)


def plot_board(rows: Sequence[dict], path: Path, *, log: Callable[[str], None]) -> Path | None:
    """Bars of report cold Recall@20 (val where there is no report half; else the first group
    measured) per model and convention, with the seeds' standard deviation as error bars."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        log("note: matplotlib is not installed: no leaderboard.png (pip install 'coldbrew[plot]')")
        return None
    conventions = list(dict.fromkeys(c for row in rows for c in row["metrics"]))
    if not conventions:  # data with no validation: only fold scores, in the table
        log("note: no report scores to plot (the data has no validation): no leaderboard.png")
        return None
    figure = Figure(figsize=(max(5, 1.2 * len(rows) + 2), 4), layout="constrained")
    axis = figure.subplots()
    width = 0.8 / max(len(conventions), 1)
    for index, convention in enumerate(conventions):
        means, errors = [], []
        for row in rows:
            measured = row["metrics"].get(convention, {})
            split, label = reported_split(measured)
            groups = measured.get(split, {})
            group = "cold" if "cold" in groups else next(iter(groups), None)
            value = groups.get(group, {}).get("recall@20") or {}
            means.append(value.get("mean") or 0.0)
            errors.append(value.get("std") or 0.0)
        positions = [position + index * width for position in range(len(rows))]
        axis.bar(positions, means, width, yerr=errors, capsize=3, label=f"{convention} candidates")
    axis.set_xticks(
        [position + width * (len(conventions) - 1) / 2 for position in range(len(rows))]
    )
    axis.set_xticklabels([row["model"] for row in rows])
    axis.set_ylabel(f"{label} cold Recall@20 (mean ± std over seeds)")
    axis.legend(fontsize=8)
    figure.savefig(path, dpi=100)
    return path

"""``coldbrew leaderboard``: several models, several seeds, one dataset; one table on both ranking
conventions of the cold group.

Each model is a multi-seed run ``OUT/MODEL`` (``coldbrew.research.seeds.train_seeds``: every
seed through the one way in) with the run options given (data, features, text encoder, epochs
...) and the model's own defaults. Every seed's best checkpoint is scored under both
conventions (``--cold-candidates``: ``all``, a split's users ranked over every cold item, as
CLCRec; ``split``, over that split's own cold items, as DropoutNet, Heater and ColdRec): under
its own by its training (its ``results.json``), under the other once, where it was trained
(its process with ``--jobs``), into ``OUT/MODEL/seed-N/evaluation-<convention>.json``; the
board's rows only read these files.

The table: per model, mean ± std over seeds of each metric for every split, group and
convention the data has, and the seconds a seed's run took (a blend's: its own plus those
of the runs it blends). A model whose cold scores were all equal shows "no cold signal" in its
cold columns instead of numbers that only say how ties fell. Resumable: a model whose seeds all
finished is not trained again (its settings must be the ones given now), and an evaluation
already written is read back. Writes ``leaderboard.json``, ``leaderboard.md`` and, with
matplotlib, ``leaderboard.png`` (report cold Recall@20 per model and convention, with the
seeds' standard deviation as error bars). The table reports ``report`` (the validation items no
choice read, ``coldbrew.data.splits.selection``) and ``test``; never the items that chose. The rows and
their table are ``coldbrew.research.boards.board``'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from coldbrew.config import TrainConfig
from coldbrew.errors import ColdbrewError
from coldbrew.research.boards.blend_names import (
    PREFIX,
    Member,
    blend_name,
    in_order,
    member_name,
    parse_blend,
)
from coldbrew.research.boards.board import format_board, model_row, plot_board, table_cells
from coldbrew.research.boards.encoder_rows import board_rows, row_config, row_model
from coldbrew.research.boards.model_runs import BoardPlan, check_same_settings, train_units

CONVENTIONS = ("all", "split")
LEADERBOARD_JSON, LEADERBOARD_MD, LEADERBOARD_PNG = (
    "leaderboard.json",
    "leaderboard.md",
    "leaderboard.png",
)


def parse_models(text: str) -> list[str]:
    """``"clcrec,knn"`` -> registered names, each once."""
    from coldbrew.registry import MODELS, resolve_model_name

    names = [resolve_model_name(part.strip()) for part in str(text).split(",") if part.strip()]
    if not names:
        raise ColdbrewError(
            f"--models needs at least one model, e.g. clcrec,knn ({', '.join(MODELS)})"
        )
    if len(set(names)) != len(names):
        raise ColdbrewError(f"--models names a model twice: {text!r}")
    if "blend" in names:
        raise ColdbrewError(
            "--models blend: a blend is made of the other models' runs, not trained; give "
            "--blend A+B (e.g. --models clcrec,knn --blend clcrec+knn)"
        )
    wrong = [name for name in names if MODELS[name].task != "recommendation"]
    if wrong:
        raise ColdbrewError(f"the leaderboard ranks recommenders; {', '.join(wrong)} is not one")
    return names


def board_preset(preset: dict) -> dict[str, str]:
    """A preset's ``leaderboard:`` section (models, text_encoders, blend, blend_objective,
    seeds, jobs), each value as the command line spells it (``"clcrec,aldi"``,
    ``"minilm,mpnet@128"``, ``"clcrec+aldi,clcrec+gar"``, ``"joint"``, ``"1,2,3"``, ``"2"``);
    lists are joined. Keys it lacks are left out; any other key is refused."""
    from coldbrew.config import BOARD_SECTION

    section = preset.get(BOARD_SECTION) or {}
    keys = ("models", "text_encoders", "blend", "blend_objective", "seeds", "jobs")
    if not isinstance(section, dict):
        raise ColdbrewError(f"{BOARD_SECTION}: expected a mapping of {', '.join(keys)}")
    unknown = sorted(set(section) - set(keys))
    if unknown:
        raise ColdbrewError(
            f"{BOARD_SECTION}: unknown key {unknown[0]!r}; it takes {', '.join(keys)}"
        )
    return {
        key: ",".join(map(str, value)) if isinstance(value, list) else str(value)
        for key, value in section.items()
    }


def model_option_owners(key: str) -> list[str]:
    """The models whose own options include ``key`` (none for a run option)."""
    from coldbrew.config import FIELDS, canonical_key
    from coldbrew.options import hints
    from coldbrew.registry import MODELS

    name = canonical_key(key)
    if name in FIELDS or name in MODELS:
        return []
    return [model for model, spec in MODELS.items() if name in hints(spec.config)]


def check_flat_options(base_layers: Sequence[dict], models: Sequence[str]) -> None:
    """A model's option written flat (it applies to every model) that some of ``models`` lack
    is refused with where to put it."""
    for layer in base_layers:
        for key, value in layer.items():
            owners = model_option_owners(key)
            lacking = [model for model in models if owners and model not in owners]
            if lacking:
                raise ColdbrewError(
                    f"option {key!r} (an option of {', '.join(owners)}) is written flat, so it "
                    f"applies to every model, and {', '.join(lacking)} has no such option: "
                    f"write it under its model in --config, e.g. {{{owners[0]}: {{{key}: {value}}}}}"
                )


def plan_board(
    base_layers: Sequence[dict],
    models: Sequence[str],
    blends: Sequence[Sequence[Member]],
    seeds: Sequence[int],
    out: Path,
    conventions: Sequence[str] = (),
    encoders: Sequence[str] = (),
) -> BoardPlan:
    """What the board in ``out`` trains, made once: every row's config (each option checked
    before anything is trained; a row per model, or per model and text encoder with
    ``encoders``: ``coldbrew.research.boards.encoder_rows``), with the rows and blends an
    earlier call trained there; each run is scored under ``conventions`` where it is trained."""
    check_flat_options(base_layers, models)
    rows = dict(board_rows(base_layers, models, encoders))
    rows, blends = with_earlier(out, rows, blends, base_layers)
    names, configs = tuple(rows), tuple(rows.values())
    return BoardPlan(configs, tuple(blends), tuple(seeds), out, tuple(conventions), names)


def with_earlier(
    out: Path,
    rows: dict[str, TrainConfig],
    blends: Sequence[Sequence[Member]],
    base_layers: Sequence[dict],
) -> tuple[dict[str, TrainConfig], list[list[Member]]]:
    """The rows' configs and the blends asked for, then those an earlier call trained in
    ``out``: one ``--out`` holds one setting, and its table covers every row trained there
    (``MODEL`` or ``MODEL@ENCODER``). A row trained there with other settings is refused
    before anything runs."""
    from coldbrew.registry import MODELS
    from coldbrew.research.seeds import is_multi_seed_run

    names = sorted(path.name for path in out.iterdir()) if out.is_dir() else []
    earlier = [n for n in names if row_model(n) in MODELS and is_multi_seed_run(out / n)]
    by_row = dict(rows)
    for name in earlier:
        config = by_row.get(name) or row_config(base_layers, name)
        check_earlier(out, config, name)
        by_row.setdefault(name, config)
    known = list(by_row)
    blends = [list(blend) for blend in blends]
    for name in names:
        if not name.startswith(PREFIX):
            continue
        try:
            found = parse_blend(name.removeprefix(PREFIX), known)
        except ColdbrewError:  # a blend of rows this call does not have
            continue
        if found not in blends:
            blends.append(found)
    return by_row, in_order(blends)


def check_earlier(out: Path, config: TrainConfig, row: str = "") -> None:
    """``OUT/ROW`` (the model's when ``row`` is empty) was trained with the settings given now.
    On folds its final run trained the epochs its folds chose, so the folds' first run is
    compared instead (and the final run when it is trained or read back, ``train_model``)."""
    from coldbrew.research.boards.cross_validation import fold_unit

    first_fold = fold_unit(config, (), out, 0, row=row)
    if config.folds and (first_fold.run_dir / "config.yaml").exists():
        check_same_settings(first_fold.run_dir, first_fold.config)
    else:
        check_same_settings(out / first_fold.row_name, config)


def train_models(
    plan: BoardPlan, *, jobs: int | str = 1, cache: Any = None, log: Callable[[str], None]
) -> dict[str, dict]:
    """``{model: its multi-seed results}``, training what is not finished yet; with ``jobs``
    above 1, that many models at once (``coldbrew.research.search.parallel``), the rest read
    back; ``cache`` loads each seed's data once here (a new one when None)."""
    from coldbrew.research.search.study import DataCache

    cache = cache if cache is not None else DataCache()
    units = plan.model_units()
    if jobs != 1:
        todo = [unit.config for unit in units.values() if not unit.finished()]
        if len(todo) > 1:
            load_text_vectors_first(todo, plan.seeds[0], cache, log)
    return train_units(units, jobs, cache, log)


def load_text_vectors_first(
    configs: Sequence[TrainConfig], seed: int, cache: Any, log: Callable[[str], None]
) -> None:
    """Load the data of the first of ``configs`` whose model reads the text block here (the
    first per text encoder), before their processes start: text vectors missing from the cache
    are encoded once, with this process's every thread, and the processes read them from the
    cache. (Left to the processes, one would encode with its share of the threads while the
    others wait: ``cache_lock``.)"""
    from coldbrew.registry import model_spec
    from coldbrew.research.seeds import seed_config

    firsts: dict[str, TrainConfig] = {}
    for config in configs:
        if model_spec(config.model).reads_text_vectors:
            firsts.setdefault(config.text_encoder.spelling, config)
    for encoder, config in firsts.items():
        which = f"its {encoder} text vectors" if len(firsts) > 1 else "its text vectors"
        log(f"loading {config.data} once before the processes start ({which})")
        cache(seed_config(config, seed))


def blend_models(
    blends: Sequence[Sequence[Member]],
    seeds: Sequence[int],
    out: Path,
    *,
    objective: str = "monitored",
    log,
) -> dict[str, dict]:
    """``{"blend-a+b": {"seeds", "per_seed", "parts"}}``: per seed, the members' seed runs (a
    model's, or an inner blend's, made earlier in ``blends``) blended with weights chosen on val
    by ``objective`` (``coldbrew.research.boards.blend``); a finished blend is read back, and refused if
    another objective chose its weights."""
    from coldbrew.research.boards.blend import blend, check_objective

    check_objective(objective)
    results = {}
    for members in blends:
        name = blend_name(members)
        per_seed = {}
        for seed in seeds:
            seed_out = out / name / f"seed-{seed}"
            if (seed_out / "results.json").exists():
                per_seed[seed] = json.loads((seed_out / "results.json").read_text())
                check_blend_objective(per_seed[seed], objective, seed_out)
                continue
            runs = [out / member_name(member) / f"seed-{seed}" for member in members]
            log(f"{name}: seed {seed}")
            options = {"overrides": {"quiet": True}, "log": log, "resume": True}
            options["objective"] = objective
            per_seed[seed] = blend(runs, seed_out, **options)  # an interrupted one is finished
        parts = [member_name(member) for member in members]
        results[name] = {"seeds": list(seeds), "per_seed": per_seed, "parts": parts}
    return results


def check_blend_objective(results: dict, objective: str, run_dir: Path) -> None:
    """A finished blend read back must have had its weights chosen by ``objective`` (a blend
    from before objectives were recorded was chosen by the monitored convention)."""
    options = (results.get("config") or {}).get("blend") or {}
    recorded = options.get("chosen_by") or "monitored"
    if recorded != objective:
        raise ColdbrewError(
            f"{run_dir}: its weights were chosen by the {recorded} objective, not {objective}; "
            f"give another --out, or --blend-objective {recorded}"
        )


def share(
    claims: str, plan: BoardPlan, objective: str, cache: Any, log: Callable[[str], None]
) -> None:
    """This worker's share of the board ``plan``, through ``claims``
    (``coldbrew.research.claims.board``): its runs, then its blends, made as without claims."""
    from coldbrew.research.boards.cross_validation import blend_on_folds
    from coldbrew.research.claims.board import share_board

    options = {"seeds": plan.seeds, "out": plan.out, "objective": objective, "log": log}
    if plan.folds:
        make_blends = partial(blend_on_folds, folds=plan.folds, cache=cache, **options)
    else:
        make_blends = partial(blend_models, **options)
    share_board(claims, plan, make_blends=make_blends, cache=cache, log=log)


def table_lock(out: Path):
    """The lock workers sharing a board take in turn to read it back and write its table."""
    from filelock import FileLock

    return FileLock(out / ".table.lock")


def leaderboard(
    base_layers: Sequence[dict],
    models: Sequence[str],
    seeds: Sequence[int],
    out: Path | str,
    *,
    conventions: Sequence[str] = CONVENTIONS,
    blends: Sequence[Sequence[Member]] = (),
    blend_objective: str = "monitored",
    plot: bool = True,
    jobs: int | str = 1,
    claims: str | None = None,
    text_encoders: Sequence[str] = (),
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train and score every model × seed (and each blend of them: its weights chosen on val
    under the run options' cold-candidate convention, or both at once with ``blend_objective``
    ``"joint"``), ``jobs`` models at once (or ``auto``); write and return the board. With
    ``text_encoders``, every model that reads the text block is a row per encoder
    (``MODEL@ENCODER``, ``coldbrew.research.boards.encoder_rows``), all on the same split or
    folds. With
    ``claims`` (a database URL or a shared folder) this is one worker of many sharing the board
    in ``out`` (``coldbrew.research.claims.board``)."""
    from coldbrew.research.boards.board_text import short_table
    from coldbrew.research.search.study import DataCache
    from coldbrew.training.checkpoint import RunLock
    from coldbrew.training.run import write_json, write_text
    from coldbrew.training.run_dir import check_out_dir

    out = Path(out)
    check_out_dir(out)
    plan = plan_board(base_layers, models, blends, seeds, out, conventions, text_encoders)
    out.mkdir(parents=True, exist_ok=True)
    cache = DataCache()
    if claims is not None:
        jobs = 1  # each worker is one process; the board is read back once all is done
        share(claims, plan, blend_objective, cache, log)
    with RunLock(out) if claims is None else table_lock(out):
        board = {"seeds": list(seeds), "conventions": list(conventions), "folds": plan.folds}
        if plan.folds:
            from coldbrew.research.boards.cross_validation import cross_validated_board

            options = {"objective": blend_objective, "jobs": jobs, "cache": cache, "log": log}
            if jobs != 1:
                load_text_vectors_first(plan.configs, seeds[0], cache, log)
            board |= cross_validated_board(plan, conventions, **options)
        else:
            trained = train_models(plan, jobs=jobs, cache=cache, log=log)
            trained |= blend_models(plan.blends, seeds, out, objective=blend_objective, log=log)
            board["rows"] = [model_row(name, trained, out, conventions, cache) for name in trained]
        header, cells = table_cells(board["rows"])
        write_json(board, out / LEADERBOARD_JSON)
        write_text(format_board(header, cells, markdown=True) + "\n", out / LEADERBOARD_MD)
        if plot:
            plot_board(board["rows"], out / LEADERBOARD_PNG, log=log)
    board["wide_table"] = format_board(header, cells)
    board["table"] = short_table(board)
    return board

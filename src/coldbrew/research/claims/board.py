"""One leaderboard shared by many workers (``coldbrew leaderboard --claims WHERE``).

Every worker runs the same command with the same ``--out`` (a folder all of them reach) and the
same ``--claims`` (a database URL, or a folder with file locks: ``coldbrew.research.claims.units``).
The board's units are handed out through the claims, one at a time to whichever worker asks:
a model's multi-seed run, or on folds each model's fold and then its final run, then each blend
once the runs it blends are done. A worker trains the unit it claimed with heartbeats; when no
unit is free it waits for the others' to finish, so every worker returns when the whole board
is done and then prints the same table (read back, nothing trained twice). A worker that dies
leaves its unit to be claimed again once its heartbeat is older than the claims' timeout, and
its run resumes from its last checkpoint. The phases follow one another: no final run starts
before every fold is done, no blend before every model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from coldbrew.research.boards.blend_names import Member, blend_name, member_name

if TYPE_CHECKING:
    from coldbrew.research.boards.model_runs import BoardPlan, RunUnit

POLL_SECONDS = 2.0  # how often a worker with nothing to claim looks again


def run_claimed(
    names: Sequence[str],
    unit_of: Callable[[str], Any],
    work: Callable,
    claims: Any,
    cache: Any,
    log: Callable[[str], None],
    *,
    ready: Callable[[str, dict], bool] | None = None,
    poll: float = POLL_SECONDS,
) -> list[str]:
    """Every one of ``names`` done through ``claims``: claim one that is neither done nor held
    (and ``ready(name, states)``), run ``work(unit_of(name), cache, log)`` with heartbeats, mark
    it done; with nothing to claim, wait. Returns the names this worker did."""
    from coldbrew.research.claims.units import DONE

    mine = []
    while True:
        states = claims.status(list(names))
        left = [name for name in names if states[name] != DONE]
        if not left:
            return mine
        free = [name for name in left if ready is None or ready(name, states)]
        name = claims.claim(free) if free else None
        if name is None:
            time.sleep(poll)
            continue
        log(f"claimed {name} ({claims.worker})")
        with claims.keep_alive(name):
            work(unit_of(name), cache, log)
        mine.append(name)


def claim_models(plan: BoardPlan, claims, cache, log) -> None:
    """Each model's multi-seed run, ``OUT/MODEL``, through ``claims``."""
    from coldbrew.research.boards.model_runs import train_model

    units = plan.model_units()
    run_claimed(list(units), units.__getitem__, train_model, claims, cache, log)


def claim_folds(plan: BoardPlan, claims, cache, log) -> None:
    """Every model's folds, then its final run (its epochs read from its folds), through
    ``claims``."""
    from coldbrew.research.boards.cross_validation import (
        chosen_epochs,
        final_unit,
        fold_curve,
        fold_units,
    )
    from coldbrew.research.boards.model_runs import train_model

    units = fold_units(plan)
    run_claimed(list(units), units.__getitem__, train_model, claims, cache, log)

    configs = plan.rows()

    def final_of(name: str) -> RunUnit:
        row = name.removesuffix("/final")
        _, curve = fold_curve(plan.out, row, plan.folds, plan.seeds)
        epochs = chosen_epochs(curve)
        return final_unit(configs[row], plan.seeds, plan.out, epochs, plan.conventions, row)

    finals = [f"{row}/final" for row in configs]
    run_claimed(finals, final_of, train_model, claims, cache, log)


def claim_blends(
    blends: Sequence[Sequence[Member]], make: Callable[[list], Any], claims, cache, log
) -> None:
    """Each blend (``make([members])`` writes it: with or without folds) through ``claims``, an
    outer blend once its inner blends are done."""
    by_name = {blend_name(members): list(members) for members in blends}

    def ready(name: str, states: dict) -> bool:
        from coldbrew.research.claims.units import DONE

        inner = [member_name(m) for m in by_name[name] if member_name(m) in by_name]
        return all(states.get(part) == DONE for part in inner)

    def work(members: list, _cache: Any, _log: Callable) -> Any:
        return make([members])

    run_claimed(list(by_name), by_name.__getitem__, work, claims, cache, log, ready=ready)


def share_board(
    where: str,
    plan: BoardPlan,
    *,
    make_blends: Callable[[list], Any],
    cache: Any,
    log: Callable[[str], None],
) -> None:
    """Train this worker's share of the board ``plan`` through the claims in ``where``, until
    every unit is done (by any worker). The claims' scope is the board's folder name."""
    from coldbrew.research.claims.units import Claims

    claims = Claims.open(where, scope=f"leaderboard:{plan.out.name}")
    try:
        if plan.folds:
            claim_folds(plan, claims, cache, log)
        else:
            claim_models(plan, claims, cache, log)
        claim_blends(plan.blends, make_blends, claims, cache, log)
    finally:
        claims.close()

"""A leaderboard as a person reads it in a terminal: one screen wide (``WIDTH``).

One line says what the columns mean; then per row the model, its cold Recall@20 under each
convention where it was chosen (the folds, or the select half ``val``) and where it is reported
(``report``: validation no choice read; ``test``), mean ± std, and its seconds. The best row by
the choosing split is marked ``*`` in each convention; on folds, a row whose gap to the best is
within the paired test's noise is marked ``=`` (level), and the intervals follow the table. A
column whose users rank no more cold items than K is marked, not scored (its Recall@K is 1 for
any model). Every other column is in ``--wide``, leaderboard.md and leaderboard.json.
"""

from __future__ import annotations

import textwrap

WIDTH = 120
METRIC, K = "recall@20", 20
BEST, LEVEL = "*", "="


def cell(value: dict | None, mark: str = "") -> str:
    """``0.1234±0.0045`` (``±`` and no std for one value), then ``mark``."""
    if not value or value.get("mean") is None:
        return "-"
    std = value.get("std")
    text = f"{value['mean']:.4f}" + (f"±{std:.4f}" if std is not None else "")
    return f"{text} {mark}".rstrip()


def cold_value(row: dict, convention: str, split: str) -> dict | None:
    if split == "folds":
        return row.get("folds", {}).get(convention, {}).get(METRIC)
    return row["metrics"].get(convention, {}).get(split, {}).get("cold", {}).get(METRIC)


def marks(board: dict, choosing: str, convention: str) -> dict[str, str]:
    """``{row: "*" or "="}``: the best by ``choosing`` under ``convention``, and on folds the
    rows level with it."""
    lead = board.get("leads", {}).get(convention)
    if lead is not None:
        found = {lead["best"]: BEST} if lead["best"] else {}
        levels = {n: LEVEL for n, v in lead["versus"].items() if v["verdict"] == "level"}
        return found | levels
    values = {
        row["model"]: (cold_value(row, convention, choosing) or {}).get("mean")
        for row in board["rows"]
    }
    values = {name: value for name, value in values.items() if value is not None}
    return {max(values, key=values.get): BEST} if values else {}


def short_table(board: dict) -> str:
    """The board's rows in at most about ``WIDTH`` characters, a legend above, leads below."""
    from coldbrew.research.boards.board import FEW_ITEMS, few_items
    from coldbrew.research.boards.compare import format_table

    rows, conventions = board["rows"], board["conventions"]
    choosing = "folds" if board.get("folds") else "val"
    measured = {split for row in rows for c in row["metrics"].values() for split in c}
    splits = [choosing] + [split for split in ("report", "test") if split in measured]
    if choosing == "val" and "report" not in measured:
        splits = ["val"]  # no report half: val chose and reports (marked in the legend)
    header, cells = ["model"], []
    for split in splits:
        header += [f"{split} {convention}" for convention in conventions]
    header.append("seconds")
    chosen = {convention: marks(board, choosing, convention) for convention in conventions}
    for row in rows:
        line = [row["model"] + (" (one list)" if row.get("one_list") else "")]
        for split in splits:
            for convention in conventions:
                mark = chosen[convention].get(row["model"], "") if split == choosing else ""
                if few_items(row, convention, split, METRIC):
                    line.append(FEW_ITEMS.format(k=K))
                else:
                    line.append(cell(cold_value(row, convention, split), mark))
        seconds = (row["wall_seconds"].get("mean") or 0) + (
            (row.get("fold_seconds") or {}).get("mean") or 0
        )
        line.append(f"{seconds:,.0f}")
        cells.append(line)
    return "\n".join([legend(board, choosing), format_table(header, cells), *lead_lines(board)])


def legend(board: dict, choosing: str) -> str:
    """What the columns mean, in a line or two."""
    seeds = len(board["seeds"])
    if choosing == "folds":
        chose = (
            f"folds: mean ± std over {board['folds']} cold-item folds x {seeds} seed(s), what "
            f"chooses ({BEST} best, {LEVEL} level with it: corrected paired t-test, 95 %)"
        )
    else:
        chose = f"val: the select half, what chooses ({BEST} best); mean ± std over {seeds} seed(s)"
    text = (
        f"cold Recall@{K}. all: users rank every cold item; split: the split's own. {chose}; "
        "report: validation no choice read; seconds: a seed's runs, folds included. "
        "--wide: every column"
    )
    return textwrap.fill(text, WIDTH)


def lead_lines(board: dict) -> list[str]:
    """Per convention: the best row's lead over each other row, as the interval of the
    difference in fold Recall@20, and whether it holds."""
    lines = []
    for convention, lead in (board.get("leads") or {}).items():
        if not lead.get("best") or not lead["versus"]:
            continue
        lines.append(f"{convention}: {lead['best']} is best on the folds; its lead over")
        width = max([28, *map(len, lead["versus"])])  # long names (blend-a@mpnet@128+b) align too
        for name, interval in sorted(lead["versus"].items(), key=lambda item: item[1]["mean"]):
            lines.append("  " + lead_text(name, interval, width))
    return lines


def lead_text(name: str, interval: dict, width: int = 28) -> str:
    """``clcrec  +0.0123 [+0.0040, +0.0206] leads``, the name padded to ``width``."""
    low, high = interval["low"], interval["high"]
    bounds = f"[{low:+.4f}, {high:+.4f}]" if abs(low) != float("inf") else "[no spread: 1 pair]"
    return f"{name:<{width}} {interval['mean']:+.4f} {bounds} {interval['verdict']}"

"""A leaderboard's blends, spelled as ``--blend`` spells them, and their folders.

``clcrec+knn`` blends two models' runs. A member in parentheses is a blend of its own, made
first: ``(lm+clcrec+aldi+gar)+popularity`` blends the finished blend of four runs with
popularity's run, so one more term is weighed against weights already chosen, on the fine grid
of two runs (steps of 1/10), instead of every run being weighed again on the coarse grid of five
(steps of 1/5). One level of parentheses.

A blend is a list of members; a member is a model's name or a tuple of names (an inner blend).
Its folder is ``blend_name``: ``blend-clcrec+knn``, ``blend-(lm+clcrec+aldi+gar)+popularity``.
"""

from __future__ import annotations

from collections.abc import Sequence

from coldbrew.errors import ColdbrewError

Member = str | tuple[str, ...]
PREFIX = "blend-"


def member_name(member: Member) -> str:
    """The folder of a member's runs: a model's name, or its inner blend's folder."""
    return member if isinstance(member, str) else blend_name(member)


def blend_name(blend: Sequence[Member]) -> str:
    """``["lm", "clcrec"]`` -> ``blend-lm+clcrec``; an inner blend in parentheses."""
    spelled = [m if isinstance(m, str) else "(" + "+".join(m) + ")" for m in blend]
    return PREFIX + "+".join(spelled)


def split_members(text: str) -> list[str]:
    """``"(a+b)+c"`` -> ``["(a+b)", "c"]``: split at the ``+`` outside parentheses."""
    tokens, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth not in (0, 1):
            raise ColdbrewError(
                f"--blend {text!r}: parentheses must pair, one level deep, e.g. (lm+clcrec)+knn"
            )
        if char == "+" and depth == 0:
            tokens.append(current.strip())
            current = ""
        else:
            current += char
    if depth:
        raise ColdbrewError(f"--blend {text!r}: a parenthesis is not closed")
    return [*tokens, current.strip()]


def model_names(text: str, part: str, models: Sequence[str]) -> list[str]:
    """``"a+b"`` -> the board's rows, each one of ``models`` (its rows' names: a model's, or
    ``MODEL@ENCODER`` on a board of several text encoders)."""
    from coldbrew.research.boards.encoder_rows import SEPARATOR, resolve_row, row_model

    names = [resolve_row(name) for name in text.split("+")]
    missing = [name for name in names if name not in models]
    if not missing:
        return names
    encoders = [
        row for row in models if row_model(row) in map(row_model, missing) and SEPARATOR in row
    ]
    if encoders:
        raise ColdbrewError(
            f"--blend {part!r}: {', '.join(missing)} is not a row of this board; its rows name "
            f"the text encoder: {', '.join(encoders)}"
        )
    raise ColdbrewError(
        f"--blend {part!r}: {', '.join(missing)} not in --models ({','.join(models)}); a "
        f"blend joins models the leaderboard trains: add "
        f"{'it' if len(missing) == 1 else 'them'} to --models"
    )


def check_members(members: Sequence[Member], part: str, models: Sequence[str]) -> None:
    """Two or more members, each once."""
    if len(members) < 2 or len(set(members)) != len(members):
        raise ColdbrewError(
            f"--blend {part!r}: give two or more of --models joined by +, "
            f"e.g. {'+'.join(models[:2])} or ({'+'.join(models[:2])})+{models[-1]}"
        )


def parse_blend(part: str, models: Sequence[str]) -> list[Member]:
    """One ``--blend`` entry: ``"clcrec+knn"`` -> ``["clcrec", "knn"]``, ``"(lm+clcrec)+knn"``
    -> ``[("lm", "clcrec"), "knn"]``."""
    members: list[Member] = []
    for token in split_members(part):
        if token.startswith("(") and token.endswith(")"):
            inner = model_names(token[1:-1], part, models)
            check_members(inner, part, models)
            members.append(tuple(inner))
        elif "(" in token or ")" in token:
            raise ColdbrewError(f"--blend {part!r}: {token!r} is neither a model nor (A+B)")
        else:
            members.extend(model_names(token, part, models))
    check_members(members, part, models)
    return members


def parse_blends(text: str | None, models: Sequence[str]) -> list[list[Member]]:
    """``"clcrec+knn,(lm+clcrec)+knn"`` -> every blend asked for, each inner blend before the
    first blend that uses it (added where it is not asked for itself)."""
    parts = [part.strip() for part in (text or "").split(",") if part.strip()]
    return in_order([parse_blend(part, models) for part in parts])


def in_order(blends: Sequence[Sequence[Member]]) -> list[list[Member]]:
    """``blends`` with every inner blend present and before the blends that use it."""
    ordered: list[list[Member]] = []
    for blend in blends:
        for member in blend:
            if not isinstance(member, str) and list(member) not in ordered:
                ordered.append(list(member))
        if list(blend) not in ordered:
            ordered.append(list(blend))
    return ordered

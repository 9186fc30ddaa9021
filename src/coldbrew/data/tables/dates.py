"""Timestamps as seconds: numbers as they are, dates read in the order they are written.

Slash dates (``25/03/2021``) are read day first when a first field above 12 proves it,
month first when a second field above 12 does; when every field is 12 or less the order
cannot be told and is refused, unless ``date_format`` (``"%d/%m/%Y"``) states it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd

from coldbrew.errors import DataError

SLASH_DATE = re.compile(r"^\s*(\d{1,2})[/.-](\d{1,2})[/.-]\d{2,4}\b")
DATE_FORMAT_HINT = (
    'state the order in coldbrew.yaml (date_format: "%d/%m/%Y" for day first, "%m/%d/%Y" for '
    "month first) or write ISO dates (2021-03-25)"
)


def date_order(values: pd.Series) -> str | None:
    """How slash dates are written: ``None`` when they are not slash dates, else a line
    saying day first, month first or that the order cannot be told."""
    fields = values.dropna().astype(str).str.extract(SLASH_DATE)
    fields = fields.dropna()
    if len(fields) < 0.5 * max(values.notna().sum(), 1):
        return None
    first, second = fields[0].astype(int), fields[1].astype(int)
    day_first, month_first = (first > 12).any(), (second > 12).any()
    if day_first and month_first:
        return "dates written both day first and month first"
    if day_first:
        return f"dates written day first (e.g. {values.loc[first.gt(12).idxmax()]!r}): read so"
    if month_first:
        return f"dates written month first (e.g. {values.loc[second.gt(12).idxmax()]!r}): read so"
    return f"dates whose day and month cannot be told apart (every field 12 or less): {DATE_FORMAT_HINT}"


def timestamps(
    values: pd.Series,
    where: str,
    refuse: Callable[[np.ndarray, pd.Series, str, str], None],
    notes: list[str] | None = None,
    date_format: str | None = None,
) -> np.ndarray:
    """Seconds as float64 from numbers (as they are) or dates (since the epoch); ``refuse``
    raises for the bad rows it is given (``where``, the problem with ``{}`` for the value)."""
    numbers = pd.to_numeric(values, errors="coerce")
    if not numbers.isna().any() and date_format is None:
        return numbers.to_numpy(dtype=np.float64)
    if numbers.notna().mean() > 0.5 and date_format is None:  # mostly numbers
        refuse(
            numbers.isna().to_numpy(), values, where, "timestamp {} is not a number like the others"
        )
    if date_format is not None:
        dates = pd.to_datetime(values, errors="coerce", utc=True, format=date_format)
        problem = f"timestamp {{}} is not a date written {date_format!r}"
    else:
        dates = pd.to_datetime(
            values,
            errors="coerce",
            utc=True,
            format="mixed",
            dayfirst=_day_first(values, where, notes),
        )
        problem = "timestamp {} is neither a number nor a date"
    refuse(dates.isna().to_numpy(), values, where, problem)
    return (dates - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy(dtype=np.float64)


def _day_first(values: pd.Series, where: str, notes: list[str] | None) -> bool:
    """Whether slash dates are day first; refused when it cannot be told."""
    order = date_order(values)
    if order is None or "month first" in order and "day first" not in order:
        return False
    if "day first" in order and "month first" not in order:
        if notes is not None:
            notes.append(f"{where}: {order}")
        return True
    if "both" in order:
        raise DataError(f"{where}: {order}; {DATE_FORMAT_HINT}")
    raise DataError(f"{where}: {order}")

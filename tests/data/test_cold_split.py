"""The cold_split run option: parsed and checked where the configuration is made."""

from __future__ import annotations

import pytest

from coldbrew.config import Flags, make_config
from coldbrew.data.cold_split import parse_cold_split
from coldbrew.errors import ColdbrewError


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("files", ("files", None)), ("time:0.2", ("time", 0.2)), ("random:0.05", ("random", 0.05))],
)
def test_cold_split_forms(text, parsed):
    assert parse_cold_split(text) == parsed
    assert make_config(Flags({"cold_split": text})).cold_split == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("time", "needs a fraction"),
        ("time:1.5", "above 0 and below 1"),
        ("random:0", "above 0 and below 1"),
        ("random:x", "needs a fraction"),
        ("files:0.2", "takes no fraction"),
        ("newest:0.2", "must be files, time:FRACTION"),
        ("folds", "--folds K"),
    ],
)
def test_bad_cold_splits_are_one_line_errors(text, message):
    with pytest.raises(ColdbrewError, match=message):
        make_config(Flags({"cold_split": text}))


def test_cold_split_defaults_to_the_datas_own_files_and_is_shared_by_a_boards_models():
    assert make_config().cold_split == "files"
    with pytest.raises(ColdbrewError, match="shared by every model"):
        make_config({"clcrec": {"cold_split": "time:0.2"}})

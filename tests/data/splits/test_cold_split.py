"""The cold_split run option: parsed and checked where the configuration is made."""

from __future__ import annotations

import pytest

from coldbrew.config import Flags, make_config
from coldbrew.data.splits.cold_split import parse_cold_split
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


def timed_data():
    """Items a..e first seen at times 5, 1, 4, 2, 3 (e's first by ann at 3)."""
    import pandas as pd

    from coldbrew.data.dataset import Dataset

    rows = [("ann", "a", 5), ("bob", "a", 6), ("ann", "b", 1), ("bob", "c", 4), ("cy", "d", 2)]
    rows += [("ann", "e", 3), ("cy", "e", 7), ("cy", "b", 8)]
    frame = pd.DataFrame(rows, columns=["user", "item", "when"])
    return Dataset.from_frames(frame, timestamp="when")


def test_time_makes_the_newest_items_by_first_interaction_cold():
    from coldbrew.data.splits.cold_split import apply_cold_split

    data = timed_data()
    assert data.splits == {} and len(data.cold_items) == 0
    split = apply_cold_split(data, "time:0.4", seed=0)  # 2 of 5: a (5) and c (4)
    assert split.cold_split["items"] == ["a", "c"] and split.cold_split["kind"] == "time"
    assert list(split.cold_items) == [0, 2]
    assert split.splits["val"]["cold"].nnz == 3 and split.num_train == 5  # a twice, c once
    assert split.summary()["cold_split"]["items"] == ["a", "c"]
    assert apply_cold_split(split, "time:0.4", seed=5) is split  # the same split: as it is
    with pytest.raises(ColdbrewError, match="cannot be split again by random:0.4"):
        apply_cold_split(split, "random:0.4", seed=0)


def test_random_draws_by_the_seed_and_files_changes_nothing():
    from coldbrew.data.splits.cold_split import apply_cold_split

    data = timed_data()
    assert apply_cold_split(data, "files", seed=0) is data
    first = apply_cold_split(data, "random:0.4", seed=3).cold_split["items"]
    assert apply_cold_split(data, "random:0.4", seed=3).cold_split["items"] == first
    draws = {
        tuple(apply_cold_split(data, "random:0.4", seed=s).cold_split["items"]) for s in range(8)
    }
    assert len(first) == 2 and len(draws) > 1


def test_time_needs_timestamps_and_the_split_goes_before_the_report_cut():
    import pandas as pd

    from coldbrew.data.dataset import Dataset
    from coldbrew.data.splits.cold_split import apply_cold_split
    from coldbrew.data.splits.selection import carve_report

    plain = Dataset.from_frames(pd.DataFrame({"user": [1, 2, 2], "item": [1, 1, 2]}))
    with pytest.raises(ColdbrewError, match="no interaction times.*use random:FRACTION"):
        apply_cold_split(plain, "time:0.5", seed=0)
    carved = carve_report(plain, 0.5, 0)  # no validation: nothing to cut, and that is fine
    assert carved.splits == {}
    with pytest.raises(ColdbrewError, match="choose its cold items first"):
        apply_cold_split(carved, "random:0.5", seed=0)


def test_a_run_records_which_items_it_made_cold(tmp_path):
    import json

    import numpy as np
    import pandas as pd

    from coldbrew.cli import main

    rng = np.random.default_rng(0)
    users = np.repeat(np.arange(60), 8)
    items = rng.integers(0, 40, len(users))
    frame = pd.DataFrame({"user": users, "item": [f"i{i:02d}" for i in items], "ts": items})
    frame.to_csv(tmp_path / "events.csv", index=False)
    genres = pd.DataFrame({"item": [f"i{i:02d}" for i in range(40)], "kind": list("abcd") * 10})
    genres.to_csv(tmp_path / "items.csv", index=False)
    (tmp_path / "coldbrew.yaml").write_text(
        "interactions: events.csv\ntimestamp: ts\nitems: items.csv\ncategories: [kind]\n"
    )
    out = tmp_path / "run"
    flags = ["--cold-split", "time:0.25", "--epochs", "1", "--num-neg", "4", "--quiet"]
    assert main(["train", "--data", str(tmp_path), *flags, "--out", str(out)]) == 0
    made = json.loads((out / "results.json").read_text())["dataset"]["cold_split"]
    assert made["kind"] == "time" and made["items"] == [f"i{i}" for i in range(30, 40)]


def test_data_info_shows_the_cold_split_a_run_would_make(tmp_path, capsys):
    import pandas as pd

    from coldbrew.cli import main

    frame = pd.DataFrame({"user": [1, 1, 2, 2, 3, 3], "item": list("abcdef"), "ts": range(6)})
    frame.to_csv(tmp_path / "events.csv", index=False)
    (tmp_path / "coldbrew.yaml").write_text("interactions: events.csv\ntimestamp: ts\n")
    assert main(["data", "info", str(tmp_path), "--cold-split", "time:0.5"]) == 0
    out = capsys.readouterr().out
    assert "'items': ['d', 'e', 'f']" in out and "note: cold_split time:0.5: 3 of 6 items" in out


def test_the_note_says_whether_the_datas_own_splits_were_pooled():
    from coldbrew.data.splits.cold_split import apply_cold_split

    split = apply_cold_split(timed_data(), "time:0.4", seed=0)
    assert "(3 interactions moved to val; the data had no split of its own)" in split.notes[-1]
    again = timed_data()
    again.splits = split.splits  # now the data has val splits of its own: pooled first
    pooled = apply_cold_split(again, "time:0.2", seed=0).notes[-1]
    assert "the data's own val split(s) pooled first" in pooled and " no " not in pooled

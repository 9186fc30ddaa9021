"""Property tests (hypothesis): whatever a user types or a file holds, the option parser, the
YAML loader and the data loaders give a result or a one-line ``ColdbrewError``, never a
traceback of another kind."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from coldbrew.config import FIELDS, Flags, load_yaml, make_config  # noqa: E402
from coldbrew.errors import ColdbrewError  # noqa: E402
from coldbrew.registry import MODELS  # noqa: E402

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
OPTION_NAMES = sorted(
    set(FIELDS) | {f.name for spec in MODELS.values() for f in dataclasses.fields(spec.config)}
)
NUMBERS_AS_TEXT = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
TEXT = st.one_of(st.text(max_size=24), NUMBERS_AS_TEXT, st.sampled_from(["", " ", "none", "1,2"]))
# values as a YAML file holds them: scalars, lists and mappings of them
YAML_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(),
        st.text(max_size=12),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def result_or_one_line(call):
    """``call()``, or ``None`` when it raised a ``ColdbrewError`` of one non-empty line."""
    try:
        return call()
    except ColdbrewError as error:
        message = str(error)
        assert message and "\n" not in message, repr(message)
        return None


@FAST
@given(name=st.sampled_from(OPTION_NAMES), value=TEXT)
def test_any_command_line_value_gives_a_config_or_one_line(name, value):
    model = next((m for m, s in MODELS.items() if name in s.config.__dataclass_fields__), None)
    flags = {name: value, **({"model": model} if model and name not in FIELDS else {})}
    result_or_one_line(lambda: make_config(Flags(flags)))


@FAST
@given(settings_=st.dictionaries(st.sampled_from([*OPTION_NAMES, "clcrec", "x"]), YAML_VALUES))
def test_any_yaml_mapping_gives_a_config_or_one_line(settings_):
    result_or_one_line(lambda: make_config(settings_))


YAML_TEXT = st.one_of(
    st.text(max_size=80).map(lambda text: text.encode("utf-8", errors="surrogatepass")),
    st.binary(max_size=40),
    st.lists(
        st.tuples(st.sampled_from(OPTION_NAMES), st.text(max_size=10)), min_size=1, max_size=4
    ).map(lambda pairs: "".join(f"{key}: {value}\n" for key, value in pairs).encode()),
)


@FAST
@given(content=YAML_TEXT)
def test_any_yaml_file_loads_or_is_one_line(content):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "preset.yaml"
        path.write_bytes(content)
        loaded = result_or_one_line(lambda: load_yaml(path))
        if loaded is not None:
            result_or_one_line(lambda: make_config(loaded))


@FAST
@given(spec=st.text(alphabet="users=itemsinteractions,0123456789.-e:", max_size=30))
def test_any_synthetic_spec_loads_or_is_one_line(spec):
    from coldbrew.data import load_dataset

    if any(size > 400 for size in numbers_in(spec)):
        return  # a big dataset is a valid request, but slow to draw here
    result_or_one_line(lambda: load_dataset(f"synthetic:{spec}", seed=1))


def numbers_in(text: str) -> list[float]:
    import re

    return [float(number) for number in re.findall(r"\d+(?:\.\d+)?", text)] or [0.0]


CSV_CELL = st.one_of(st.integers(-3, 12).map(str), st.sampled_from(["", "x", '"', "1.5", "-"]))


@FAST
@given(
    train=st.lists(st.tuples(CSV_CELL, CSV_CELL), max_size=12),
    val=st.lists(st.tuples(CSV_CELL, CSV_CELL), max_size=6),
    items=st.lists(st.tuples(CSV_CELL, st.text(max_size=10), st.text(max_size=10)), max_size=10),
    header=st.sampled_from(["uid,iid", "iid,uid", "user,item", ""]),
)
def test_any_csv_coldstart_folder_loads_or_is_one_line(train, val, items, header):
    from coldbrew.data import load_dataset

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_csv(root / "train.csv", header, train)
        write_csv(root / "cold_val.csv", header, val)
        write_csv(root / "items.csv", "iid,title,genres", items)
        result_or_one_line(lambda: load_dataset(root, seed=1))


def write_csv(path: Path, header: str, rows) -> None:
    lines = [header] + [",".join(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")


ARRAYS = st.one_of(
    # (user, item) pairs, mostly in the layout's numbering (4 users, then items 4..9)
    st.lists(st.tuples(st.integers(-1, 4), st.integers(3, 10)).map(list), min_size=1, max_size=10),
    st.lists(st.integers(-2, 10), max_size=10),
    st.lists(st.floats(allow_nan=True), max_size=6),
    st.lists(st.text(max_size=3), max_size=4),
)


@FAST
@given(train=ARRAYS, cold=ARRAYS, warm=ARRAYS, feature=ARRAYS)
def test_any_clcrec_layout_arrays_load_or_are_one_line(train, cold, warm, feature):
    import numpy as np

    from coldbrew.data import load_dataset

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, values in (("train", train), ("cold_set", cold), ("warm_set", warm)):
            np.save(root / f"{name}.npy", np.array(values))
        np.save(root / "feat_v.npy", np.array(feature))
        result_or_one_line(lambda: load_dataset(root, seed=1))

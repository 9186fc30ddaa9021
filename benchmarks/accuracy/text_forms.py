"""Ways of writing an item's text, each as a data folder to compare on cold-item folds.

Reads the plain tables ``benchmarks/accuracy/ml1m_tables.py`` wrote (TABLES) and, for each
form, encodes the items' texts with ENCODER (cached as every coldbrew encode is) and writes a
data folder OUT/FORM holding the same interactions, the items table and ``vectors.csv`` (the item id, then
the vector). Every folder has the same items in the same order, so its folds are the same and
a leaderboard of one model across folders is a paired comparison:

    prepared   the prepared layout's own text ("Heat (1995). Genres: Action, Crime. Director: ...")
    labelled   "Title: Heat. Year: 1995. Genres: Action, Crime. Director: ... Plot: ..."
    plain      the same values without labels, ". "-joined
    fields     one vector per field (title with year, genres, director, cast, plot), concatenated
    no_plot    labelled, without the plot
    more       labelled, with the writers and the rating (G, PG ...) after the plot
    no_plot_more  labelled, the writers and the rating instead of the plot
    short      title, year, genres and director only

    python benchmarks/accuracy/text_forms.py --tables TABLES --prepared ../shared/data/ml-1m-coldstart \\
        --encoder minilm --out OUT [--forms labelled,fields]
    coldbrew leaderboard --data OUT/FORM --features genres,vectors --models ridge,aldi --folds 5 ...
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from coldbrew.data import load_dataset
from coldbrew.data.features import TextEncoding, text_embeddings
from coldbrew.data.tables.content import joined_texts

FIELDS = ("title", "year", "genres", "director", "cast", "plot")
FORMS = ("prepared", "labelled", "plain", "fields", "no_plot", "more", "no_plot_more", "short")


def values(items: pd.DataFrame, column: str) -> pd.Series:
    """The column as text: empty for missing, '|'-lists as ", "-lists, no trailing full stop."""
    text = items[column].fillna("").astype(str).str.strip().str.rstrip(".").str.strip()
    return text.str.replace("|", ", ", regex=False)


def joined(items: pd.DataFrame, columns: tuple[str, ...], labels: bool) -> list[str]:
    """The general layout's own joined text (labelled), or the same values without labels."""
    if labels:
        return joined_texts(items, list(columns))
    rows = []
    for row in zip(*(values(items, column) for column in columns), strict=True):
        parts = [value for value in row if value]
        rows.append(". ".join(parts) + "." if parts else "")
    return rows


def encode(texts: list[str], encoder: str):
    """``(items, width)`` vectors; an empty text gets zeros."""
    present = [position for position, text in enumerate(texts) if text]
    encoding = TextEncoding.of({"text_encoder": encoder})
    vectors = text_embeddings([texts[p] for p in present], encoding).numpy()
    block = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
    block[present] = vectors
    return block


def form_vectors(form: str, items: pd.DataFrame, prepared: Path, encoder: str) -> np.ndarray:
    if form == "prepared":
        dataset = load_dataset(prepared, features="genre")  # no encode; item_text is filled
        by_iid = dict(zip(dataset.item_ids.tolist(), dataset.item_text, strict=True))
        return encode([by_iid[int(item[1:])] for item in items["item"]], encoder)
    if form == "labelled":
        return encode(joined(items, FIELDS, labels=True), encoder)
    if form == "plain":
        return encode(joined(items, FIELDS, labels=False), encoder)
    if form == "no_plot":
        return encode(joined(items, FIELDS[:-1], labels=True), encoder)
    if form == "more":
        return encode(joined(items, (*FIELDS, "writers", "rated"), labels=True), encoder)
    if form == "no_plot_more":
        return encode(joined(items, (*FIELDS[:-1], "writers", "rated"), labels=True), encoder)
    if form == "short":
        return encode(joined(items, FIELDS[:4], labels=True), encoder)
    if form == "fields":
        groups = (("title", "year"), ("genres",), ("director",), ("cast",), ("plot",))
        return np.hstack([encode(joined(items, group, labels=True), encoder) for group in groups])
    raise SystemExit(f"unknown form {form!r}; known: {', '.join(FORMS)}")


def write_folder(folder: Path, tables: Path, items: pd.DataFrame, vectors: np.ndarray) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("interactions.csv", "val.csv", "items.csv"):
        target = folder / name
        if not target.exists():
            target.symlink_to((tables / name).resolve())
    frame = pd.DataFrame(vectors, columns=[f"v{i}" for i in range(vectors.shape[1])])
    frame.insert(0, "item", items["item"].to_numpy())
    frame.to_csv(folder / "vectors.csv", index=False, float_format="%.6g")
    (folder / "coldbrew.yaml").write_text(
        "interactions: interactions.csv\nuser: user\nitem: item\nval: val.csv\n"
        "items: items.csv\ncategories: [genres]\nvectors: vectors.csv\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=Path, required=True)
    parser.add_argument("--prepared", type=Path, required=True)
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--forms", default=",".join(FORMS))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    items = pd.read_csv(args.tables / "items.csv", dtype=str, keep_default_na=False)
    for form in args.forms.split(","):
        started = time.perf_counter()
        vectors = form_vectors(form, items, args.prepared, args.encoder)
        write_folder(args.out / form, args.tables, items, vectors)
        seconds = time.perf_counter() - started
        print(f"{form}: {vectors.shape[1]} columns, {seconds:.1f} s", flush=True)


if __name__ == "__main__":
    main()

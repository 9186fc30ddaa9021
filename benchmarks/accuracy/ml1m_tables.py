"""Write ml-1m-coldstart as plain tables a user might keep, for ``coldbrew data init``.

The prepared layout (``train.csv``, ``cold_val.csv``, ``items.csv`` and the MovieLens extras
file joined by title and year) becomes, in OUT:

    interactions.csv   user,item          one row per training interaction, string ids
    val.csv            user,item          the cold validation interactions
    items.csv          item,title,year,genres,director,cast,plot,writers,rated
                                          genres a '|'-list; the rest from the extras file
                                          where its title and year match (writers without
                                          their parenthesised roles)

Ids are written ``u<uid>`` and ``m<iid>`` so that they are text, not numbers. The test items
stay held out: the shared folder has no test file, and none is written.

    python benchmarks/accuracy/ml1m_tables.py --data ../shared/data/ml-1m-coldstart --out OUT
    coldbrew data init OUT/interactions.csv OUT/val.csv OUT/items.csv
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd

from coldbrew.data.features import TITLE_YEAR, display_title, normalise_title
from coldbrew.data.loaders.csv_coldstart import match_extra_info, read_extra_info, read_items

ROLE = re.compile(r"\s*\([^)]*\)")  # "Joss Whedon (screenplay by)" -> "Joss Whedon"


def extra_info(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    """``read_extra_info``'s fields, plus the writers (roles dropped) and the rating (G, R ...)."""
    info = read_extra_info(path)
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        fields = line.split("::")
        if len(fields) != 11:
            continue
        more = {
            "writers": ", ".join(dict.fromkeys(ROLE.sub("", fields[7]).split(", "))).strip(),
            "rated": fields[3].strip(),
        }
        known = info.setdefault((normalise_title(fields[1]), fields[2].strip()), {})
        for key, value in more.items():
            if value and value != "N/A" and key not in known:
                known[key] = value
    return info


def items_table(folder: Path) -> pd.DataFrame:
    """One row per item: the readable title without its year, the year, genres and extras."""
    item_ids, titles, genres = read_items(folder / "items.csv")
    extra, _ = match_extra_info(titles, extra_info(folder / "movies_extrainfos.dat"))
    rows = []
    for position, (iid, title, item_genres) in enumerate(
        zip(item_ids.tolist(), titles, genres, strict=True)
    ):
        shown = display_title(title)
        match = TITLE_YEAR.match(shown)
        name, year = (match.group("body").strip(), match.group("year")) if match else (shown, "")
        fields = extra.get(position, {})
        rows.append(
            {
                "item": f"m{iid}",
                "title": name,
                "year": year,
                "genres": "|".join(item_genres),
                "director": fields.get("director", ""),
                "cast": fields.get("cast", ""),
                "plot": fields.get("plot", ""),
                "writers": fields.get("writers", ""),
                "rated": fields.get("rated", ""),
            }
        )
    return pd.DataFrame(rows)


def interactions(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype=str)
    return pd.DataFrame({"user": "u" + frame["uid"], "item": "m" + frame["iid"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the prepared ml-1m-coldstart")
    parser.add_argument("--out", type=Path, required=True, help="a new folder for the tables")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=False)
    interactions(args.data / "train.csv").to_csv(args.out / "interactions.csv", index=False)
    interactions(args.data / "cold_val.csv").to_csv(args.out / "val.csv", index=False)
    items = items_table(args.data)
    items.to_csv(args.out / "items.csv", index=False)
    print(f"wrote {args.out}: {len(items):,} items")


if __name__ == "__main__":
    main()

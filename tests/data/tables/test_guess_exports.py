"""coldbrew data init on files as real exports write them: every trap of a tech-article export
at once, and a Book-Crossing-shaped pair, guessed and then loaded with no edits."""

from __future__ import annotations

import hashlib

import numpy as np
import yaml

from coldbrew.cli import main
from coldbrew.data import load_dataset

BODY = (
    "Deploying models | a field guide. We cover batching, caching and the many ways a "
    "service falls over under load, with notes from production | and a checklist. "
)


def email(user: int) -> str:
    return hashlib.sha1(f"user{user}@example.com".encode()).hexdigest()


def tech_articles(folder):
    """views.csv (index column, e-mail hash users, ids written 1430.0, dd/mm/yyyy dates) and
    articles.csv (index column, long bodies holding '|', one language, a repeated row)."""
    folder.mkdir()
    rng = np.random.default_rng(0)
    articles = list(range(1430, 1442))
    rows = ["Unnamed: 0,email,article_id,date"]
    for row in range(120):
        user, article = int(rng.integers(0, 15)), articles[int(rng.integers(0, 10))]
        day, month = int(rng.integers(1, 29)), int(rng.integers(1, 13))
        rows.append(f"{row},{email(user)},{article}.0,{day:02d}/{month:02d}/2021")
    rows.append(f"120,{email(0)},1431.0,25/03/2021")  # a day above 12: the dates are dd/mm
    (folder / "views.csv").write_text("\n".join(rows) + "\n")
    topics = ["ml", "web", "ops"]
    items = ["Unnamed: 0,article_id,title,body,lang,topic"]
    for row, article in enumerate(articles):
        items.append(
            f'{row},{article},Article number {article},"{BODY * 5}{article}",en,{topics[row % 3]}'
        )
    items.append(items[3].replace("2,", "12,", 1))  # the same article again, only its index new
    (folder / "articles.csv").write_text("\n".join(items) + "\n")
    return folder


def test_a_tech_article_export_is_guessed_and_loads_with_no_edits(tmp_path, capsys):
    folder = tech_articles(tmp_path / "export")
    assert main(["data", "init", str(folder)]) == 0
    printed = capsys.readouterr().out
    spec = yaml.safe_load((folder / "coldbrew.yaml").read_text())
    assert spec == {
        "interactions": "views.csv",
        "user": "email",
        "item": "article_id",
        "timestamp": "date",
        "items": "articles.csv",
        "text": ["title", "body"],
        "categories": ["topic"],
    }
    assert "views.csv: 'Unnamed: 0' is a row index (0..n-1 or 1..n): ignored" in printed
    assert "views.csv: 'email' holds e-mail addresses or hashes: the user id" in printed
    assert "views.csv: 'date': dates written day first (e.g. '" in printed
    assert "articles.csv: 'body' is text (" in printed
    assert "articles.csv: 'lang' is one value ('en') in every row: not used" in printed
    assert "articles.csv: 1 identical repeated row(s): read once" in printed
    data = load_dataset(folder, features=["topic"])
    assert data.num_items == 12 and data.num_train == len(
        {
            tuple(line.split(",")[1:3])
            for line in (folder / "views.csv").read_text().splitlines()[1:]
        }
    )
    notes = "\n".join(data.notes)
    assert "item ids in 'article_id' written as decimals (e.g. '14" in notes
    assert "articles.csv: 1 identical repeated row(s) read once" in notes
    assert "dates written day first" in notes
    # 25/03/2021 read day first: article 1431's first view is no later than that day
    march_25 = 1616630400.0
    assert data.item_first_seen[list(data.item_ids).index(1431)] <= march_25


URLS = "Image-URL-S,Image-URL-M,Image-URL-L"


def book_crossing(folder, authors: int = 2100):
    """ratings.csv and books.csv as Book-Crossing writes them: image URLs, a year, an author
    column of more values than a category block keeps."""
    folder.mkdir()
    books = [f"ISBN,Book-Title,Book-Author,Year-Of-Publication,Publisher,{URLS}"]
    for number in range(authors):
        isbn = f"0{number:08d}X"
        url = f"http://images.amazon.com/images/P/{isbn}.01.THUMBZZZ.jpg"
        books.append(
            f"{isbn},Book {number},Author {number},{1950 + number % 50},House {number % 7},"
            f"{url},{url},{url}"
        )
    (folder / "books.csv").write_text("\n".join(books) + "\n")
    ratings = ["User-ID,ISBN,Book-Rating"]
    for number in range(authors):
        for user in (number % 40, (number + 1) % 40):
            ratings.append(f"{user},0{number:08d}X,{number % 11}")
    (folder / "ratings.csv").write_text("\n".join(ratings) + "\n")
    (folder / "users.csv").write_text(
        "User-ID,Location,Age\n" + "".join(f"{u},town {u},{20 + u}\n" for u in range(40))
    )
    return folder


def test_a_book_crossing_shaped_pair_skips_urls_and_reads_a_wide_author_as_text(tmp_path, capsys):
    folder = book_crossing(tmp_path / "bx")
    assert main(["data", "init", str(folder)]) == 0
    printed = capsys.readouterr().out
    spec = yaml.safe_load((folder / "coldbrew.yaml").read_text())
    assert spec["interactions"] == "ratings.csv" and spec["items"] == "books.csv"
    assert (spec["user"], spec["item"], spec["rating"]) == ("User-ID", "ISBN", "Book-Rating")
    assert spec["text"] == ["Book-Title", "Book-Author"]
    assert spec["numeric"] == ["Year-Of-Publication"] and spec["categories"] == ["Publisher"]
    for column in URLS.split(","):
        assert f"books.csv: {column!r} is URLs or paths (e.g. 'http://images" in printed
    assert (
        "'Book-Author' is text (2,100 distinct values, 100% seen once: too many for a category)"
        in printed
    )
    assert "users.csv: not used (a users table keyed by 'User-ID')" in printed
    data = load_dataset(folder, features=["numeric", "Publisher"])
    assert data.num_items == 2100 and data.num_users == 40

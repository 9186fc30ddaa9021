"""An item's shown title: the plain title where the loader kept one, else its text's title."""

from __future__ import annotations

from coldbrew.data.titles import item_titles, title_column, title_of


def test_a_plain_title_wins_and_an_empty_one_falls_back_to_the_texts_title():
    titles = ["Dr. No: a spy", "", "x" * 130]
    texts = ["Name: Dr. No: a spy.", "Heat (1995). Genres: Action.", "Name: long."]
    assert item_titles(titles, texts) == ["Dr. No: a spy", "Heat (1995)", "x" * 119 + "…"]
    assert title_of(None, texts, 1) == "Heat (1995)" and title_of(None, None, 0) is None
    assert item_titles(None, None) is None and item_titles(["", "b"], None) == ["", "b"]


def test_the_title_column_is_the_one_named_title_or_name_else_the_first():
    assert title_column(["summary", "Title", "name"]) == "Title"
    assert title_column(["summary", "Name "]) == "Name "
    assert title_column(["summary", "doc_full_name"]) == "summary"

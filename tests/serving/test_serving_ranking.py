"""The request path's ranking against plain references: ``top_with_ties`` against a stable
sort of every score in tie-key order, the cached top lists and a faiss index against exact
scoring, the hand-written JSON answer against ``json.dumps`` of the same rows."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from coldbrew.recommend import top_by_score_then_key
from coldbrew.serving.catalogue import Catalogue
from coldbrew.serving.export_format import Vectors
from coldbrew.serving.ranking import rotated_keys, short_title, top_with_ties


def reference(scores: np.ndarray, k: int, keys: np.ndarray):
    """Every score sorted (stable, descending) in ascending key order: the evaluator's rule."""
    values, rows = top_by_score_then_key(
        torch.from_numpy(scores), k, order=torch.from_numpy(np.argsort(keys, kind="stable"))
    )
    return values.numpy(), rows.numpy()


@pytest.mark.parametrize("seed", range(6))
def test_top_with_ties_is_the_stable_sort_in_key_order(seed):
    random = np.random.default_rng(seed)
    count = int(random.integers(1, 400))
    scores = random.integers(0, 4, count).astype(np.float32)  # few values: many ties
    scores[random.random(count) < 0.2] = -np.inf  # training items
    keys = random.permutation(count)
    for k in sorted({1, 2, 20, count // 2 + 1, count}):
        values, rows = top_with_ties(scores, k, lambda at, keys=keys: keys[at])
        want_values, want_rows = reference(scores, k, keys)
        assert rows.tolist() == want_rows.tolist()
        assert values.tolist() == want_values.tolist()


def test_rotated_keys_rotate_the_catalogue_and_put_added_items_last():
    keys = np.array([2, 0, 1])
    # catalogue rows 0..2 shifted by 2 (mod 3): 4 % 3, 2, 3 % 3; added items 3, 4 keep theirs
    assert rotated_keys(np.array([0, 1, 2, 3, 4]), keys, 2, 3).tolist() == [1, 2, 0, 3, 4]


def test_a_short_title_is_the_text_before_its_first_field():
    assert short_title("Heat (1995). Genres: Action, Crime. Plot: A heist.") == "Heat (1995)"
    assert short_title("Dr. Strangelove (1964). Director: S. Kubrick.") == "Dr. Strangelove (1964)"
    assert short_title("a copy") == "a copy"
    assert short_title("x" * 500) == "x" * 119 + "…"


def catalogue(users=60, items=500, dim=8, seed=0, ties=False) -> Catalogue:
    random = np.random.default_rng(seed)
    user_vectors = random.normal(size=(users, dim)).astype(np.float32)
    item_vectors = random.normal(size=(items, dim)).astype(np.float32)
    if ties:  # ten distinct items, each repeated: every score ties with 49 others
        item_vectors = item_vectors[np.arange(items) % 10]
    seen = [
        np.sort(random.choice(items, int(random.integers(0, 40)), replace=False))
        for _ in range(users)
    ]
    vectors = Vectors(
        users=user_vectors,
        items=item_vectors,
        user_ids=np.arange(100, 100 + users, dtype=np.int64),
        item_ids=np.arange(1000, 1000 + items, dtype=np.int64),
        cold_items=np.arange(0, items, 7, dtype=np.int64),
        train_indptr=np.concatenate([[0], np.cumsum([len(s) for s in seen])]).astype(np.int64),
        train_indices=np.concatenate(seen).astype(np.int64),
        item_text=[
            f"Film {i} ({1950 + i % 60}). Genres: Drama. Plot: plot {i}." for i in range(items)
        ],
    )
    return Catalogue(vectors, {})


def exact(catalogue: Catalogue, user: int, k: int) -> list[int]:
    """The plain rule: every item scored, training items out, the evaluator's tie order."""
    row = catalogue.user_row[user]
    base = len(catalogue.item_ids)
    scores = (catalogue.users[row : row + 1] @ catalogue.items.T)[0]
    if len(catalogue.added_vectors):
        scores = torch.cat([scores, catalogue.added_vectors @ catalogue.users[row]])
    seen = catalogue.vectors.train_indices[
        catalogue.vectors.train_indptr[row] : catalogue.vectors.train_indptr[row + 1]
    ]
    scores[torch.from_numpy(seen)] = -torch.inf
    keys = rotated_keys(
        np.arange(len(scores)), catalogue.item_keys, catalogue.user_shifts[row], base
    )
    _, rows = reference(scores.numpy(), min(k, len(scores) - len(seen)), keys)
    ids = catalogue.item_ids + [item.id for item in catalogue.added]
    return [ids[r] for r in rows.tolist()]


@pytest.mark.parametrize("ties", [False, True])
def test_cached_and_live_lists_are_the_exact_lists_with_added_items(ties):
    served = catalogue(ties=ties)
    live = [
        [row["item"] for row in served.items_for(u, k)]
        for u in (100, 117, 159)
        for k in (1, 20, 99)
    ]
    served.cache_top_lists(depth=60)
    for user in served.user_row:
        for k in (1, 20, 60, 61, 480):  # 61 and 480: beyond the cache, scored live
            assert [row["item"] for row in served.items_for(user, k)] == exact(served, user, k)
    assert live == [
        [row["item"] for row in served.items_for(u, k)]
        for u in (100, 117, 159)
        for k in (1, 20, 99)
    ]
    # two added items: one a copy of an item (ties with it, ranks after it), one far ahead
    served.add(served.items[3].clone(), "A copy (2000). Genres: Drama.", None, None)
    served.add(served.users[5] * 100, None, None, 7)
    for user in served.user_row:
        for k in (1, 20, 61):
            assert [row["item"] for row in served.items_for(user, k)] == exact(served, user, k)
    assert served.items_for(105, 1)[0]["item"] == 7


def test_the_json_answer_is_the_rows_as_json_dumps_writes_them():
    served = catalogue()
    served.cache_top_lists()
    served.add(served.items[3].clone(), "A copy (2000). Genres: Drama.", None, None)
    for user in (100, 101, 140):
        for text in (False, True):
            answer = json.loads(served.items_json(user, 30, text=text))
            assert answer == {"user": user, "items": served.items_for(user, 30, text=text)}
    rows = served.items_for(100, 500, text=True)
    copy = next(row for row in rows if row.get("added"))
    assert copy["title"] == "A copy (2000)" and copy["text"].startswith("A copy (2000). Genres")
    lean = served.items_for(100, 3)
    assert set(lean[0]) == {"rank", "item", "score", "cold", "title"}
    assert lean[0]["title"] == short_title(served.vectors.item_text[lean[0]["item"] - 1000])


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_an_index_leaves_training_items_out_inside_the_search(kind):
    pytest.importorskip("faiss")
    from coldbrew.serving.index import build_index

    served = catalogue(users=60, items=3000, dim=16, seed=3)
    served.index = build_index(served.vectors.items, kind)
    found = total = 0
    for user, row in served.user_row.items():
        listed = [r["item"] for r in served.items_for(user, 20)]
        want = exact(served, user, 20)
        seen = served.vectors.train_indices[
            served.vectors.train_indptr[row] : served.vectors.train_indptr[row + 1]
        ]
        assert not set(listed) & {served.item_ids[s] for s in seen}
        assert len(listed) == 20
        if kind == "flat":  # exact search (random vectors: no ties)
            assert listed == want
        found, total = found + len(set(listed) & set(want)), total + 20
    if kind != "ivf":  # IVF probes 16 of 76 clusters of random vectors: a coarse recall
        assert found / total >= 0.95


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_a_deeper_search_finds_more_of_the_exact_lists(kind):
    pytest.importorskip("faiss")
    from coldbrew.serving.index import build_index, search_depth, set_search_depth

    served = catalogue(users=60, items=3000, dim=16, seed=3)
    served.index = build_index(served.vectors.items, kind)

    def recall(depth: int) -> float:
        set_search_depth(served.index, depth)
        found = sum(
            len({r["item"] for r in served.items_for(user, 20)} & set(exact(served, user, 20)))
            for user in served.user_row
        )
        return found / (20 * len(served.user_row))

    shallow, deep = recall(1), recall(5000)
    assert shallow < deep
    if kind == "ivf":  # every cluster probed: the exact lists
        assert search_depth(served.index) == served.index.nlist and deep == 1.0
    else:
        assert search_depth(served.index) == 5000 and deep >= 0.99


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_lists_cached_from_an_index_are_the_ones_a_request_searches(kind):
    pytest.importorskip("faiss")
    from coldbrew.serving.index import build_index

    served = catalogue(users=40, items=3000, dim=16, seed=5)
    served.index = build_index(served.vectors.items, kind)
    asked = [(user, k) for user in list(served.user_row)[::3] for k in (1, 20, 100)]
    live = {(user, k): served.items_for(user, k) for user, k in asked}
    served.cache_top_lists()
    assert served.top is not None
    for user, k in asked:
        assert served.items_for(user, k) == live[user, k]
    # beyond the cache, the request searches the index again
    assert [row["item"] for row in served.items_for(asked[0][0], 101)][:100] == [
        row["item"] for row in live[asked[0][0], 100]
    ]


def test_a_new_items_users_are_ranked_by_lift_against_the_full_score_matrix():
    served = catalogue(users=60, items=500, dim=8, seed=3)
    vector = torch.from_numpy(np.random.default_rng(4).normal(size=8).astype(np.float32))
    rows, warnings = served.users_for(vector, 10)
    # the plain rule: every user's score of every catalogue item, its mean and std
    matrix = served.users.double() @ served.items.double().T
    lift = ((served.users.double() @ vector.double()) - matrix.mean(1)) / matrix.std(
        1, correction=0
    )
    assert [row["user"] - 100 for row in rows] == torch.topk(lift, 10).indices.tolist()
    assert [row["lift"] for row in rows] == pytest.approx(
        torch.topk(lift, 10).values.tolist(), rel=1e-4
    )
    assert warnings == []


def test_a_popularity_catalogue_answers_a_new_items_users_with_a_warning():
    from coldbrew.new_item import UserBaseline

    served = catalogue(users=5, items=50, dim=1)
    served.users = torch.ones(5, 1)  # content popularity's users: one score for all
    served.baseline = UserBaseline.of(served.users, served.items)
    served.info = {"model": "popularity"}
    rows, warnings = served.users_for(torch.tensor([2.0]), 3)
    assert len(rows) == 3 and len(warnings) == 1
    assert warnings[0].startswith("popularity is not personalised: it gives a new item one score")

"""``coldbrew serve`` over HTTP (a real server on a loopback port, a real client): it answers
what ``coldbrew recommend`` answers, refuses bad input with a one-line 4xx, and reloads
without dropping requests."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import coldbrew
from coldbrew.cli import main
from serving_support import running_server, tiny_clcrec_run

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return tiny_clcrec_run(tmp_path_factory.mktemp("runs") / "clcrec")


@pytest.fixture(scope="module")
def loaded(run):
    return coldbrew.load_run(run)


@pytest.fixture(scope="module")
def served(run):
    with running_server(run, token=TOKEN) as (url, holder):
        with httpx.Client(base_url=url, timeout=30) as client:
            yield client, holder


@pytest.fixture(scope="module")
def export(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("exports") / "clcrec"
    assert main(["export", "--run", str(run), "--out", str(out)]) == 0
    return out


def test_a_users_served_items_are_coldbrew_recommends(served, loaded):
    client, _ = served
    for user in (0, 3, 17, 250, 499):
        for k in (1, 20, 100, 150):  # 150: beyond the lists cached at load, ranked live
            answer = client.get(f"/users/{user}/items", params={"k": k})
            assert answer.status_code == 200
            expected = loaded.recommend(user=user, k=k)
            rows = answer.json()["items"]
            assert [row["item"] for row in rows] == [row["item"] for row in expected]
            assert [row["cold"] for row in rows] == [row["cold"] for row in expected]
            assert [row["score"] for row in rows] == pytest.approx(
                [row["score"] for row in expected], abs=1e-6
            )


def test_an_export_serves_the_same_lists_and_new_items(export, loaded):
    content = loaded.dataset.features["content"]
    with running_server(export) as (url, _), httpx.Client(base_url=url, timeout=30) as client:
        for user in (0, 42, 499):
            rows = client.get(f"/users/{user}/items", params={"k": 30}).json()["items"]
            assert [r["item"] for r in rows] == [
                r["item"] for r in loaded.recommend(user=user, k=30)
            ]
        vector = content[int(loaded.dataset.cold_items[0])].tolist()
        answer = client.post("/items/score", json={"features": vector, "k": 10}).json()
        expected = loaded.recommend(item_features=np.array(vector, np.float32), k=10)
        assert [r["user"] for r in answer["users"]] == [r["user"] for r in expected]
        info = client.get("/info").json()
        assert info["model"] == "clcrec" and info["served"]["source"] == str(export)


def test_a_new_items_users_are_coldbrew_recommends_and_it_can_join(served, loaded):
    client, holder = served
    dataset = loaded.dataset
    vector = dataset.features["content"][int(dataset.cold_items[3])].numpy()
    answer = client.post("/items/score", json={"features": vector.tolist(), "k": 25})
    assert answer.status_code == 200
    expected = loaded.recommend(item_features=vector, k=25)
    assert [r["user"] for r in answer.json()["users"]] == [r["user"] for r in expected]
    # a user's best item, added again under a new id, scores as it does: it joins their list
    user = int(expected[0]["user"])
    best = client.get(f"/users/{user}/items", params={"k": 1}).json()["items"][0]
    row = (
        list(dataset.item_ids).index(best["item"]) if dataset.item_ids is not None else best["item"]
    )
    copy = dataset.features["content"][row].tolist()
    added = client.post("/items/score", json={"features": copy, "add": True, "text": "a copy"})
    assert added.status_code == 200
    assert added.json()["warnings"][0].startswith("the features hold every block the model reads")
    new_id = added.json()["item"]
    assert new_id not in dataset.item_ids if dataset.item_ids is not None else new_id >= 300
    top = client.get(f"/users/{user}/items", params={"k": 5}).json()["items"]
    mine = [r for r in top if r["item"] == new_id]
    assert mine and mine[0]["added"] and mine[0]["cold"] and mine[0]["title"] == "a copy"
    assert "text" not in mine[0]  # the lean answer: whole texts only with ?fields=text
    top = client.get(f"/users/{user}/items", params={"k": 5, "fields": "text"}).json()["items"]
    assert [r["text"] for r in top if r["item"] == new_id] == ["a copy"]
    assert mine[0]["score"] == pytest.approx(best["score"], abs=1e-5)
    assert {"item": new_id, "text": "a copy"} in client.get("/items/added").json()
    assert (
        client.post("/items/score", json={"features": copy, "add": True, "id": new_id}).status_code
        == 409
    )


BIG = "x" * 20_001
F32 = [0.1] * 32  # a new item's vector of the right width
ADD = {"features": F32, "add": True}


@pytest.mark.parametrize(
    "method, path, body, status, fragment",
    [
        ("GET", "/users/99999/items", None, 404, "user 99999 is not in the data"),
        ("GET", "/users/abc/items", None, 422, "user must be an integer"),
        ("GET", "/users/3/items?k=0", None, 422, "k must be at least 1"),
        ("GET", "/users/3/items?k=-5", None, 422, "k must be at least 1"),
        ("GET", "/users/3/items?k=100000", None, 422, "more than the"),
        ("GET", "/users/3/items?k=ten", None, 422, "k must be an integer"),
        ("GET", "/users/3/items?k=1.5", None, 422, "k must be an integer"),
        ("GET", "/users/3/items?fields=plot", None, 422, "unknown field 'plot'"),
        ("POST", "/items/score", {"features": [1.0, 2.0]}, 422, "expected 32"),
        ("POST", "/items/score", b'{"features": [NaN]}', 422, "NaN or infinite"),
        ("POST", "/items/score", b'{"features": [Infinity, 1]}', 422, "NaN or infinite"),
        ("POST", "/items/score", {"features": ["a"]}, 422, "features.0"),
        ("POST", "/items/score", {"features": [[1, 2]]}, 422, "features.0"),
        ("POST", "/items/score", {"text": BIG}, 413, "at most 20000"),
        ("POST", "/items/score", {"text": "   "}, 422, "text is empty"),
        ("POST", "/items/score", b'{"features": [1,', 400, "malformed JSON"),
        ("POST", "/items/score", b"[1, 2]", 422, "must be a JSON object"),
        ("POST", "/items/score", b"", 400, "no JSON body"),
        ("POST", "/items/score", b"\xff\xfe", 400, "malformed JSON"),
        ("POST", "/items/score", {"features": [0.1] * 32, "colour": 1}, 422, "colour"),
        ("POST", "/items/score", {"features": [0.1] * 32, "add": "yes"}, 422, "add"),
        ("POST", "/items/score", {"text": "a film"}, 422, "reads no text"),
        ("POST", "/items/score", {}, 422, "text and/or features"),
        ("POST", "/items/score", {"features": [0.1] * 32, "k": 0}, 422, "k must be at least 1"),
        ("POST", "/items/score", {"features": [0.1] * 32, "k": 501}, 422, "more than the 500"),
        ("POST", "/items/score", b"{" + b'"t":"' + b"x" * (1 << 20) + b'"}', 413, "over"),
        ("GET", "/nowhere", None, 404, "Not Found"),
        ("DELETE", "/health", None, 405, "Method Not Allowed"),
        ("POST", "/reload", None, 401, "wrong or missing token"),
        # strict types: no string, boolean or float for an integer
        ("POST", "/items/score", {"features": F32, "k": "5"}, 422, 'k must be an integer, not "5"'),
        (
            "POST",
            "/items/score",
            {"features": F32, "k": True},
            422,
            "k must be an integer, not true",
        ),
        ("POST", "/items/score", {"features": F32, "k": 2.0}, 422, "k must be an integer, not 2.0"),
        ("POST", "/items/score", {"features": [True] * 32}, 422, "features.0"),
        ("GET", "/users/3/items?k=5_0", None, 422, "k must be an integer"),
        ("GET", "/users/3/items?k=+5", None, 422, "k must be an integer"),
        ("GET", "/users/+3/items", None, 422, "user must be an integer"),
        # ids: the export's int64, and only for an item added
        ("POST", "/items/score", {**ADD, "id": 2**64}, 422, "from 0 to 9223372036854775807"),
        ("POST", "/items/score", {**ADD, "id": -1}, 422, "ids are int64"),
        ("POST", "/items/score", {**ADD, "id": "7"}, 422, 'id must be an integer, not "7"'),
        ("POST", "/items/score", {"features": F32, "id": 7}, 422, 'with "add": true'),
        # unknown query parameters, on every route
        ("GET", "/users/3/items?k=5&colour=red", None, 422, "unknown query parameter 'colour'"),
        ("GET", "/health?verbose=1", None, 422, "GET /health takes no query parameters"),
        ("GET", "/info?x=1", None, 422, "unknown query parameter 'x'"),
        ("GET", "/items/added?x=1", None, 422, "unknown query parameter 'x'"),
        ("POST", "/items/score?k=5", {"features": F32}, 422, "unknown query parameter 'k'"),
        ("POST", "/reload?force=1", None, 422, "unknown query parameter 'force'"),
        # a bad k, or an id taken, is named before the item's content is looked at
        ("POST", "/items/score", {"features": [1.0], "k": 0}, 422, "k must be at least 1"),
        ("POST", "/items/score", {"text": "a film", "k": 501}, 422, "more than the 500"),
        ("POST", "/items/score", {"features": [1.0], "add": True, "id": 0}, 409, "already in"),
    ],
)
def test_bad_input_is_a_one_line_4xx(served, method, path, body, status, fragment):
    client, _ = served
    options = {"json": body} if isinstance(body, dict) else {"content": body}
    answer = client.request(method, path, **options)
    assert answer.status_code == status, answer.text
    message = answer.json()["error"]
    assert fragment in message
    assert "\n" not in message and "Traceback" not in message


def test_reload_under_load_drops_no_request(served):
    client, holder = served
    url = str(client.base_url)
    failures, answers = [], []
    stop = threading.Event()

    def hammer():
        with httpx.Client(base_url=url, timeout=60) as own:
            while not stop.is_set():
                answer = own.get("/users/7/items", params={"k": 10})
                (answers if answer.status_code == 200 else failures).append(answer.status_code)

    workers = [threading.Thread(target=hammer) for _ in range(4)]
    for worker in workers:
        worker.start()
    before = holder.reloads
    for _ in range(2):
        answer = client.post("/reload", headers={"Authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == 200, answer.text
    stop.set()
    for worker in workers:
        worker.join()
    assert holder.reloads == before + 2
    assert not failures and len(answers) > 10
    # the added items were carried over (encoded again by the reloaded model)
    assert client.get("/health").json()["status"] == "ok"


def test_reload_without_a_token_is_off(run):
    with running_server(run) as (url, _), httpx.Client(base_url=url) as client:
        answer = client.post("/reload", headers={"Authorization": "Bearer anything"})
        assert answer.status_code == 403 and "SIGHUP" in answer.json()["error"]
        assert client.get("/docs").status_code == 200
        assert "/users/{user}/items" in client.get("/openapi.json").json()["paths"]


def test_ids_stay_in_int64_added_items_are_counted_and_zero_features_warned(run):
    with running_server(run) as (url, _), httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/health").json() == {
            "status": "ok",
            "users": 500,
            "items": 300,
            "added_items": 0,
        }
        answer = client.post("/items/score", json={**ADD, "id": 2**63 - 1, "k": 3})
        assert answer.status_code == 200 and answer.json()["item"] == 2**63 - 1
        assert "warnings" not in answer.json()
        answer = client.post("/items/score", json={**ADD, "k": 3})  # no next id in int64
        assert answer.status_code == 409, answer.text
        assert 'give the new item an unused "id"' in answer.json()["error"]
        assert client.post("/items/score", json={**ADD, "id": 300}).json()["item"] == 300
        assert client.get("/health").json()["added_items"] == 2
        answer = client.post("/items/score", json={"features": [0.0] * 32, "k": 3})
        assert answer.status_code == 200
        assert answer.json()["warnings"] == [
            "the item's features are all zero: its users are ranked from no content at all"
        ]


def test_a_user_id_holding_a_slash_is_found_when_sent_as_percent_2f():
    from starlette.testclient import TestClient

    from coldbrew.serving.app import Holder, create_app
    from coldbrew.serving.catalogue import Catalogue
    from coldbrew.serving.export_format import Vectors

    vectors = Vectors(
        users=np.array([[1.0, 0.0], [0.0, 1.0]], np.float32),
        items=np.array([[2.0, 0.0], [0.0, 3.0], [1.0, 1.0]], np.float32),
        user_ids=np.array(["a/b", "c"], dtype=object),
        item_ids=np.array([10, 11, 12], np.int64),
        cold_items=np.zeros(0, np.int64),
        train_indptr=np.array([0, 0, 0], np.int64),
        train_indices=np.zeros(0, np.int64),
    )
    holder = Holder.__new__(Holder)  # served from memory: no run folder to load
    holder.catalogue, holder.reloads, holder.token = Catalogue(vectors, {}), 0, None
    client = TestClient(create_app(holder))
    answer = client.get("/users/a%2Fb/items", params={"k": 2})
    assert answer.status_code == 200, answer.text
    # user a/b = (1, 0): items 10 (2), 12 (1), 11 (0)
    assert [row["item"] for row in answer.json()["items"]] == [10, 12]
    assert answer.json()["user"] == "a/b"
    missing = client.get("/users/a%2Fz/items")
    assert missing.status_code == 404 and "a/z" in missing.json()["error"]


def test_added_ids_have_the_catalogues_type_where_item_ids_are_text(tmp_path):
    """A shop's articles art-0.. and one "31": 31 is that item, art-99 a new one, and an item
    sent without an id gets added-N; every id is text, so one list never holds 31 and "31"."""
    from shop_support import shop_run

    out = tmp_path / "export"
    assert main(["export", "--run", str(shop_run(tmp_path)), "--out", str(out)]) == 0
    with running_server(out) as (url, _), httpx.Client(base_url=url, timeout=30) as client:
        blocks = client.get("/info").json()["new_items"]["feature_blocks"]
        width = sum(block["width"] for block in blocks)
        item = {"features": [1.0] + [0.0] * (width - 1), "add": True, "k": 3}
        taken = client.post("/items/score", json={**item, "id": 31})
        assert taken.status_code == 409, taken.text
        error = taken.json()["error"]
        assert error.startswith('item "31" is already in the catalogue (an integer id is read')
        assert client.post("/items/score", json={**item, "id": "art-99"}).json()["item"] == "art-99"
        again = client.post("/items/score", json={**item, "id": "art-99"})
        assert again.status_code == 409 and "already in the catalogue" in again.json()["error"]
        assert client.post("/items/score", json=item).json()["item"] == "added-2"
        assert client.post("/items/score", json={**item, "id": 7}).json()["item"] == "7"
        for bad, message in ((" x", "without surrounding spaces"), (2.0, "integer or a text")):
            answer = client.post("/items/score", json={**item, "id": bad})
            assert answer.status_code == 422 and message in answer.json()["error"]
        answer = client.get("/users/c7/items", params={"k": 40})
        rows = answer.json()["items"]
        assert all(isinstance(row["item"], str) for row in rows)
        assert len({row["item"] for row in rows}) == len(rows)
        assert {"art-99", "added-2", "7"} <= {row["item"] for row in rows}  # added, quoted
        assert client.get("/users/7/items").status_code == 404  # "7" is no customer here


def test_an_added_id_is_checked_against_the_catalogues_id_type():
    from coldbrew.serving.added_ids import MAX_ID, added_item_id
    from coldbrew.serving.new_items import BadRequest

    assert added_item_id(None, {0, 4, "x"}, False, 0) == 5  # after the largest integer taken
    assert added_item_id(9, {0, 4}, False, 0) == 9
    for wanted, taken, status in (("9", {0}, 422), (MAX_ID + 1, {0}, 422), (4, {4}, 409)):
        with pytest.raises(BadRequest) as refused:
            added_item_id(wanted, taken, False, 0)
        assert refused.value.status == status
    # text ids: added-N from the count of added items, past any taken; an integer is its text
    assert added_item_id(None, {"a", "added-2", "added-3"}, True, 1) == "added-4"
    assert added_item_id(-1, {"a"}, True, 0) == "-1"
    for wanted, status in ((7, 409), ("", 422), ("x" * 201, 422), (True, 422)):
        with pytest.raises(BadRequest) as refused:
            added_item_id(wanted, {"7"}, True, 0)
        assert refused.value.status == status

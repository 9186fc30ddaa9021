"""Raw MovieLens-100K: parsing, the seeded item cold-start protocol, and the verified download."""

from __future__ import annotations

import hashlib
import http.client
import io
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import requests

from coldbrew.data import load_dataset, resolve_data_path
from coldbrew.data.loaders import ml100k_download, movielens
from coldbrew.data.loaders.ml100k_download import download_ml100k
from coldbrew.data.loaders.movielens import _split_warm_per_user, split_cold_start
from coldbrew.errors import DataError
from conftest import shared_path

NUM_USERS, NUM_ITEMS = 12, 20


def item_line(item: int, title: str, genres: tuple[int, ...]) -> str:
    flags = ["1" if index in genres else "0" for index in range(19)]
    return "|".join([str(item), title, "01-Jan-1995", "", "http://x", *flags])


def write_ml100k(root: Path, *, ratings: str | None = None, extra_items: str = "") -> Path:
    """12 users x 20 items, every user rating items 1..15 plus a user-dependent three more."""
    root.mkdir(parents=True, exist_ok=True)
    items = [
        item_line(1, "Café Society (1995)", (8,)),
        item_line(2, "Usual Suspects, The (1995)", (6, 16)),
    ]
    items += [
        item_line(item, f"Film {item} (1990)", (item % 19,)) for item in range(3, NUM_ITEMS + 1)
    ]
    (root / "u.item").write_bytes(("\n".join(items) + "\n" + extra_items).encode("latin-1"))
    if ratings is None:
        rows = [
            (user, item)
            for user in range(1, NUM_USERS + 1)
            for item in [*range(1, 16), *(16 + (user + k) % 5 for k in range(3))]
        ]
        ratings = "".join(f"{user}\t{item}\t4\t88125{user:04d}\n" for user, item in rows)
    (root / "u.data").write_text(ratings)
    return root


def load(path: Path, **kwargs):
    return movielens.load(path, features=kwargs.pop("features", ["genre"]), **kwargs)


def pairs(matrix) -> set[tuple[int, int]]:
    coo = matrix.tocoo()
    return set(zip(coo.row.tolist(), coo.col.tolist(), strict=True))


# ---------------------------------------------------------------------------------- protocol
def test_per_user_warm_split_sizes():
    # per user c -> floor(0.1 c + 0.5) each to val and test: 4 -> 0, 5 -> 1, 10 -> 1, 15 -> 2, 25 -> 3
    counts = [4, 5, 10, 15, 25]
    users = np.repeat(np.arange(len(counts)), counts)
    part = _split_warm_per_user(users, np.random.default_rng(0))
    sizes = [np.bincount(part[users == user], minlength=3).tolist() for user in range(len(counts))]
    assert sizes == [[4, 0, 0], [3, 1, 1], [8, 1, 1], [11, 2, 2], [19, 3, 3]]


def test_split_partitions_every_interaction(tmp_path):
    dataset = load(write_ml100k(tmp_path))
    splits = dataset.splits
    assert len(dataset.cold_items) == round(0.2 * NUM_ITEMS)  # 4
    val_cold, test_cold = (set(splits[s]["cold"].indices.tolist()) for s in ("val", "test"))
    assert not val_cold & test_cold and val_cold | test_cold <= set(dataset.cold_items.tolist())
    pieces = [
        pairs(dataset.train),
        *(pairs(splits[s][g]) for s in ("val", "test") for g in ("warm", "cold")),
    ]
    assert sum(len(piece) for piece in pieces) == len(set().union(*pieces)) == NUM_USERS * 18
    for split in ("val", "test"):
        assert pairs(splits[split]["all"]) == pairs(splits[split]["warm"]) | pairs(
            splits[split]["cold"]
        )
    assert not set(dataset.train.indices.tolist()) & set(dataset.cold_items.tolist())
    assert pairs(dataset.known) == set().union(*pieces)


def test_cold_items_without_ratings_and_warm_items_without_training_stay_put():
    # items 0..9; one user rates 0..8; cold fraction 0.2 picks 2 items; item 9 has no rating
    users, items = np.zeros(9, dtype=np.int64), np.arange(9)
    train, splits, cold = split_cold_start(users, items, (1, 10), seed=3)
    assert len(cold) == 2 and 9 in cold  # seed 3 draws the unrated item: it stays cold
    assert "cold" not in splits["val"]  # val's one cold item is 9, with nothing to hold out
    assert pairs(splits["test"]["cold"]) == {(0, int(cold[cold != 9][0]))}
    # 8 warm ratings: floor(0.8 + 0.5) = 1 each to val and test; those two items keep no
    # training interaction and still are warm, not cold
    held_out = pairs(splits["val"]["warm"]) | pairs(splits["test"]["warm"])
    assert len(held_out) == 2
    warm_without_train = set(range(10)) - set(cold.tolist()) - set(train.indices.tolist())
    assert warm_without_train == {item for _, item in held_out}
    assert not set(train.indices.tolist()) & set(cold.tolist())


def test_split_is_seeded(tmp_path):
    write_ml100k(tmp_path)
    first, again, other = load(tmp_path, seed=1), load(tmp_path, seed=1), load(tmp_path, seed=2)
    assert np.array_equal(first.cold_items, again.cold_items)
    assert (first.train != again.train).nnz == 0
    assert (
        not np.array_equal(first.cold_items, other.cold_items) or (first.train != other.train).nnz
    )


def test_ids_titles_and_genres(tmp_path):
    dataset = load(write_ml100k(tmp_path))
    assert dataset.user_ids.tolist() == list(range(1, NUM_USERS + 1))
    assert dataset.item_ids.tolist() == list(range(1, NUM_ITEMS + 1))
    assert dataset.item_text[0] == "Café Society (1995). Genres: Drama."  # u.item is latin-1
    assert dataset.item_text[1] == "The Usual Suspects (1995). Genres: Crime, Thriller."
    assert (
        dataset.features["genre"].shape == (NUM_ITEMS, 19) and dataset.features["genre"].sum() == 21
    )


def test_users_missing_from_u_user_are_dropped_with_a_note(tmp_path):
    write_ml100k(tmp_path)
    (tmp_path / "u.user").write_text(
        "".join(f"{u}|30|M|other|00000\n" for u in range(1, NUM_USERS + 1))
    )
    with open(tmp_path / "u.data", "a") as file:
        file.write(
            "0\t1\t5\t883603013\t\n0\t2\t5\t883603013\n"
        )  # trailing tab as in the shared copy
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # notes reach the user through the CLI, not as warnings
        dataset = movielens.load(tmp_path, features=["genre"])
    assert dataset.num_users == NUM_USERS
    assert dataset.notes == ["u.data: 2 rating(s) by 1 user(s) not in u.user (e.g. user 0) dropped"]


def test_u_user_gives_one_text_per_user(tmp_path):
    write_ml100k(tmp_path)
    lines = [f"{u}|{20 + u}|{'MF'[u % 2]}|writer|0{u:04d}" for u in range(NUM_USERS, 0, -1)]
    (tmp_path / "u.user").write_text("\n".join(lines) + "\n")  # any order: keyed by id
    dataset = load(tmp_path)
    assert len(dataset.user_text) == NUM_USERS
    assert dataset.user_text[0] == "User: 21 years old, female, writer, zip code 00001."
    assert dataset.user_text[1] == "User: 22 years old, male, writer, zip code 00002."
    assert load(write_ml100k(tmp_path / "without")).user_text is None


def test_malformed_u_user_is_a_data_error(tmp_path):
    write_ml100k(tmp_path)
    (tmp_path / "u.user").write_text("".join(f"{u}|30|M|other\n" for u in range(1, 13)))
    with pytest.raises(DataError, match=r"u.user, line 1: expected 'id\|age\|gender"):
        load(tmp_path)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ratings": "1\t1\t5\t1\n1\t99\t5\t1\n"}, r"u.data: item 99 is not in u.item"),
        ({"ratings": "1\t1\t5\t1\n1\tx\t5\t1\n"}, r"u.data, line 2: expected 4 integers"),
        ({"ratings": "1\t1\t5\n"}, r"u.data, line 1: expected 4 integers"),
        ({"ratings": "1\t1\t5\t1\t9\n1\t2\t5\t1\n"}, r"u.data, line 1: expected 4 integers"),
        ({"ratings": "1\t1\t5\t1\n1\t2\t5.0\t1\n"}, r"u.data, line 2: expected 4 integers"),
        ({"ratings": "\n"}, r"u.data: empty file"),
        ({"extra_items": "21|Short|line\n"}, r"u.item, line 21: expected 'id\|title"),
        (
            {"extra_items": item_line(3, "Again", (1,)) + "\n"},
            r"u.item, line 21: item 3 listed twice",
        ),
    ],
)
def test_malformed_input_is_a_data_error(tmp_path, kwargs, message):
    with pytest.raises(DataError, match=message):
        load(write_ml100k(tmp_path, **kwargs))


def test_bad_options(tmp_path):
    write_ml100k(tmp_path)
    with pytest.raises(DataError, match="unknown option"):
        load(tmp_path, colds=0.3)
    with pytest.raises(DataError, match="cold_fraction must be between 0 and 1"):
        load(tmp_path, cold_fraction=1.5)


# ---------------------------------------------------------------------------------- shared data
@pytest.fixture(scope="module")
def ml100k():
    return load(shared_path("ml-100k"), seed=0)


def test_ml100k_counts(ml100k):
    dataset = ml100k
    assert dataset.num_users == 943 and dataset.num_items == 1682
    total = dataset.train.nnz + sum(
        dataset.splits[s][g].nnz for s in ("val", "test") for g in ("warm", "cold")
    )
    assert total == 100_000
    assert len(dataset.cold_items) == 336  # round(0.2 * 1682)
    val_cold, test_cold = (np.unique(dataset.splits[s]["cold"].indices) for s in ("val", "test"))
    assert len(np.intersect1d(val_cold, test_cold)) == 0
    assert dataset.features["genre"].shape == (1682, 19)
    assert dataset.user_text[0] == "User: 24 years old, male, technician, zip code 85711."


def test_ml100k_is_deterministic_under_a_seed(ml100k):
    again, other = load(shared_path("ml-100k"), seed=0), load(shared_path("ml-100k"), seed=1)
    assert np.array_equal(again.cold_items, ml100k.cold_items)
    assert (again.splits["test"]["warm"] != ml100k.splits["test"]["warm"]).nnz == 0
    assert not np.array_equal(other.cold_items, ml100k.cold_items)


# ---------------------------------------------------------------------------------- download
def make_archive(root: Path, members: dict[str, bytes] | None = None) -> bytes:
    if members is None:
        source = write_ml100k(root / "source")
        members = {f"ml-100k/{name}": (source / name).read_bytes() for name in ("u.data", "u.item")}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, content in members.items():
            bundle.writestr(name, content)
    return buffer.getvalue()


class FakeResponse:
    """What pooch's HTTP downloader reads of a ``requests`` response."""

    def __init__(self, payload: bytes | Exception):
        self.payload, self.headers = payload, {}

    def raise_for_status(self) -> None:
        pass

    def iter_content(self, chunk_size: int):
        if isinstance(self.payload, Exception):
            raise self.payload
        yield self.payload


def serve(monkeypatch, payload: bytes | Exception, *, on_get: Exception | None = None) -> list[str]:
    """Make ``requests.get`` answer with ``payload`` (or raise ``on_get``); returns the URLs."""
    requested: list[str] = []

    def fake_get(url, timeout=None, **options):
        requested.append(url)
        assert timeout is not None
        if on_get is not None:
            raise on_get
        return FakeResponse(payload)

    monkeypatch.setattr(requests, "get", fake_get)
    return requested


def test_download_verifies_unpacks_once_and_loads(tmp_path, monkeypatch):
    payload = make_archive(tmp_path)
    monkeypatch.setattr(ml100k_download, "ML100K_SHA256", hashlib.sha256(payload).hexdigest())
    requested = serve(monkeypatch, payload)
    target = download_ml100k(tmp_path / "cache" / "ml-100k")
    assert requested == [ml100k_download.ML100K_URL] and movielens.detect(target)
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(".")] == []  # no leftovers
    assert download_ml100k(target) == target and len(requested) == 1
    assert load(target).num_items == NUM_ITEMS


def test_resolve_data_path_downloads_into_the_cache(tmp_path, monkeypatch):
    payload = make_archive(tmp_path)
    monkeypatch.setattr(ml100k_download, "ML100K_SHA256", hashlib.sha256(payload).hexdigest())
    serve(monkeypatch, payload)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLDBREW_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path / "cache"))
    assert resolve_data_path("ml-100k") == tmp_path / "cache" / "data" / "ml-100k"


def test_checksum_mismatch_is_refused(tmp_path, monkeypatch):
    payload = make_archive(tmp_path)
    serve(monkeypatch, payload)
    actual = hashlib.sha256(payload).hexdigest()
    with pytest.raises(
        DataError,
        match=f"SHA-256 {actual} does not match the published {ml100k_download.ML100K_SHA256}",
    ):
        download_ml100k(tmp_path / "cache" / "ml-100k")
    assert list((tmp_path / "cache").iterdir()) == []


def test_network_failure_explains_what_to_do(tmp_path, monkeypatch):
    serve(monkeypatch, b"", on_get=requests.ConnectionError("no route to host"))
    with pytest.raises(DataError, match=r"download failed: .*no route to host.*set COLDBREW_DATA"):
        download_ml100k(tmp_path / "cache" / "ml-100k")


def leftovers(folder: Path) -> list[str]:
    """Every file and folder under ``folder`` (hidden temporaries included), relative."""
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def test_a_transfer_cut_short_is_a_data_error_and_leaves_nothing(tmp_path, monkeypatch):
    cut = http.client.IncompleteRead(b"PK\x03\x04", 5_000_000)
    serve(monkeypatch, requests.exceptions.ChunkedEncodingError(cut))
    with pytest.raises(DataError, match=r"download failed: IncompleteRead.*set COLDBREW_DATA"):
        download_ml100k(tmp_path / "cache" / "ml-100k")
    assert leftovers(tmp_path / "cache") == []


@pytest.fixture
def local_server(tmp_path):
    """An HTTP server on the loopback address serving ``tmp_path / "served"``; its base URL."""
    import functools
    import http.server
    import threading

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    (tmp_path / "served").mkdir()
    handler = functools.partial(QuietHandler, directory=str(tmp_path / "served"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_real_download_from_a_local_server(tmp_path, monkeypatch, local_server):
    payload = make_archive(tmp_path)
    (tmp_path / "served" / "mirror.zip").write_bytes(payload)
    monkeypatch.setattr(ml100k_download, "ML100K_SHA256", hashlib.sha256(payload).hexdigest())
    monkeypatch.setattr(ml100k_download, "ML100K_URL", f"{local_server}/missing.zip")
    with pytest.raises(DataError, match=r"download failed: 404 .*missing.zip"):
        download_ml100k(tmp_path / "cache" / "ml-100k")
    assert leftovers(tmp_path / "cache") == []
    monkeypatch.setattr(ml100k_download, "ML100K_URL", f"{local_server}/mirror.zip")
    target = download_ml100k(tmp_path / "cache" / "ml-100k")
    assert leftovers(tmp_path / "cache") == [
        "ml-100k",
        "ml-100k.zip",
        "ml-100k/u.data",
        "ml-100k/u.item",
    ]
    assert load(target).num_items == NUM_ITEMS


def test_a_kept_archive_with_another_digest_is_fetched_again(tmp_path, monkeypatch):
    payload = make_archive(tmp_path)
    monkeypatch.setattr(ml100k_download, "ML100K_SHA256", hashlib.sha256(payload).hexdigest())
    requested = serve(monkeypatch, payload)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "ml-100k.zip").write_bytes(b"an older, damaged archive")
    target = download_ml100k(tmp_path / "cache" / "ml-100k")
    assert len(requested) == 1 and load(target).num_items == NUM_ITEMS
    assert (tmp_path / "cache" / "ml-100k.zip").read_bytes() == payload


def test_a_cache_that_cannot_be_written_is_a_data_error(tmp_path, monkeypatch):
    serve(monkeypatch, AssertionError("nothing may be downloaded"))
    (tmp_path / "cache").write_text("a file where the cache folder should be")
    with pytest.raises(DataError, match=r"cannot write ml-100k into .*set COLDBREW_CACHE"):
        download_ml100k(tmp_path / "cache" / "data" / "ml-100k")


def test_a_failed_unpack_keeps_only_the_verified_archive(tmp_path, monkeypatch):
    payload = make_archive(tmp_path)
    monkeypatch.setattr(ml100k_download, "ML100K_SHA256", hashlib.sha256(payload).hexdigest())
    requested = serve(monkeypatch, payload)

    def disk_full(bundle, destination):
        (Path(destination) / "ml-100k").mkdir()
        (Path(destination) / "ml-100k" / "u.data").write_text("1\t1\t")  # half a file
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(zipfile.ZipFile, "extractall", disk_full)
        with pytest.raises(DataError, match="cannot write ml-100k into .*No space left"):
            download_ml100k(tmp_path / "cache" / "ml-100k")
    assert leftovers(tmp_path / "cache") == ["ml-100k.zip"]  # verified, so kept for next time
    target = download_ml100k(tmp_path / "cache" / "ml-100k")
    assert len(requested) == 1 and load(target).num_items == NUM_ITEMS


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({"../evil": b"x"}, "unsafe path"),
        ({"ml-100k/README": b"x"}, "no ml-100k/u.data and u.item"),
    ],
)
def test_bad_archives_are_refused(tmp_path, monkeypatch, members, message):
    payload = make_archive(tmp_path, members)
    monkeypatch.setattr(ml100k_download, "ML100K_SHA256", hashlib.sha256(payload).hexdigest())
    serve(monkeypatch, payload)
    with pytest.raises(DataError, match=message):
        download_ml100k(tmp_path / "cache" / "ml-100k")
    assert not (tmp_path / "cache" / "ml-100k").exists()


def test_not_a_zip_is_removed(tmp_path, monkeypatch):
    payload = b"<html>maintenance</html>"
    monkeypatch.setattr(ml100k_download, "ML100K_SHA256", hashlib.sha256(payload).hexdigest())
    serve(monkeypatch, payload)
    with pytest.raises(DataError, match="not a valid zip"):
        download_ml100k(tmp_path / "cache" / "ml-100k")
    assert not (tmp_path / "cache" / "ml-100k.zip").exists()


def test_ml100k_through_load_dataset():
    shared_path("ml-100k")  # skips when the shared data is absent (a clone outside the workspace)
    dataset = load_dataset("ml-100k", features="genre", seed=0)
    assert dataset.name == "ml-100k" and dataset.num_users == 943


def test_the_genre_columns_are_named_in_their_order_not_u_items_flag_order(tmp_path):
    dataset = load(write_ml100k(tmp_path / "ml"))
    columns = dataset.feature_columns["genre"]
    assert columns[0] == "Action" and columns[-1] == "unknown"  # sorted by name
    genre = dataset.features["genre"]
    by_title = {text.split(" (")[0]: row for row, text in enumerate(dataset.item_text)}
    # u.item flags 6 and 16 are Crime and Thriller (flag 0 is unknown)
    named = {columns[c] for c in genre[by_title["The Usual Suspects"]].nonzero().flatten()}
    assert named == {"Crime", "Thriller"}
    layout = dataset.feature_layout()
    assert layout == [{"block": "genre", "width": 19, "columns": columns}]
    assert dataset.summary()["feature_columns"] == {"genre": columns}


def test_a_converted_copy_keeps_the_column_names(tmp_path):
    from coldbrew.data.loaders import stored

    dataset = load(write_ml100k(tmp_path / "ml"))
    stored.save(dataset, tmp_path / "copy")
    again = stored.load(tmp_path / "copy", None)
    assert again.feature_columns == dataset.feature_columns


def test_a_missing_dataset_names_each_place_looked_in_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLDBREW_DATA", ".")  # $COLDBREW_DATA/shop is ./shop, the path as given
    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DataError) as raised:
        resolve_data_path("shop")
    cache = tmp_path / "cache" / "data" / "shop"
    assert str(raised.value).endswith(f"(looked in: shop, {cache})")

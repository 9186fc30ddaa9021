"""Load test of ``coldbrew serve`` with wrk (Debian's ``wrk``), loopback only, bounded.

    python benchmarks/serving/serve_load.py users --run runs/ml1m      # GET /users/{id}/items?k=20
    python benchmarks/serving/serve_load.py new-items --run runs/ml1m  # POST /items/score, text
    python benchmarks/serving/serve_load.py synthetic --items 1000000  # 1M items, HNSW export
    python benchmarks/serving/serve_load.py synthetic --items 1000000 --keep /tmp/syn1m  # kept:
    python benchmarks/serving/serve_load.py users --run /tmp/syn1m     # then served again

``users``: wrk, 16 connections, 2 threads, 10 s, a random user per request; prints requests/s,
p99 and the non-2xx / socket-error counts (and, served from an index, the recall@20 of 200
users' served lists against exact scoring, asked over HTTP first). ``new-items``: one client, 200 new items from text
(distinct texts, so nothing is cached), p50/p99 of the round trip. ``synthetic``: clustered
random vectors (64 wide), an HNSW export, recall@20 of the index against exact scoring over
500 users (at the served efSearch and a few others), then the ``users`` load test against it.
The server runs in a subprocess on a free port of 127.0.0.1 and is stopped at the end; its CPU
seconds per request (``/proc/PID/stat``) are printed beside wrk's figures, a measure that a
busy machine disturbs less than requests/s. BENCHMARKS.md holds the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(source: str, port: int, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "coldbrew", "serve", "--run", source, "--port", str(port)]
    server = subprocess.Popen([*command, *extra], env=env)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"the server exited with {server.returncode}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
            return server
        except OSError:
            time.sleep(0.5)
    server.terminate()
    sys.exit("the server did not start in 600 s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def user_ids(export: Path, count: int = 2000) -> list[int]:
    """``count`` of the export's users (the data's own ids), spread over its rows."""
    from coldbrew.serving.export_format import read_vectors

    ids = read_vectors(export).user_ids
    return [int(ids[int(row * len(ids) / count)]) for row in range(min(count, len(ids)))]


def wrk_users(port: int, rows: list[int], seconds: int, connections: int) -> dict:
    """wrk against /users/{id}/items?k=20 for ids picked at random from ``rows``' users."""
    if shutil.which("wrk") is None:
        sys.exit("wrk not found: apt-get install -y wrk")
    script = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
    script.write(
        "local ids = {" + ",".join(map(str, rows)) + "}\n"
        "request = function()\n"
        "  return wrk.format('GET', '/users/' .. ids[math.random(#ids)] .. '/items?k=20')\n"
        "end\n"
    )
    script.close()
    command = [
        "wrk",
        "-t2",
        f"-c{connections}",
        f"-d{seconds}s",
        "--latency",
        "-s",
        script.name,
        f"http://127.0.0.1:{port}",
    ]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    os.unlink(script.name)
    return parse_wrk(output)


def parse_wrk(output: str) -> dict:
    def number(pattern: str, default: float = 0.0) -> float:
        found = re.search(pattern, output)
        return float(found.group(1)) if found else default

    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", output)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    return {
        "requests_per_second": number(r"Requests/sec:\s+([\d.]+)"),
        "p99_ms": float(p99.group(1)) * scale[p99.group(2)] if p99 else None,
        "requests": number(r"(\d+) requests in"),
        "non_2xx": number(r"Non-2xx or 3xx responses:\s+(\d+)"),
        "socket_errors": sum(
            int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", output)
        ),
        "wrk": output,
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def new_items(port: int, count: int, genres: int) -> dict:
    import httpx

    times = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        for number in range(count + 5):
            body = {
                "text": f"Untitled film {number} ({1990 + number % 30}). Genres: Drama.",
                "k": 100,
            }
            if genres:
                body["features"] = [1.0 if g == number % genres else 0.0 for g in range(genres)]
            started = time.perf_counter()
            answer = client.post("/items/score", json=body)
            elapsed = (time.perf_counter() - started) * 1e3
            if answer.status_code != 200:
                sys.exit(f"POST /items/score answered {answer.status_code}: {answer.text}")
            if number >= 5:  # the first few warm the encoder's caches
                times.append(elapsed)
    return {"requests": count, "p50_ms": percentile(times, 50), "p99_ms": percentile(times, 99)}


def served_recall(port: int, export: Path, count: int = 200, k: int = 20) -> float:
    """Recall@``k`` of the served lists (``GET /users/{id}/items``, over HTTP) against exact
    scoring of every item but the user's training items, for ``count`` users."""
    import numpy as np

    from coldbrew.serving.export_format import read_vectors

    vectors = read_vectors(export)
    rows = [int(row * len(vectors.user_ids) / count) for row in range(count)]
    found = []
    for start in range(0, len(rows), 25):  # 25 users x all items at a time
        chunk = rows[start : start + 25]
        scores = vectors.users[chunk] @ vectors.items.T
        for at, row in enumerate(chunk):
            seen = vectors.train_indices[vectors.train_indptr[row] : vectors.train_indptr[row + 1]]
            scores[at, seen] = -np.inf
            exact = set(vectors.item_ids[np.argpartition(-scores[at], k)[:k]].tolist())
            user = int(vectors.user_ids[row])
            url = f"http://127.0.0.1:{port}/users/{user}/items?k={k}"
            with urllib.request.urlopen(url, timeout=30) as answer:
                served = {item["item"] for item in json.load(answer)["items"]}
            found.append(len(served & exact) / k)
    return float(np.mean(found))


def synthetic_export(out: Path, items: int, users: int, dim: int, seed: int) -> dict:
    """Clustered vectors (1,000 centres), an HNSW export, recall@20 of the index vs exact."""
    import numpy as np

    from coldbrew.serving.export_format import Vectors, write_export
    from coldbrew.serving.index import build_index

    random = np.random.default_rng(seed)
    centres = random.normal(size=(1000, dim)).astype(np.float32)
    item_vectors = centres[random.integers(0, 1000, items)]
    item_vectors += 0.5 * random.normal(size=(items, dim)).astype(np.float32)
    user_vectors = centres[random.integers(0, 1000, users)]
    user_vectors += 0.5 * random.normal(size=(users, dim)).astype(np.float32)
    vectors = Vectors(
        users=user_vectors,
        items=item_vectors,
        user_ids=np.arange(users, dtype=np.int64),
        item_ids=np.arange(items, dtype=np.int64),
        cold_items=np.zeros(0, np.int64),
        train_indptr=np.zeros(users + 1, np.int64),
        train_indices=np.zeros(0, np.int64),
    )
    started = time.perf_counter()
    index = build_index(item_vectors, "hnsw", progress=True)
    build_seconds = time.perf_counter() - started
    probe = user_vectors[:500]
    exact = np.argpartition(-(probe @ item_vectors.T), 20, axis=1)[:, :20]
    served_depth = index.hnsw.efSearch
    recall = {}
    for depth in sorted({32, 64, 128, 256, served_depth}):
        index.hnsw.efSearch = depth
        _, found = index.search(probe, 20)
        recall[depth] = float(
            np.mean([len(set(a) & set(b)) / 20 for a, b in zip(found, exact, strict=True)])
        )
    index.hnsw.efSearch = served_depth
    manifest = {
        "model": "synthetic",
        "data": {"name": f"synthetic {items} items"},
        "index": {"kind": "hnsw"},
        "new_items": {"reads": None, "why": "synthetic vectors"},
    }
    write_export(out, vectors, manifest, index=index)
    return {
        "items": items,
        "users": users,
        "dim": dim,
        "hnsw": {"M": index.hnsw.nb_neighbors(1), "efConstruction": index.hnsw.efConstruction},
        "served_efSearch": served_depth,
        "recall_at_20": recall[served_depth],
        "recall_at_20_by_efSearch": recall,
        "hnsw_build_seconds": build_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("test", choices=("users", "new-items", "synthetic"))
    parser.add_argument("--run", help="a run or export (users, new-items)")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--count", type=int, default=200, help="new items to score")
    parser.add_argument("--genres", type=int, default=19, help="genre flags sent with the text")
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="synthetic: write the export here and keep it")
    args = parser.parse_args()
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    result: dict = {"test": args.test, "loadavg_before": load}
    sys.path.insert(0, str(ROOT / "src"))
    from coldbrew.serving.export import export_run
    from coldbrew.serving.export_format import INDEX, is_export

    folder = Path(tempfile.mkdtemp(prefix="coldbrew-serve-bench-"))
    source = folder / "export"
    if args.test == "synthetic":
        source = args.keep or source
        result.update(synthetic_export(source, args.items, args.users, 64, seed=1))
    elif args.run is None:
        sys.exit("--run is needed for the users and new-items tests")
    elif is_export(args.run):
        source = Path(args.run)
    else:  # served from its export: the same vectors, and the user ids to ask for
        export_run(args.run, source)
    port = free_port()
    server = start_server(str(source), port)
    try:
        if args.test == "new-items":
            result.update(new_items(port, args.count, args.genres))
        else:
            if (source / INDEX).is_file():
                result["served_recall_at_20"] = served_recall(port, source)
            rows = user_ids(source)
            cpu = cpu_seconds(server.pid)
            result.update(wrk_users(port, rows, args.seconds, args.connections))
            spent = cpu_seconds(server.pid) - cpu
            result["server_cpu_ms_per_request"] = 1e3 * spent / max(result["requests"], 1)
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
    result["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
    wrk = result.pop("wrk", None)
    print(json.dumps(result, indent=2))
    if wrk:
        print(wrk)


if __name__ == "__main__":
    main()

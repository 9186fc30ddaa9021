"""``coldbrew export`` and ``coldbrew serve``: parse, delegate to ``coldbrew.serving``."""

from __future__ import annotations

import argparse
import json

from coldbrew.cli.options import add_command, add_run_option

EXPORT_EXAMPLES = """Examples:
  coldbrew export --run runs/ml1m --out exports/ml1m
  coldbrew export --run runs/ml1m --out exports/ml1m-hnsw --index hnsw

Writes the run's user and item vectors (safetensors), each user's training items, the model's
learned state (what scores a new item) and manifest.json (model, data digest, metrics,
versions, feature blocks, text encoder). docs/serving.md describes the files."""

SERVE_EXAMPLES = """Examples:
  coldbrew serve --run runs/ml1m
  curl 'localhost:8000/users/42/items?k=10'               # ids, scores, titles
  curl 'localhost:8000/users/42/items?k=10&fields=text'   # and each item's whole text
  curl -X POST localhost:8000/items/score -H 'content-type: application/json' \\
       -d '{"text": "Heat (1995). Genres: Action, Crime, Thriller.", "features": [...], "k": 20}'
  coldbrew serve --run exports/ml1m-hnsw --port 8100
  coldbrew serve --run exports/ml1m-hnsw --search-depth 256   # deeper: more recall, slower
  COLDBREW_SERVE_TOKEN=secret coldbrew serve --run runs/ml1m   # enables POST /reload

--run is a run directory or an export folder. Binds 127.0.0.1 unless --host says otherwise.
kill -HUP PID (or POST /reload with the token) loads --run again without dropping requests.
OpenAPI docs at /docs."""


def add_parsers(commands) -> None:
    export = add_command(
        commands,
        "export",
        "a run's vectors and new-item encoder as files (safetensors + JSON)",
        "Export a trained run for serving.\n\n" + EXPORT_EXAMPLES,
    )
    add_run_option(export)
    export.add_argument("--out", required=True, help="a new folder to write")
    export.add_argument(
        "--index", choices=("flat", "hnsw", "ivf"), help="also a faiss index of the item vectors"
    )
    export.add_argument("--json", action="store_true", help="print the manifest as JSON")

    serve = add_command(
        commands,
        "serve",
        "an HTTP API over a run or an export (FastAPI, OpenAPI at /docs)",
        "Serve recommendations from memory.\n\n" + SERVE_EXAMPLES,
    )
    add_run_option(serve, "a run directory or an export folder")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument(
        "--index",
        choices=("none", "flat", "hnsw", "ivf"),
        help="rank users' lists with a faiss index (default: the export's, else exact)",
    )
    serve.add_argument(
        "--search-depth",
        type=int,
        metavar="N",
        help="how deep the index searches: hnsw efSearch (default 128), ivf nprobe (default 16)",
    )
    serve.add_argument(
        "--token-file", help="file holding the POST /reload token (else $COLDBREW_SERVE_TOKEN)"
    )
    serve.add_argument("--log-level", default="warning", help="uvicorn's (default warning)")


def run_export(args: argparse.Namespace) -> int:
    from coldbrew.serving.export import export_run

    manifest = export_run(args.run, args.out, index=args.index)
    if args.json:
        print(json.dumps({k: v for k, v in manifest.items() if k != "item_text"}, indent=2))
    else:
        data = manifest["data"]
        print(
            f"exported {manifest['model']}: {data['users']} users, {data['items']} items, "
            f"dim {manifest['dim']} -> {args.out}"
        )
    return 0


def run_serve(args: argparse.Namespace) -> int:
    from coldbrew.errors import ColdbrewError
    from coldbrew.serving.server import read_token, serve

    if not 0 < args.port < 65536:
        raise ColdbrewError(f"--port {args.port}: give a port between 1 and 65535")
    serve(
        args.run,
        host=args.host,
        port=args.port,
        index=args.index,
        search_depth=args.search_depth,
        token=read_token(args.token_file),
        log_level=args.log_level,
    )
    return 0

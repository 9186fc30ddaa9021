"""faiss indexes over item vectors, by inner product (the score): ``flat`` (exact), ``hnsw``
(a graph; fast, approximate) and ``ivf`` (clusters; approximate). faiss is imported here only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from coldbrew.errors import ColdbrewError

KINDS = ("flat", "hnsw", "ivf")
HNSW_NEIGHBORS = 32  # M: graph edges per node
# efConstruction: 64 built 100k clustered items 2.6x faster than 128, recall@20 0.998 vs 0.998
HNSW_BUILD_DEPTH = 64
HNSW_SEARCH_DEPTH = 128  # efSearch: recall@20 >= 0.95 on 1M clustered items (BENCHMARKS.md)
IVF_PROBES = 16


def faiss_module():
    try:
        import faiss
    except ImportError:
        raise ColdbrewError(
            "faiss is not installed: pip install 'coldbrew[serve]' (faiss-cpu)"
        ) from None
    return faiss


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ColdbrewError(f"unknown index {kind!r}; choose one of {', '.join(KINDS)}")
    return kind


def build_index(items: np.ndarray, kind: str, *, progress: bool = False):
    """An inner-product index of ``items`` (N, D) float32; row i of ``items`` is id i."""
    faiss = faiss_module()
    check_kind(kind)
    items = np.ascontiguousarray(items, dtype=np.float32)
    count, dim = items.shape
    inner = faiss.METRIC_INNER_PRODUCT
    if kind == "flat":
        index = faiss.IndexFlatIP(dim)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, HNSW_NEIGHBORS, inner)
        index.hnsw.efConstruction = HNSW_BUILD_DEPTH
        index.hnsw.efSearch = HNSW_SEARCH_DEPTH
    else:
        lists = max(1, min(count // 39, int(4 * np.sqrt(count))))  # faiss wants 39 per list
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, lists, inner)
        index.train(items)
        index.nprobe = min(IVF_PROBES, lists)
    index.verbose = progress
    index.add(items)
    return index


def set_search_depth(index, depth: int) -> None:
    """Search ``index`` ``depth`` deep (``--search-depth``), trading speed for recall: an HNSW
    index's ``efSearch`` (candidates kept while walking the graph), an IVF index's ``nprobe``
    (clusters visited, at most its number of clusters; ``search_depth`` reads it back).
    ``depth`` is positive (``load_catalogue`` checks it before loading). A flat index is exact
    and refuses."""
    if hasattr(index, "hnsw"):
        index.hnsw.efSearch = depth
    elif hasattr(index, "nprobe"):
        index.nprobe = min(depth, index.nlist)
    else:
        raise ColdbrewError(
            "--search-depth sets an hnsw index's efSearch or an ivf index's nprobe; "
            "a flat index searches exactly"
        )


def search_depth(index) -> int | None:
    """How deep ``index`` searches (see ``set_search_depth``); None for a flat index."""
    if hasattr(index, "hnsw"):
        return int(index.hnsw.efSearch)
    if hasattr(index, "nprobe"):
        return int(index.nprobe)
    return None


def write_index(index, path: Path) -> None:
    faiss_module().write_index(index, str(path))


def read_index(path: Path, count: int, dim: int):
    faiss = faiss_module()
    try:
        index = faiss.read_index(str(path))
    except RuntimeError as error:
        raise ColdbrewError(f"cannot read the index {path}: {str(error).splitlines()[0]}") from None
    if index.ntotal != count or index.d != dim:
        raise ColdbrewError(
            f"the index {path} holds {index.ntotal} vectors of width {index.d}, the export "
            f"{count} of width {dim}: export again"
        )
    return index  # an index searches as deep as it was written (efSearch, nprobe)


def search(index, query: np.ndarray, k: int, exclude: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The index's ``k`` best rows for ``query`` (1, D) but ``exclude`` (a user's training
    items), filtered inside the search (faiss's ID selector): ``(scores, rows)``, each (1, k),
    rows -1 where fewer were found."""
    if k <= 0:
        return np.zeros((1, 0), np.float32), np.zeros((1, 0), np.int64)
    if len(exclude) == 0:
        return index.search(query, k)
    faiss = faiss_module()
    banned = faiss.IDSelectorBatch(np.ascontiguousarray(exclude, dtype=np.int64))
    selector = faiss.IDSelectorNot(banned)  # holds ``banned`` by pointer: keep both alive
    if hasattr(index, "hnsw"):
        params = faiss.SearchParametersHNSW(sel=selector, efSearch=index.hnsw.efSearch)
    elif hasattr(index, "nprobe"):
        params = faiss.SearchParametersIVF(sel=selector, nprobe=index.nprobe)
    else:
        params = faiss.SearchParameters(sel=selector)
    found = index.search(query, k, params=params)
    del banned, selector
    return found

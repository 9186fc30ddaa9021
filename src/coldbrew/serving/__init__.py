"""Serving a trained run: ``coldbrew export`` (a run's user and item vectors, and what scores a
new item, in a pickle-free folder) and ``coldbrew serve`` (an HTTP API answering from memory).

* ``export_format``: the folder's files (safetensors + a JSON manifest), written and read.
* ``export``: a run's vectors, checked to be what the model ranks by (a dot product).
* ``index``: optional faiss indexes over item vectors (flat, hnsw, ivf).
* ``catalogue``: the served state (vectors, training items, added items) and its rankings.
* ``new_items``: a new item's vector from its text and/or feature blocks, through the model.
* ``validation``: what a request may hold, checked strictly (one-line refusals).
* ``app`` / ``server``: the FastAPI application and its uvicorn process (SIGHUP reload).

This layer sits under the CLI and above research/perf: it reads runs through
``coldbrew.recommend`` and ``coldbrew.training``; fastapi, uvicorn and faiss are imported only
when a server or an index is made (the ``[serve]`` extra).
"""

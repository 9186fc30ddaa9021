"""``coldbrew export``: a run's user and item vectors, exactly as its model ranks them, and
what scores a new item (the model's learned state and the text encoder's identity).

Every coldbrew recommender ranks by ``user_embeddings() @ item_embeddings().T`` unless it
overrides ``score_users``; a model whose scores are not that dot product is refused, as is one
whose vectors do not reproduce its own scores (checked on a sample of users).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from coldbrew.data.text.sentence_folders import SentenceModel
from coldbrew.errors import ColdbrewError
from coldbrew.serving.export_format import Vectors, data_digest, write_export

CHECKED_USERS = 64  # users whose scores are compared with the exported vectors' products


def run_vectors(loaded) -> Vectors:
    """A loaded run's (``coldbrew.recommend.LoadedRun``) vectors and training items."""
    from coldbrew.models.base import Recommender

    model, dataset = loaded.model, loaded.dataset
    if type(model).score_users is not Recommender.score_users:
        raise ColdbrewError(
            f"{type(model).__name__} scores users with its own score_users, not as a dot product "
            "of user and item vectors: its vectors cannot be exported or indexed"
        )
    with torch.no_grad():
        users = model.user_embeddings().detach().float()
        items = model.item_embeddings().detach().float()
        check_dot_product(model, users, items)
    train = dataset.train
    return Vectors(
        users=users.cpu().numpy(),
        items=items.cpu().numpy(),
        user_ids=_ids(dataset.user_ids, dataset.num_users),
        item_ids=_ids(dataset.item_ids, dataset.num_items),
        cold_items=np.asarray(dataset.cold_items, dtype=np.int64),
        train_indptr=np.asarray(train.indptr, dtype=np.int64),
        train_indices=np.asarray(train.indices, dtype=np.int64),
        item_text=dataset.item_text,
        item_titles=dataset.item_titles,
    )


def check_dot_product(model, users: torch.Tensor, items: torch.Tensor) -> None:
    """The model's own scores of a spread of users equal the vectors' products."""
    rows = torch.linspace(0, len(users) - 1, min(CHECKED_USERS, len(users))).long()
    rows = rows.to(users.device)
    own = model.score_users(rows).float()
    products = users[rows] @ items.T
    scale = max(1.0, float(own.abs().max()))
    if not torch.allclose(own, products, rtol=1e-4, atol=1e-4 * scale):
        gap = float((own - products).abs().max())
        raise ColdbrewError(
            f"{type(model).__name__}'s scores differ from its user · item vectors by up to "
            f"{gap:.3g}: its ranking is not a dot product, so it cannot be exported"
        )


def _ids(source_ids, count: int) -> np.ndarray:
    """The data's own ids: int64, or an object array of ``str`` where they are text."""
    from coldbrew.recommend import has_text_ids

    if source_ids is None:
        return np.arange(count, dtype=np.int64)
    if has_text_ids(source_ids):
        return np.asarray(source_ids, dtype=object)
    return np.asarray(source_ids, dtype=np.int64)


def dense_features(dataset) -> dict[str, np.ndarray]:
    return {
        name: block.float().cpu().numpy()
        for name, block in dataset.features.items()
        if isinstance(block, torch.Tensor)
    }


def new_item_recipe(loaded) -> dict:
    """What a new item is scored from: ``{"reads": "text" | "features" | None, ...}`` with the
    feature blocks (name, width, and the columns' names where the data names them, in order)
    the request's ``features`` concatenate, and the block a text fills (``text_block``)."""
    from coldbrew.models.base import Recommender
    from coldbrew.new_item import item_blocks, text_block_of

    model, dataset, config = loaded.model, loaded.dataset, loaded.config
    if type(model).encode_items is Recommender.encode_items:
        return {"reads": None, "why": f"{config.model} cannot score a new item from its content"}
    if hasattr(model, "feature_widths"):  # the LM: text through its backbone, then its blocks
        blocks = [{"name": n, "width": w} for n, w in model.feature_widths.items()]
        return {"reads": "text", "feature_blocks": blocks, "text_block": None}
    blocks = item_blocks(dataset)
    return {
        "reads": "features",
        "feature_blocks": blocks,
        "text_block": text_block_of(model, dataset),
    }


def manifest_of(loaded, vectors: Vectors) -> dict:
    from coldbrew.serving.versions import serving_versions

    config, dataset = loaded.config, loaded.dataset
    results_path = Path(loaded.run_dir) / "results.json"
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    recipe = new_item_recipe(loaded)
    text_encoder = None
    if recipe.get("text_block"):  # the LM (reads "text") encodes with its own backbone
        text_encoder = config.text_encoder.description()
    return {
        "model": config.model,
        "run": str(Path(loaded.run_dir).resolve()),
        "data": {
            "name": dataset.name,
            "source": str(config.data),
            "digest": data_digest(vectors, dense_features(dataset)),
            "users": int(dataset.num_users),
            "items": int(dataset.num_items),
            "cold_items": int(len(dataset.cold_items)),
            "train_interactions": int(dataset.train.nnz),
        },
        "convention": "score(user, item) = users[user] · items[item]; a user's training "
        "items are left out of their list; rows are internal ids, *_ids the data's own",
        "dim": int(vectors.users.shape[1]),
        "metrics": results.get("metrics", {}),
        "best_epoch": results.get("best_epoch"),
        "new_items": recipe,
        "text_encoder": text_encoder,
        "versions": serving_versions(),
    }


def text_block_models(manifest: dict) -> list[SentenceModel] | None:
    """The sentence encoder members that fill a new item's ``text`` block, as ``manifest``
    records them (``manifest_of``); None when its model reads no text block."""
    from coldbrew.data.text.sentence_models import described_models

    described = manifest.get("text_encoder")
    return None if described is None else described_models(described)


def model_state_parts(state: dict) -> tuple[dict, dict]:
    """``state`` split into its tensors (for safetensors) and the rest, a module's extra state
    such as the LM's backbone identity (for the manifest; it must be JSON)."""
    tensors, extra = {}, {}
    for name, value in state.items():
        if isinstance(value, torch.Tensor):
            tensors[name] = value.detach().cpu().contiguous().clone()
        else:
            try:
                json.dumps(value)
            except TypeError as error:
                raise ColdbrewError(
                    f"the model's state entry {name!r} is neither a tensor nor JSON: {error}"
                ) from None
            extra[name] = value
    return tensors, extra


def export_run(
    run_dir: Path | str, out: Path | str, *, index: str | None = None, device: str = "cpu"
) -> dict:
    """Export RUN_DIR's best checkpoint to the folder ``out``; return the manifest."""
    from coldbrew.recommend import load_run

    loaded = load_run(run_dir, device=device)
    vectors = run_vectors(loaded)
    manifest = manifest_of(loaded, vectors)
    built = None
    if index is not None:
        from coldbrew.serving.index import build_index

        built = build_index(vectors.items, index)
        manifest["index"] = {"kind": index, "file": "items.faiss"}
    state = None
    if manifest["new_items"]["reads"] is not None:
        state, extra = model_state_parts(loaded.model.state_dict())
        if extra:  # the LM's backbone identity: checked again when the server rebuilds it
            manifest["model_extra_state"] = extra
    config_text = (Path(run_dir) / "config.yaml").read_text()
    write_export(out, vectors, manifest, model_state=state, config_text=config_text, index=built)
    return manifest

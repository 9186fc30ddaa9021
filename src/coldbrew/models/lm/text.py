"""What the LM recommender reads from a dataset: item texts, user texts, users' histories.

The texts themselves are written by the loaders (``Dataset.item_text``: title, genres and, for
ml-1m-coldstart, director, cast and plot; ``Dataset.user_text``: ML-100K's ``u.user``). A user's
history vector is the mean of their training items' text embeddings.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from coldbrew.data.dataset import Dataset
from coldbrew.errors import ColdbrewError


def require_item_texts(dataset: Dataset) -> list[str]:
    """The dataset's item texts, or a clear error for sources without any (CLCRec layout)."""
    if dataset.item_text is None:
        raise ColdbrewError(
            f"--model lm needs item texts, and dataset {dataset.name!r} has none (the CLCRec "
            "layout and synthetic data hold feature vectors only); use a dataset with titles, "
            "such as ml-1m-coldstart or ml-100k"
        )
    return list(dataset.item_text)


def user_history(train: sp.csr_matrix, item_vectors: torch.Tensor) -> torch.Tensor:
    """``(num_users, width)``: each user's mean training-item vector (zeros without any)."""
    counts = np.diff(train.indptr).astype(np.float32)  # (U,)
    weights = sp.diags(1.0 / np.maximum(counts, 1.0)) @ train.astype(np.float32)  # row means
    history = weights @ item_vectors.detach().cpu().float().numpy()  # (U, width)
    return torch.from_numpy(np.ascontiguousarray(history, dtype=np.float32))

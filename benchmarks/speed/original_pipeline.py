"""A faithful reimplementation of the original CLCRec training hot path, as the baseline
that ``bench_train.py`` times against ``coldbrew bench``.

Written here from a reading of github.com/weiyinwei/CLCRec (Dataset.py, model_CLCRec.py,
Train.py), not copied. What it keeps, because that is what made the original slow:

* a ``torch.utils.data.Dataset`` whose ``__getitem__`` draws the negatives of ONE positive with
  ``random.sample(all_warm_set - set(user_items), num_neg)`` in Python;
* a ``DataLoader`` over single samples (``batch_size`` 256 in the original, shuffle);
* a model that encodes EVERY item each batch, gathers ``(B*(1+K), D)`` rows, and computes the
  InfoNCE terms with ``exp``/``sum``/``log``;
* ``.item()`` host reads of the losses every step.
"""

from __future__ import annotations

import random
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader
from torch.utils.data import Dataset as TorchDataset


class OriginalTrainingDataset(TorchDataset):
    def __init__(
        self, pairs: np.ndarray, user_items: dict[int, set], warm_items: np.ndarray, num_neg: int
    ):
        self.pairs = pairs
        self.user_items = user_items
        self.all_set = set(int(i) for i in warm_items)
        self.num_neg = num_neg

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index):
        user, positive = self.pairs[index]
        negatives = random.sample(list(self.all_set - set(self.user_items[user])), self.num_neg)
        return torch.LongTensor([user] * (self.num_neg + 1)), torch.LongTensor(
            [positive] + negatives
        )


class OriginalCLCRec(nn.Module):
    """The original forward: one ``(users + items, D)`` ID table; items offset by num_users."""

    def __init__(
        self,
        num_users,
        num_items,
        features,
        dim=64,
        num_neg=128,
        lr_lambda=0.5,
        reg_weight=0.1,
        temp_value=2.0,
        num_sample=0.5,
    ):
        super().__init__()
        self.num_users, self.num_neg = num_users, num_neg
        self.lr_lambda, self.reg_weight, self.temp_value, self.num_sample = (
            lr_lambda,
            reg_weight,
            temp_value,
            num_sample,
        )
        self.id_embedding = nn.Parameter(
            nn.init.xavier_normal_(torch.rand(num_users + num_items, dim))
        )
        self.features = torch.cat([F.normalize(f, dim=1) for f in features], dim=1)
        self.encoder_layer1 = nn.Linear(self.features.shape[1], 256)
        self.encoder_layer2 = nn.Linear(256, dim)

    def encoder(self):
        return self.encoder_layer2(F.leaky_relu(self.encoder_layer1(self.features)))

    def contrastive(self, anchor, candidates):
        score = torch.exp(torch.sum(anchor * candidates, dim=1) / self.temp_value).view(
            -1, 1 + self.num_neg
        )
        return (-torch.log(score[:, 0] / torch.sum(score, dim=1))).mean()

    def loss(self, user_tensor, item_tensor):
        positives = item_tensor[:, 0].unsqueeze(1).repeat(1, 1 + self.num_neg).view(-1)
        users, items = user_tensor.view(-1), item_tensor.view(-1)
        feature = self.encoder()  # every item, every batch
        all_item_feat = feature[items - self.num_users]
        user_embedding = self.id_embedding[users]
        all_item_embedding = self.id_embedding[items]
        head_feat = F.normalize(all_item_feat, dim=1)
        head_embed = F.normalize(self.id_embedding[positives], dim=1)
        mixed = all_item_embedding.clone()
        replaced = torch.randint(mixed.size(0), (int(mixed.size(0) * self.num_sample),))
        mixed[replaced] = all_item_feat[replaced].clone()
        loss1 = self.contrastive(head_embed, head_feat)
        loss2 = self.contrastive(user_embedding, mixed)
        reg = (user_embedding.norm(dim=1).mean() + all_item_embedding.norm(dim=1).mean()) / 2
        return loss1 * self.lr_lambda + loss2 * (1 - self.lr_lambda) + self.reg_weight * reg


def original_inputs(dataset) -> tuple[np.ndarray, dict[int, set], np.ndarray]:
    """The original's own data forms (ids offset by num_users) from a coldbrew Dataset."""
    offset = dataset.num_users
    coo = dataset.train.tocoo()
    pairs = np.stack([coo.row, coo.col + offset], axis=1).astype(np.int64)
    known = dataset.exclusion_matrix()
    user_items = {
        u: set((known.indices[known.indptr[u] : known.indptr[u + 1]] + offset).tolist())
        for u in range(dataset.num_users)
    }
    return pairs, user_items, dataset.warm_items + offset


def time_original_sampler(dataset, num_neg: int, seconds: float, seed: int = 1) -> float:
    """Samples/s of the per-sample ``__getitem__`` alone (no model)."""
    random.seed(seed)
    pairs, user_items, warm = original_inputs(dataset)
    training = OriginalTrainingDataset(pairs, user_items, warm, num_neg)
    order = np.random.default_rng(seed).permutation(len(pairs))
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        training[int(order[count % len(order)])]
        count += 1
    return count / (time.perf_counter() - started)


def time_original_training(
    dataset,
    features,
    num_neg: int,
    batch_size: int,
    seconds: float,
    num_workers: int,
    seed: int = 1,
) -> dict:
    """End-to-end samples/s of the original loop: DataLoader + full encode + ``.item()`` per step."""
    random.seed(seed)
    torch.manual_seed(seed)
    pairs, user_items, warm = original_inputs(dataset)
    loader = DataLoader(
        OriginalTrainingDataset(pairs, user_items, warm, num_neg),
        batch_size,
        shuffle=True,
        num_workers=num_workers,
    )
    model = OriginalCLCRec(dataset.num_users, dataset.num_items, features, num_neg=num_neg)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    steps, samples, started = 0, 0, None
    for user_tensor, item_tensor in loader:
        if steps == 2:  # warm-up: worker start and first batches untimed
            started, samples = time.perf_counter(), 0
        optimizer.zero_grad()
        loss = model.loss(user_tensor, item_tensor)
        loss.backward()
        optimizer.step()
        loss.item()  # the original reads every loss term each step
        steps += 1
        samples += len(user_tensor)
        if started is not None and time.perf_counter() - started > seconds:
            break
    elapsed = time.perf_counter() - started
    return {"samples_per_second": samples / elapsed, "seconds": elapsed, "steps": steps - 2}

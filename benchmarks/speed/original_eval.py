"""The original CLCRec evaluation (``Metric.rank`` + ``full_accuracy``), reimplemented as a baseline.

Written from a reading of weiyinwei/CLCRec ``Metric.py``; it keeps the original's data forms
and its behaviour on purpose, so that ``bench_eval.py`` times what the seed system did:

* ids are global: users ``0..U-1``, items ``U..U+I-1`` (``result`` stacks user then item rows);
* users are scored in chunks of ``step`` rows; for every chunk the whole training dictionary is
  walked in Python and each seen item is set to ``1e-15`` (not ``-inf``: with a negative score
  elsewhere a seen item outranks it), then every ``mask_items`` column is set to ``1e-15`` too;
* ``full_accuracy`` (the evaluation branch) loops over the held-out rows ``[user, item, ...]``
  with Python sets; NDCG's ideal DCG covers ``min(num_pos, topk)`` ranks.
"""

from __future__ import annotations

import math

import torch


def original_rank(
    num_users: int,
    train_items_of: dict[int, set[int]],
    mask_items: torch.Tensor | None,
    result: torch.Tensor,
    step: int,
    topk: int,
) -> torch.Tensor:
    """Top-``topk`` global item ids for every user, ``(num_users, topk)``, as ``Metric.rank``."""
    user_vectors = result[:num_users]
    item_vectors = result[num_users:]
    ranked_chunks = []
    start = 0
    while start < num_users:
        stop = min(start + step, num_users)
        scores = torch.matmul(user_vectors[start:stop], item_vectors.t())
        for user, items in train_items_of.items():  # the whole dictionary, for every chunk
            if start <= user < stop:
                columns = torch.LongTensor(list(items)) - num_users
                scores[user - start][columns] = 1e-15
        if mask_items is not None:
            scores[:, mask_items - num_users] = 1e-15
        _, top_columns = torch.topk(scores, topk)
        ranked_chunks.append(top_columns.cpu() + num_users)
        start = stop
    return torch.cat(ranked_chunks, dim=0)


def original_full_accuracy(
    held_out_rows, ranked: torch.Tensor, topk: int
) -> tuple[float, float, float]:
    """(precision, recall, NDCG) averaged over rows with a positive, as ``full_accuracy``."""
    num_rows = 0
    precision = recall = ndcg = 0.0
    for row in held_out_rows:
        user = row[0]
        positives = set(row[1:])
        num_positives = len(positives)
        if num_positives == 0:
            continue
        num_rows += 1
        ranked_items = ranked[user].tolist()
        num_hits = len(positives.intersection(ranked_items))
        precision += num_hits / topk
        recall += num_hits / num_positives
        ideal = sum(1 / math.log2(rank + 2) for rank in range(min(num_positives, topk)))
        if ideal == 0:
            continue
        dcg = sum(
            1 / math.log2(rank + 2) for rank, item in enumerate(ranked_items) if item in positives
        )
        ndcg += dcg / ideal
    return precision / num_rows, recall / num_rows, ndcg / num_rows


def original_evaluate(
    num_users: int,
    train_items_of: dict[int, set[int]],
    held_out_rows,
    mask_items: torch.Tensor | None,
    result: torch.Tensor,
    step: int = 2000,
    topk: int = 20,
) -> tuple[float, float, float]:
    """One ``Full_rank.full_ranking`` call: rank, then score (precision, recall, NDCG)."""
    with torch.no_grad():
        ranked = original_rank(num_users, train_items_of, mask_items, result, step, topk)
        return original_full_accuracy(held_out_rows, ranked, topk)

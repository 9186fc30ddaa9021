"""The neighbor term's InfoNCE over unit rows: every valid row against every valid column.

For ``N`` distinct users this is an ``(N, N)`` logit matrix over ``D = 64``. Its floor is three
``N²·D`` products (the logits, then one for each gradient) and one ``exp`` over ``N²`` values;
the autograd function below stays at that floor (the blocked log-sum-exp it replaced made four
products and about eight ``N²`` passes: max, subtract, exp and sum forward; logits, subtract,
exp and scale again in backward):

* **No max pass.** Rows are unit vectors, so every logit is at most ``scale``; the
  exponentials are ``exp(logit − scale)``, which lie in ``[e^(−2·scale), 1]``. The shift is
  folded into the product's bias, so forward is one ``addmm``, one in-place ``exp`` and one row
  sum. Past ``FIXED_SHIFT_LIMIT`` (temperatures below 1/40) ``e^(−2·scale)`` nears float32's
  smallest normal number, and each row is shifted by its own maximum instead (one more pass).
* **Exponentials kept for backward** while the ``(N, N)`` matrix fits in ``BLOCK_ELEMENTS``
  (256 MiB of float32, so ``N ≤ 8192``): the gradient is then two products with the kept
  matrix, the row weights applied to the ``(N, D)`` sides, not to the ``(N, N)`` one. Larger
  ``N`` runs in row blocks of at most ``BLOCK_ELEMENTS`` and recomputes each block's
  exponentials in backward, so memory stays bounded.

``negatives=K`` (``--neighbor-negatives``) computes less: the rows are shuffled and split into
groups of ``K + 1``, and each row's negatives are the other rows of its group, ``N·(K+1)·D``
per product instead of ``N²·D`` (at the original protocol's batch of 256, a row has at most 255
negatives anyway).

Cache-sized blocks on one CPU thread (what this module did before it kept the exponentials)
no longer pay: with nothing recomputed and the elementwise passes gone, 32 to 3,749-row
blocks measured alike on one thread, and on two threads one block was fastest (B = 4096).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

BLOCK_ELEMENTS = 2**26  # largest (rows, N) block, kept for backward when it is all rows (256 MiB)
FIXED_SHIFT_LIMIT = 40.0  # e^(-80) ≈ 1.8e-35 is still a normal float32 (smallest ≈ 1.2e-38)


def exponentials(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    column_bias: torch.Tensor,
    scale: float,
    out: torch.Tensor,
) -> torch.Tensor | float:
    """``out = exp(scale · anchors · positivesᵀ + column_bias − shift)``, ``(b, D), (N, D) ->
    (b, N)``; returns the shift: ``scale`` (a bound for unit rows), or each row's maximum
    ``(b,)`` when ``scale`` is past ``FIXED_SHIFT_LIMIT``. Deterministic, so backward can redo it.
    """
    if scale <= FIXED_SHIFT_LIMIT:
        torch.addmm(column_bias - scale, anchors, positives.T, alpha=scale, out=out).exp_()
        return scale
    torch.addmm(column_bias, anchors, positives.T, alpha=scale, out=out)
    row_max = out.amax(dim=1, keepdim=True)  # (b, 1)
    out.sub_(row_max).exp_()
    return row_max.squeeze(1)


class UnitInfoNCE(torch.autograd.Function):
    """Per row ``logsumexp_j(scale · a_i·p_j + bias_j) − scale · a_i·p_i`` for unit rows ``a``,
    ``p``; ``-inf`` in ``column_bias`` drops a column. See the module's notes."""

    @staticmethod
    def forward(ctx, anchors, positives, column_bias, scale: float, block: int):
        count = len(anchors)
        store = block >= count  # one block: keep it for backward
        kept = anchors.new_empty((min(block, count), count))
        sums = anchors.new_empty(count)
        log_sum = anchors.new_empty(count)
        for start in range(0, count, block):
            rows = slice(start, min(start + block, count))
            out = kept[: rows.stop - start]  # (b, N)
            shift = exponentials(anchors[rows], positives, column_bias, scale, out)
            torch.sum(out, dim=1, out=sums[rows])
            log_sum[rows] = torch.log(sums[rows]).add_(shift)
        ctx.save_for_backward(anchors, positives, column_bias, sums, kept if store else None)
        ctx.scale, ctx.block = scale, block
        return log_sum - (anchors * positives).sum(1) * scale

    @staticmethod
    def backward(ctx, grad):
        anchors, positives, column_bias, sums, kept = ctx.saved_tensors
        scale, block = ctx.scale, ctx.block
        weighted = grad * scale  # (N,) d loss_i / d logit_ii, up to sign
        row_weights = (weighted / sums).unsqueeze(1)  # (N, 1): softmax_ij = kept_ij / sums_i
        if kept is not None:
            grad_anchors = torch.mm(kept, positives).mul_(row_weights)
            grad_positives = torch.mm(kept.T, anchors * row_weights)
        else:
            grad_anchors = torch.empty_like(anchors)
            grad_positives = torch.zeros_like(positives)
            weighted_anchors = anchors * row_weights
            buffer = anchors.new_empty((min(block, len(anchors)), len(positives)))
            for start in range(0, len(anchors), block):
                rows = slice(start, min(start + block, len(anchors)))
                out = buffer[: rows.stop - start]  # (b, N)
                exponentials(anchors[rows], positives, column_bias, scale, out)
                torch.mm(out, positives, out=grad_anchors[rows])
                grad_positives.addmm_(out.T, weighted_anchors[rows])
            grad_anchors.mul_(row_weights)
        grad_anchors -= weighted[:, None] * positives  # the positive, column i of row i
        grad_positives -= weighted[:, None] * anchors
        return grad_anchors, grad_positives, None, None, None


def block_rows(count: int) -> int:
    """Rows per block: all ``count`` while ``count²`` fits in ``BLOCK_ELEMENTS``, else fewer."""
    return count if count * count <= BLOCK_ELEMENTS else max(1, BLOCK_ELEMENTS // count)


def neighbor_info_nce(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    valid: torch.Tensor,
    temperature: float,
    negatives: int | None = None,
) -> torch.Tensor:
    """Mean InfoNCE over the valid rows; row ``i``'s positive is column ``i``, negatives the
    other valid columns, or with ``negatives=K`` the other valid rows of its random group of
    ``K + 1`` (``grouped_per_row``; every row when ``K + 1 >= N``). ``(N, D), (N, D), (N,)
    bool -> ()``; computed in float32."""
    with torch.autocast(anchors.device.type, enabled=False):
        anchors = F.normalize(anchors.float(), dim=1)
        positives = F.normalize(positives.float(), dim=1)
        if negatives is not None and negatives + 1 < len(anchors):
            per_row, weights = grouped_per_row(
                anchors, positives, valid, 1.0 / temperature, negatives + 1
            )
        else:
            column_bias = torch.where(valid, 0.0, float("-inf"))  # (N,) padding is no negative
            block = block_rows(len(anchors))
            per_row = UnitInfoNCE.apply(anchors, positives, column_bias, 1.0 / temperature, block)
            weights = valid.float()
        return torch.dot(per_row, weights) / weights.sum()


def grouped_per_row(
    anchors: torch.Tensor, positives: torch.Tensor, valid: torch.Tensor, scale: float, group: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row InfoNCE within random groups of ``group`` rows, and each row's weight (its
    validity), both in the shuffled order: ``(N, D), (N, D), (N,) -> (G·group,), (G·group,)``.

    The rows are permuted (random keys sorted on their device: no host sync) and padded with
    invalid rows to whole groups; a group's logits are one batched ``(group, group)`` product.
    Invalid columns are no negatives; a row's own column always counts, so padding rows stay
    finite (and weigh 0)."""
    count, width = anchors.shape
    # a uniform permutation; torch.randperm would fail under torch.compile's inductor (2.13)
    order = torch.argsort(torch.rand(count, device=anchors.device))
    padding = -count % group
    shuffled = [
        F.pad(rows[order], (0, 0, 0, padding)).view(-1, group, width)
        for rows in (anchors, positives)
    ]  # (G, group, D) each
    kept = F.pad(valid[order], (0, padding)).view(-1, group)  # (G, group)
    logits = torch.bmm(shuffled[0], shuffled[1].transpose(1, 2)).mul_(scale)  # (G, group, group)
    own = torch.eye(group, dtype=torch.bool, device=anchors.device)
    logits = logits.masked_fill(~(kept.unsqueeze(1) | own), float("-inf"))
    per_row = torch.logsumexp(logits, dim=2) - torch.diagonal(logits, dim1=1, dim2=2)
    return per_row.reshape(-1), kept.reshape(-1).float()

"""Row-wise products with gathered table rows, without materialising the gathered rows.

``gather_dot(queries, table, index)[b, j, m] = <queries[b, m], table[index[b, j]]>``.

The plain form, ``table[index] @ queries``, writes and reads a ``(B, J, D)`` tensor in the
forward pass and again in the backward pass (for CLCRec at batch 4096 and 128 negatives that
is 135 MB per gather, memory-bound on a CPU). Here:

* forward: one sampled matrix product per query (``torch.sparse.sampled_addmm``), computing
  only the ``B·J`` products the index names;
* backward to the queries: ``F.embedding_bag`` with the incoming gradient as per-sample
  weights, a fused gather-and-sum;
* backward to the table: the ``(rows, J, D)`` outer products are built one cache-sized block of
  rows at a time and summed into the table's gradient with ``index_add_`` (deterministic on
  CPU).

Same values and gradients as the plain form (tested against it); used by CLCRec on the CPU.
The sparse pattern has unsorted and repeated columns within a row (a negative may be drawn
twice). The CPU kernel computes each listed product independently, which the tests check;
CUDA's SDDMM has not been run on such a pattern, so CLCRec keeps this path to the CPU.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

BLOCK_ELEMENTS = 1 << 21  # (rows, J, D) block of the table gradient: 8 MB of fp32, fits in L3


def _sampled_pattern(index: torch.Tensor, num_rows: int, dtype: torch.dtype) -> torch.Tensor:
    """A ``(B, num_rows)`` CSR tensor whose row ``b`` holds the columns ``index[b]``."""
    batch, width = index.shape
    row_starts = torch.arange(0, batch * width + 1, width, device=index.device)
    values = torch.zeros(batch * width, device=index.device, dtype=dtype)
    with warnings.catch_warnings():  # "sparse CSR support is in beta": true, and not news
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(
            row_starts, index.reshape(-1), values, size=(batch, num_rows), check_invariants=False
        )


class _GatherDot(torch.autograd.Function):
    @staticmethod
    def forward(ctx, queries: torch.Tensor, table: torch.Tensor, index: torch.Tensor):
        batch, width = index.shape
        pattern = _sampled_pattern(index, table.shape[0], queries.dtype)
        columns = [
            torch.sparse.sampled_addmm(pattern, queries[:, m], table.T, beta=0.0).values()
            for m in range(queries.shape[1])
        ]
        ctx.save_for_backward(queries, table, index)
        return torch.stack(columns, dim=1).view(batch, width, len(columns))  # (B, J, M)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        queries, table, index = ctx.saved_tensors
        per_query = grad.permute(2, 0, 1).contiguous()  # (M, B, J): embedding_bag wants it dense
        grad_queries = grad_table = None
        if ctx.needs_input_grad[0]:
            grad_queries = torch.stack(
                [
                    F.embedding_bag(index, table, per_sample_weights=weights, mode="sum")
                    for weights in per_query
                ],
                dim=1,
            )  # (B, M, D)
        if ctx.needs_input_grad[1]:
            grad_table = torch.zeros_like(table)
            batch, width = index.shape
            rows = max(1, BLOCK_ELEMENTS // (width * table.shape[1]))
            buffer = table.new_empty(min(rows, batch), width, table.shape[1])  # reused per block
            for start in range(0, batch, rows):
                block = slice(start, start + rows)
                outer = buffer[: min(rows, batch - start)]  # (rows, J, D): Σ_m grad · query
                torch.mul(per_query[0, block, :, None], queries[block, None, 0], out=outer)
                for m in range(1, queries.shape[1]):
                    outer.addcmul_(per_query[m, block, :, None], queries[block, None, m])
                grad_table.index_add_(0, index[block].reshape(-1), outer.view(-1, table.shape[1]))
        return grad_queries, grad_table, None


def gather_dot(queries: torch.Tensor, table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``(B, J, M)`` products of ``queries (B, M, D)`` with ``table (n, D)`` rows ``index (B, J)``."""
    if queries.dim() != 3 or table.dim() != 2 or index.dim() != 2:
        raise ValueError("gather_dot expects queries (B, M, D), table (n, D) and index (B, J)")
    dtype = torch.promote_types(queries.dtype, table.dtype)
    missing = index.shape[1] - table.shape[0]
    if missing > 0:
        # The CPU sampled product rejects a row listing more columns than the matrix has (a
        # batch whose draws cover fewer distinct items than 1 + K); unused zero rows make room.
        table = F.pad(table, (0, 0, 0, missing))  # (J, D); their gradient is dropped by pad
    return _GatherDot.apply(queries.to(dtype), table.to(dtype), index)


def gather_dot_reference(
    queries: torch.Tensor, table: torch.Tensor, index: torch.Tensor
) -> torch.Tensor:
    """The plain form ``gather_dot`` must equal: gather ``(B, J, D)`` rows, then multiply."""
    return torch.bmm(table[index], queries.transpose(1, 2))  # (B, J, D) @ (B, D, M)


DENSE_RATIO = 32  # dense scoring while table rows <= 32 x columns per row (measured, CLCRec)


def sampled_scores(
    queries: torch.Tensor, table: torch.Tensor, index: torch.Tensor, *, fused: bool
) -> torch.Tensor:
    """``(B, J)`` scores ``<queries[b], table[index[b, j]]>`` by the cheapest of three equal
    paths: ``gather_dot`` when ``fused`` (the CPU's), every row of a small table scored with one
    matmul then picked (``n <= DENSE_RATIO · J``), else gathered rows and a batched product."""
    if fused:
        return gather_dot(queries.unsqueeze(1), table, index)[..., 0]
    if table.shape[0] <= DENSE_RATIO * index.shape[1]:
        return torch.gather(queries @ table.T, 1, index)  # (B, n) -> (B, J)
    return torch.bmm(F.embedding(index, table), queries.unsqueeze(2)).squeeze(2)

"""Row-wise products with gathered table rows, without materialising the gathered rows.

``gather_dot(queries, table, index)[b, j, m] = <queries[b, m], table[index[b, j]]>``.

The plain form, ``table[index] @ queries``, writes and reads a ``(B, J, D)`` tensor in the
forward pass and again in the backward pass (for CLCRec at batch 4096 and 128 negatives that
is 135 MB per gather, memory-bound on a CPU). Here:

* forward: one sampled matrix product per query (``torch.sparse.sampled_addmm``), computing
  only the ``B·J`` products the index names;
* backward to the queries: ``F.embedding_bag`` with the incoming gradient as per-sample
  weights, a fused gather-and-sum;
* backward to the table: the entries are put in table-row order once (``RowOrder``: a stable
  sort of the index, shared by calls that gather with the same index), then
  ``F.embedding_bag`` sums each table row's ``grad · query`` terms, one bag per row: a fused
  gather-and-sum again, with no ``(B, J, D)`` tensor and no scatter (deterministic).

Same values and gradients as the plain form (tested against it); used by CLCRec on the CPU.
The sparse pattern has unsorted and repeated columns within a row (a negative may be drawn
twice). The CPU kernel computes each listed product independently, which the tests check;
CUDA's SDDMM has not been run on such a pattern, so CLCRec keeps this path to the CPU.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F


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


class RowOrder:
    """The entries of an index ``(B, J)`` in table-row order: ``entries`` (stable-sorted flat
    positions), ``rows`` (the sorted table rows they name) and ``sources`` (the index row ``b``
    of each). Built once per index and shared by every ``gather_dot`` that gathers with it."""

    def __init__(self, entries: torch.Tensor, rows: torch.Tensor, sources: torch.Tensor):
        self.entries, self.rows, self.sources = entries, rows, sources

    @classmethod
    def of(cls, index: torch.Tensor, num_rows: int) -> RowOrder:
        """The order of ``index``, whose entries name rows of a table of ``num_rows``."""
        flat = index.reshape(-1)
        # a stable sort keeps each row's entries in (b, j) order; narrow keys sort 2-4x faster
        keys = flat.to(torch.int16) if num_rows <= 2**15 else flat
        rows, entries = torch.sort(keys, stable=True)
        return cls(entries, rows, entries // index.shape[1])

    def sum_by_row(self, grad: torch.Tensor, queries: torch.Tensor, num_rows: int) -> torch.Tensor:
        """``out[i] = Σ_{b, j: index[b, j] = i} Σ_m grad[b, j, m] · queries[b, m]``, ``(num_rows, D)``."""
        batch, width, count = grad.shape
        starts = torch.arange(num_rows, device=grad.device, dtype=self.rows.dtype)
        offsets = torch.searchsorted(self.rows, starts)  # (num_rows,) each row's first entry
        weights = grad.reshape(batch * width, count).index_select(0, self.entries)  # (E, M)
        sources = self.sources  # bag entries: query row b of each entry
        if count > 1:  # bag entries (b, m): query row b·M + m of the flattened queries
            steps = torch.arange(count, device=grad.device)
            sources = (sources[:, None] * count + steps).reshape(-1)
        return F.embedding_bag(
            sources,
            queries.reshape(batch * count, -1),
            offsets * count,
            mode="sum",
            per_sample_weights=weights.reshape(-1).contiguous(),
        )


class _GatherDot(torch.autograd.Function):
    @staticmethod
    def forward(ctx, queries, table, index, row_order):
        batch, width = index.shape
        pattern = _sampled_pattern(index, table.shape[0], queries.dtype)
        columns = [
            torch.sparse.sampled_addmm(pattern, queries[:, m], table.T, beta=0.0).values()
            for m in range(queries.shape[1])
        ]
        ctx.save_for_backward(queries, table, index)
        ctx.row_order = row_order
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
            order = ctx.row_order or RowOrder.of(index, table.shape[0])
            grad_table = order.sum_by_row(grad, queries, table.shape[0])
        return grad_queries, grad_table, None, None


def gather_dot(
    queries: torch.Tensor,
    table: torch.Tensor,
    index: torch.Tensor,
    row_order: RowOrder | None = None,
) -> torch.Tensor:
    """``(B, J, M)`` products of ``queries (B, M, D)`` with ``table (n, D)`` rows ``index (B, J)``;
    ``row_order``: ``RowOrder.of(index, n)`` when several calls share ``index`` (else built here)."""
    if queries.dim() != 3 or table.dim() != 2 or index.dim() != 2:
        raise ValueError("gather_dot expects queries (B, M, D), table (n, D) and index (B, J)")
    dtype = torch.promote_types(queries.dtype, table.dtype)
    missing = index.shape[1] - table.shape[0]
    if missing > 0:
        # The CPU sampled product rejects a row listing more columns than the matrix has (a
        # batch whose draws cover fewer distinct items than 1 + K); unused zero rows make room.
        table = F.pad(table, (0, 0, 0, missing))  # (J, D); their gradient is dropped by pad
    return _GatherDot.apply(queries.to(dtype).contiguous(), table.to(dtype), index, row_order)


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

import pytest
import torch

from coldbrew.models import gather_dot as gather_dot_module
from coldbrew.models.gather_dot import RowOrder, gather_dot, gather_dot_reference


@pytest.mark.parametrize("num_queries", [1, 2, 3])
@pytest.mark.parametrize("shared_order", [False, True])  # built inside, or given (CLCRec's)
def test_values_and_gradients_match_the_plain_gather(num_queries, shared_order):
    generator = torch.Generator().manual_seed(num_queries)
    queries = torch.randn(7, num_queries, 5, generator=generator, requires_grad=True)
    table = torch.randn(11, 5, generator=generator, requires_grad=True)
    index = torch.randint(11, (7, 4), generator=generator)
    index[0] = 3  # one row names the same table row every time
    upstream = torch.randn(7, 4, num_queries, generator=generator)

    order = RowOrder.of(index, 11) if shared_order else None
    fast = gather_dot(queries, table, index, order)
    fast_grads = torch.autograd.grad(fast, [queries, table], upstream)
    plain = gather_dot_reference(queries, table, index)
    plain_grads = torch.autograd.grad(plain, [queries, table], upstream)

    assert fast.shape == (7, 4, num_queries)
    torch.testing.assert_close(fast, plain)
    for mine, theirs in zip(fast_grads, plain_grads, strict=True):
        torch.testing.assert_close(mine, theirs)


@pytest.mark.parametrize("rows", [1, 5, 6])
def test_rows_wider_than_the_table_match_the_plain_gather(rows):
    # issue 16.1: a last batch of one sample whose 1 + K draws cover fewer than 1 + K items
    generator = torch.Generator().manual_seed(rows)
    queries = torch.randn(1, 2, 8, generator=generator, requires_grad=True)
    table = torch.randn(rows, 8, generator=generator, requires_grad=True)
    index = torch.tensor([[0, 1, 2, 3, 4, 0]]) % rows  # 6 columns, at most `rows` distinct
    upstream = torch.randn(1, 6, 2, generator=generator)
    fast = gather_dot(queries, table, index)
    plain = gather_dot_reference(queries, table, index)
    torch.testing.assert_close(fast, plain)
    fast_grads = torch.autograd.grad(fast, [queries, table], upstream)
    plain_grads = torch.autograd.grad(plain, [queries, table], upstream)
    for mine, theirs in zip(fast_grads, plain_grads, strict=True):
        torch.testing.assert_close(mine, theirs)


def test_table_rows_never_named_get_zero_gradient():
    table = torch.randn(6, 3, requires_grad=True)
    queries = torch.randn(2, 1, 3)
    (grad,) = torch.autograd.grad(
        gather_dot(queries, table, torch.tensor([[1, 1], [4, 1]])).sum(), [table]
    )
    assert grad[[0, 2, 3, 5]].abs().sum() == 0
    torch.testing.assert_close(grad[1], 2 * queries[0, 0] + queries[1, 0])
    torch.testing.assert_close(grad[4], queries[1, 0])


def test_row_order_lists_each_rows_entries_in_index_order():
    # index [[2, 0], [2, 2]]: flat positions 0..3 name rows 2, 0, 2, 2
    order = RowOrder.of(torch.tensor([[2, 0], [2, 2]]), 3)
    assert order.rows.tolist() == [0, 2, 2, 2]  # (int16 keys: the table is small)
    assert order.entries.tolist() == [1, 0, 2, 3]  # stable: row 2's entries stay in order
    assert order.sources.tolist() == [0, 0, 1, 1]  # the index row of each entry


def test_wide_tables_sort_without_narrow_keys():
    # more rows than int16 holds: the order is still right
    index = torch.tensor([[40000, 3], [3, 40000]])
    order = RowOrder.of(index, 40001)
    assert order.rows.tolist() == [3, 3, 40000, 40000]
    assert order.entries.tolist() == [1, 2, 0, 3]


def test_rejects_wrong_ranks():
    with pytest.raises(ValueError, match="queries"):
        gather_dot(torch.randn(2, 3), torch.randn(4, 3), torch.zeros(2, 1, dtype=torch.long))


@pytest.mark.parametrize("path", ["fused", "dense", "gathered"])
def test_sampled_scores_paths_agree_with_the_plain_gather(path, monkeypatch):
    from coldbrew.models.gather_dot import sampled_scores

    generator = torch.Generator().manual_seed(2)
    queries = torch.randn(6, 4, generator=generator, requires_grad=True)
    table = torch.randn(9, 4, generator=generator, requires_grad=True)
    index = torch.randint(9, (6, 3), generator=generator)  # repeats within rows included
    # dense while rows <= DENSE_RATIO x columns: 9 <= 32 x 3; a ratio of 1 forces the gather
    monkeypatch.setattr(gather_dot_module, "DENSE_RATIO", 32 if path == "dense" else 1)
    fast = sampled_scores(queries, table, index, fused=path == "fused")
    plain = (table[index] * queries[:, None, :]).sum(dim=2)
    torch.testing.assert_close(fast, plain)
    weights = torch.randn(6, 3, generator=generator)
    grads = torch.autograd.grad((fast * weights).sum(), [queries, table])
    expected = torch.autograd.grad((plain * weights).sum(), [queries, table])
    for got, want in zip(grads, expected, strict=True):
        torch.testing.assert_close(got, want)

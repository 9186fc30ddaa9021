"""The content encoder's sparse first layer against the plain dense one: a wide one-hot or
multi-hot block read by its non-zero columns gives the same embeddings and gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from coldbrew.models.content import ContentEncoder, dense_blocks
from coldbrew.models.sparse_columns import is_sparse, sparse_columns, sparse_product


def one_hot(rows: int, width: int, seed: int, empty_every: int = 5) -> torch.Tensor:
    """One value per row (every ``empty_every``-th row none, as an item without an author)."""
    generator = torch.Generator().manual_seed(seed)
    block = F.one_hot(torch.randint(width, (rows,), generator=generator), width).float()
    block[::empty_every] = 0.0
    return block


def multi_hot(rows: int, width: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    block = torch.zeros(rows, width)
    columns = torch.randint(width, (rows, 3), generator=generator)
    block.scatter_(1, columns, 1.0)  # 1 to 3 distinct values a row
    return block


def features(rows: int = 40) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(3)
    return {
        "author": one_hot(rows, 64, 1),
        "numeric": torch.randn(rows, 1, generator=generator),
        "tags": multi_hot(rows, 48, 2),
        "text": torch.randn(rows, 12, generator=generator),
    }


@pytest.mark.parametrize("fused", [True, False], ids=["embedding-bag", "gather"])
def test_the_sparse_product_equals_the_dense_matmul(fused):
    block = multi_hot(30, 40, 4) * torch.rand(30, 40)  # any values, not only ones
    block[3] = 0.0
    weight = torch.randn(7, 50)
    columns = sparse_columns(block, offset=10)
    # the block sits at columns 10..49 of a 50-wide joined row
    expected = block @ weight[:, 10:].T
    torch.testing.assert_close(
        sparse_product(columns.ids, columns.values, weight, fused=fused), expected
    )
    assert columns.ids.shape == (30, 3) and bool((columns.values[3] == 0).all())


def test_only_wide_blocks_with_few_non_zeros_are_read_sparse():
    assert is_sparse(one_hot(20, 64, 1))
    assert not is_sparse(one_hot(20, 19, 1))  # narrow (genres): dense
    assert not is_sparse(torch.randn(20, 384))  # a text vector: every column non-zero
    assert not is_sparse(multi_hot(20, 16, 1) @ torch.ones(16, 64))  # many non-zeros a row


def dense_reference(encoder: ContentEncoder, blocks: dict[str, torch.Tensor]):
    """The plain path: every block row-normalised, joined, through layer1 and layer2."""
    joined = torch.cat(list(dense_blocks(blocks).values()), dim=1)
    return lambda items: encoder.encode(joined if items is None else joined[items])


@pytest.mark.parametrize("fixed_shapes", [False, True], ids=["cpu", "gpu-ops"])
@pytest.mark.parametrize("items", [None, torch.tensor([0, 5, 7, 7, 39, 12])])
def test_the_sparse_encoder_equals_the_dense_one_forward_and_backward(items, fixed_shapes):
    blocks = features()
    torch.manual_seed(0)
    encoder = ContentEncoder(blocks, 40, dim=8, hidden=16)
    encoder.fixed_shapes = fixed_shapes
    assert encoder.sparse and encoder.sparse_ids.shape == (40, 1 + 3)  # author 1, tags 3 slots
    assert encoder.dense_features.shape == (40, 13)  # numeric and text stay dense
    reference = dense_reference(encoder, blocks)
    upstream = torch.randn(40 if items is None else len(items), 8)

    def gradients(output: torch.Tensor) -> list[torch.Tensor]:
        encoder.zero_grad()
        (output * upstream).sum().backward()
        return [parameter.grad.clone() for parameter in encoder.parameters()]

    sparse_out, dense_out = encoder(items), reference(items)
    torch.testing.assert_close(sparse_out, dense_out)
    sparse_grads, dense_grads = gradients(encoder(items)), gradients(reference(items))
    assert len(sparse_grads) == len(dense_grads) == 4  # layer1 and layer2, weights and biases
    for sparse_grad, dense_grad in zip(sparse_grads, dense_grads, strict=True):
        torch.testing.assert_close(sparse_grad, dense_grad)


def test_an_encoder_of_only_sparse_blocks_and_new_items_from_raw_blocks():
    blocks = {"author": one_hot(40, 64, 1)}
    encoder = ContentEncoder(blocks, 40, dim=4, hidden=8)
    assert encoder.sparse and encoder.dense_features.shape == (40, 0)
    torch.testing.assert_close(encoder(), dense_reference(encoder, blocks)(None))
    # a new item's raw block goes the dense way, to the same vector as the item's own
    torch.testing.assert_close(encoder.encode_raw(blocks["author"][1:2] * 3.0), encoder()[1:2])

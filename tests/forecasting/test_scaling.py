"""Per-series scaling: hand values, the training period only, and the way back."""

from __future__ import annotations

import math

import pytest
import torch

from coldbrew.data.forecast.scaling import SeriesScaler


def test_scale_is_the_training_mean_of_log1p():
    # series 0, training days [0, 1, 3, 7]: log1p = [0, ln 2, ln 4, ln 8] = [0, 1, 2, 3] * ln 2,
    #   mean = 1.5 ln 2 = 1.0397; day 4 (value 1000) is after train_end and is ignored
    # series 1, training days all 0: mean 0 -> scale 1
    counts = torch.tensor([[0.0, 1, 3, 7, 1000], [0, 0, 0, 0, 5]])
    scaler = SeriesScaler.fit(counts, train_end=4)
    assert scaler.scale.tolist() == pytest.approx([1.5 * math.log(2), 1.0])
    scaled = scaler.transform(counts)
    # log1p(7) / (1.5 ln 2) = 3 ln 2 / (1.5 ln 2) = 2; series 1: log1p(5) / 1
    assert scaled[0, 3].item() == pytest.approx(2.0)
    assert scaled[1, 4].item() == pytest.approx(math.log(6))


def test_without_log_the_scale_is_the_training_mean():
    # training days [2, 4, 6]: mean 4, so 8 -> 2
    scaler = SeriesScaler.fit(torch.tensor([[2.0, 4, 6, 8]]), train_end=3, log=False)
    assert scaler.scale.tolist() == [4.0]
    assert scaler.transform(torch.tensor([[8.0]])).tolist() == [[2.0]]


def test_later_days_do_not_change_the_scale():
    counts = torch.poisson(torch.full((6, 40), 3.0), generator=torch.Generator().manual_seed(0))
    changed = counts.clone()
    changed[:, 30:] *= 50
    first, second = SeriesScaler.fit(counts, 30), SeriesScaler.fit(changed, 30)
    assert torch.equal(first.scale, second.scale)


@pytest.mark.parametrize("log", [True, False])
def test_inverse_undoes_transform_for_rows_of_any_series(log):
    generator = torch.Generator().manual_seed(1)
    counts = torch.poisson(torch.rand(4, 20, generator=generator) * 30, generator=generator)
    scaler = SeriesScaler.fit(counts, 15, log=log)
    series = torch.tensor([3, 0, 0, 2])  # rows of chosen series, in any order
    rows = counts[series]
    back = scaler.inverse(scaler.transform(rows, series), series)
    assert torch.allclose(back, rows, atol=1e-4)


def test_inverse_clips_negative_forecasts_at_zero():
    scaler = SeriesScaler(scale=torch.tensor([2.0]), log=True)
    # -0.5 * 2 = -1 -> expm1(-1) = -0.632 -> clipped to 0; 0.5 * 2 = 1 -> e - 1 = 1.718
    assert scaler.inverse(torch.tensor([[-0.5, 0.5]]))[0].tolist() == pytest.approx(
        [0.0, math.e - 1]
    )

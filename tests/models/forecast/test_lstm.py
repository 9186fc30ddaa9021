"""The LSTM forecaster keeps the model contract: forward is the loss, predict the forecasts."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from coldbrew.errors import ColdbrewError
from coldbrew.models.base import ForecastBatch, LossOutput
from coldbrew.models.forecast.lstm import LSTMForecaster
from coldbrew.models.forecast.lstm_config import LSTM_PRESETS, lstm_preset


def batch(size: int = 5, window: int = 12, horizon: int = 3, seed: int = 0) -> ForecastBatch:
    generator = torch.Generator().manual_seed(seed)
    return ForecastBatch(
        inputs=torch.rand(size, window, generator=generator),
        targets=torch.rand(size, horizon, generator=generator),
    )


def test_shapes_and_loss_terms():
    torch.manual_seed(0)
    model = LSTMForecaster(3, hidden=8, layers=2)
    samples = batch()
    assert model.predict(samples.inputs).shape == (5, 3)
    assert model.predict(samples.inputs[..., None]).shape == (5, 3)  # (B, window, 1) too
    output = model(samples)
    assert isinstance(output, LossOutput) and list(output.terms) == ["mae"]
    expected = F.l1_loss(model.predict(samples.inputs), samples.targets)
    assert torch.allclose(output.total, expected) and output.total.requires_grad
    assert len(samples) == 5


def test_mse_loss_option():
    torch.manual_seed(0)
    model = LSTMForecaster(3, hidden=8, layers=1, loss="mse")
    samples = batch()
    expected = F.mse_loss(model.predict(samples.inputs), samples.targets)
    assert torch.allclose(model(samples).total, expected)
    assert list(model(samples).terms) == ["mse"]


def test_presets_build_the_seed_and_large_shapes():
    seed = LSTMForecaster.from_config(lstm_preset("seed"), horizon=7)
    large = LSTMForecaster.from_config(lstm_preset("large", dropout=0.2), horizon=7)
    assert (seed.lstm.hidden_size, seed.lstm.num_layers) == (64, 2)
    assert (large.lstm.hidden_size, large.lstm.num_layers, large.lstm.dropout) == (256, 3, 0.2)
    assert large.head.out_features == 7
    assert set(LSTM_PRESETS) == {"seed", "large"}
    with pytest.raises(ColdbrewError, match="unknown LSTM preset 'huge'"):
        lstm_preset("huge")


def test_same_seed_same_model_and_dropout_only_in_training():
    torch.manual_seed(3)
    first = LSTMForecaster(2, hidden=8, layers=2, dropout=0.5)
    torch.manual_seed(3)
    second = LSTMForecaster(2, hidden=8, layers=2, dropout=0.5)
    inputs = batch(window=6, horizon=2).inputs
    first.eval(), second.eval()
    assert torch.equal(first.predict(inputs), second.predict(inputs))
    assert torch.equal(first.predict(inputs), first.predict(inputs))  # eval: no dropout


def test_checkpoint_holds_only_learned_weights():
    model = LSTMForecaster(3, hidden=4, layers=1)
    assert all(name.startswith(("lstm.", "head.")) for name in model.state_dict())


def test_bad_inputs_and_settings():
    model = LSTMForecaster(3, hidden=4, layers=1)
    with pytest.raises(ColdbrewError, match=r"expected \(B, window\) or \(B, window, 1\)"):
        model.predict(torch.zeros(2, 5, 2))
    with pytest.raises(ColdbrewError, match="loss must be one of mae, mse"):
        LSTMForecaster(3, loss="huber")

"""Forecasting settings: validation with one-line reasons, and no torch in the module."""

from __future__ import annotations

import subprocess
import sys

import pytest

from coldbrew.data.forecast.config import ForecastConfig
from coldbrew.errors import ColdbrewError
from coldbrew.models.forecast.lstm_config import LSTMConfig


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"series": "user"}, "series must be one of item, genre, total"),
        ({"window": 5}, r"window \(5\) must cover a season"),
        ({"horizon": 0}, "horizon must be at least 1"),
        ({"moving_average": 40}, r"moving_average \(40\) cannot exceed the window"),
        ({"horizon": 14, "test_days": 10, "val_days": 14}, r"test_days \(10\) must hold"),
    ],
)
def test_forecast_config_validates(fields, message):
    with pytest.raises(ColdbrewError, match=message):
        ForecastConfig(**fields)


def test_config_module_imports_no_torch():
    # the CLI builds its flags from these dataclasses; importing them must not pull in torch
    code = "import sys, coldbrew.models.forecast.lstm_config; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lstm_config_validates():
    with pytest.raises(ColdbrewError, match="dropout must be in"):
        LSTMConfig(dropout=1.0)
    with pytest.raises(ColdbrewError, match="hidden and layers must be at least 1"):
        LSTMConfig(layers=0)
    with pytest.raises(ColdbrewError, match="loss must be one of mae, mse"):
        LSTMConfig(loss="huber")

"""An LSTM that forecasts ``horizon`` days at once from a window of scaled daily counts.

``forward(batch) -> LossOutput`` is the training loss (the model contract); ``predict(inputs)``
the forecasts ``(B, horizon)`` in the space of its inputs (the task scales in and out, so the
model holds no data). The stacked LSTM reads the window; a linear head on the last step's top
hidden state emits every horizon step in one shot (no feeding back its own forecasts, so no
error compounds over the horizon and one pass serves all steps).

The loss is MAE by default: it is the metric the forecasts are judged by (MAE, and MASE is MAE
rescaled), its minimiser is the conditional median, which survives the task's increasing
scaling (``log1p``, division by the series' level) unchanged, and it is not pulled around by
the release-day spikes that squared error would chase. ``loss="mse"`` is there to compare.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from coldbrew.errors import ColdbrewError
from coldbrew.models.base import ForecastBatch, LossOutput
from coldbrew.models.forecast.lstm_config import LOSSES, LSTMConfig


class LSTMForecaster(nn.Module):
    """Stacked LSTM over ``(B, window, input_size)`` and a linear head to ``(B, horizon)``."""

    def __init__(
        self,
        horizon: int,
        *,
        hidden: int = 64,
        layers: int = 2,
        dropout: float = 0.0,
        input_size: int = 1,
        loss: str = "mae",
    ) -> None:
        super().__init__()
        if loss not in LOSSES:
            raise ColdbrewError(f"loss must be one of {', '.join(LOSSES)}, not {loss!r}")
        if horizon < 1:
            raise ColdbrewError(f"horizon must be at least 1, got {horizon}")
        self.horizon = horizon
        self.input_size = input_size
        self.loss = loss
        self.lstm = nn.LSTM(
            input_size,
            hidden,
            num_layers=layers,
            dropout=dropout if layers > 1 else 0.0,  # applied between layers only
            batch_first=True,
        )
        self.head = nn.Linear(hidden, horizon)

    @classmethod
    def from_config(
        cls, config: LSTMConfig, horizon: int, *, input_size: int = 1
    ) -> LSTMForecaster:
        return cls(
            horizon,
            hidden=config.hidden,
            layers=config.layers,
            dropout=config.dropout,
            input_size=input_size,
            loss=config.loss,
        )

    def predict(self, inputs: torch.Tensor) -> torch.Tensor:
        """Forecasts ``(B, horizon)`` from ``inputs`` ``(B, window)`` or ``(B, window, input_size)``."""
        if inputs.dim() == 2:
            inputs = inputs.unsqueeze(-1)  # (B, window, 1)
        if inputs.dim() != 3 or inputs.shape[-1] != self.input_size:
            raise ColdbrewError(
                f"inputs of shape {tuple(inputs.shape)}; expected (B, window) or "
                f"(B, window, {self.input_size})"
            )
        states, _ = self.lstm(inputs)  # (B, window, hidden)
        return self.head(states[:, -1])  # (B, horizon)

    def forward(self, batch: ForecastBatch) -> LossOutput:
        forecasts = self.predict(batch.inputs)
        if self.loss == "mae":
            total = F.l1_loss(forecasts, batch.targets)
        else:
            total = F.mse_loss(forecasts, batch.targets)
        return LossOutput(total=total, terms={self.loss: total.detach()})


def build(series, config) -> LSTMForecaster:
    """The registry's builder: an LSTM for ``config.model_options`` (an ``LSTMOptions``)."""
    options = config.model_options
    return LSTMForecaster.from_config(options.lstm_config(), options.horizon)

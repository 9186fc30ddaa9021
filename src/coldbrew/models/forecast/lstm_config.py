"""The LSTM forecaster's options, torch-free so the CLI lists them without importing torch.

``LSTMConfig`` is the network's shape, with two presets:

* ``seed``: hidden 64, 2 layers, as the seed system ran;
* ``large``: hidden 256, 3 layers, as the seed's guide proposed.

``LSTMOptions`` is the ``lstm`` model's section of a run: the series and windows
(``coldbrew.data.forecast.config.ForecastConfig``) and the network.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from coldbrew.data.forecast.config import SERIES_KINDS, ForecastConfig
from coldbrew.errors import ColdbrewError
from coldbrew.options import option

LOSSES = ("mae", "mse")
# the options that ``LSTMOptions`` passes on, by name, to the series and to the network
FORECAST_OPTIONS = ("series", "window", "horizon", "val_days", "test_days")
FORECAST_OPTIONS += ("moving_average", "log_scale")
NETWORK_OPTIONS = ("hidden", "layers", "dropout", "loss")


@dataclass(frozen=True)
class LSTMConfig:
    """Shape and loss of ``coldbrew.models.forecast.lstm.LSTMForecaster``."""

    hidden: int = 64
    layers: int = 2
    dropout: float = 0.0  # between stacked LSTM layers (PyTorch applies none after the last)
    loss: str = "mae"  # mae | mse

    def __post_init__(self) -> None:
        if self.hidden < 1 or self.layers < 1:
            raise ColdbrewError(
                f"hidden and layers must be at least 1, got {self.hidden} and {self.layers}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ColdbrewError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.loss not in LOSSES:
            raise ColdbrewError(f"loss must be one of {', '.join(LOSSES)}, not {self.loss!r}")


LSTM_PRESETS = {
    "seed": LSTMConfig(hidden=64, layers=2),
    "large": LSTMConfig(hidden=256, layers=3),
}


def lstm_preset(name: str, **overrides: object) -> LSTMConfig:
    """The preset ``name`` (``seed`` or ``large``) with ``overrides`` (``dropout=0.1``) applied."""
    if name not in LSTM_PRESETS:
        raise ColdbrewError(f"unknown LSTM preset {name!r}; available: {', '.join(LSTM_PRESETS)}")
    return replace(LSTM_PRESETS[name], **overrides)


@dataclass
class LSTMOptions:
    """The ``lstm`` model's options in a run (``coldbrew train --model lstm``, ``coldbrew
    forecast``): the series and windows (``ForecastConfig``) and the network (``LSTMConfig``).
    Presets: ``configs/lstm_seed.yaml`` (64/2, the default) and ``configs/lstm_large.yaml``."""

    series: str = option("item", "daily series: item, genre or total", choices=SERIES_KINDS)
    window: int = option(30, "input days of a window", minimum=1)
    horizon: int = option(7, "days forecast from one origin", minimum=1)
    val_days: int = option(28, "days of the validation period (before the test period)", minimum=1)
    test_days: int = option(28, "days of the test period (the last days)", minimum=1)
    moving_average: int = option(7, "days averaged by the moving-average baseline", minimum=1)
    log_scale: bool = option(True, "scale counts as log1p(count) / the series' training mean")
    hidden: int = option(64, "LSTM hidden size (seed 64, large 256)", minimum=1)
    layers: int = option(2, "stacked LSTM layers (seed 2, large 3)", minimum=1)
    dropout: float = option(0.0, "dropout between LSTM layers", minimum=0, maximum=0.99)
    loss: str = option("mae", "training loss: mae or mse", choices=LOSSES)

    def forecast_config(self) -> ForecastConfig:
        return ForecastConfig(**{name: getattr(self, name) for name in FORECAST_OPTIONS})

    def lstm_config(self) -> LSTMConfig:
        return LSTMConfig(**{name: getattr(self, name) for name in NETWORK_OPTIONS})

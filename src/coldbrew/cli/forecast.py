"""``coldbrew forecast``: parse, delegate to ``coldbrew.research.forecast``, print the table."""

from __future__ import annotations

import argparse
import json

from coldbrew.cli.options import add_command, add_config_options, config_flags
from coldbrew.errors import ColdbrewError

EXAMPLES = """Examples:
  coldbrew forecast --data ml-100k --series genre --window 30 --horizon 7 --out runs/genre
  coldbrew forecast --data ml-100k --series item --window 7,14,30,60,90 --out runs/sweep
  coldbrew forecast --config configs/lstm_large.yaml --data ml-100k --series genre --out runs/big

Trains the LSTM (--model lstm) through the engine on daily interaction counts, then scores the
naive, seasonal-naive (7 days), moving-average and window-median baselines (and statsforecast's
AutoETS/Croston with the [stats] extra) on the same test windows. Lower is better everywhere."""


def add_parser(commands) -> None:
    forecast = add_command(
        commands,
        "forecast",
        "forecast daily interactions with an LSTM, against baselines",
        "Forecast daily interaction counts (per item, per genre, in total).\n\n" + EXAMPLES,
    )
    forecast.add_argument("--out", required=True, help="run directory (one per window below it)")
    forecast.add_argument("--config", help="YAML preset (e.g. configs/lstm_large.yaml)")
    forecast.add_argument("--no-plot", dest="plot", action="store_false", help="skip forecasts.png")
    forecast.add_argument("--json", action="store_true", help="print the rows as JSON")
    add_config_options(forecast, default_model="lstm", unlisted=("layout",))  # refused: no tables


def windows_from(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        windows = [int(part) for part in str(text).split(",") if part.strip()]
    except ValueError:
        raise ColdbrewError(f"--window must be days like 30 or 7,14,30, not {text!r}") from None
    if not windows or min(windows) < 1:
        raise ColdbrewError(f"--window must be positive days like 30 or 7,14,30, not {text!r}")
    return windows


def run(args: argparse.Namespace) -> int:
    from coldbrew.config import Flags, load_yaml, make_config
    from coldbrew.research.forecast import forecast, forecast_rows, forecast_table

    flags = config_flags(args)
    windows = windows_from(flags.pop("window", None))
    preset = load_yaml(args.config) if args.config else {}
    base = {"model": "lstm", "data": "ml-100k"}
    if windows:
        base["window"] = windows[0]
    config = make_config(base, preset, Flags(flags))
    summary = forecast(
        config,
        args.out,
        windows=windows,
        plot=args.plot,
        log=(lambda line: None) if config.quiet else print,
    )
    if args.json:
        print(json.dumps(forecast_rows(summary)))
    else:
        print(forecast_table(summary))
    return 0

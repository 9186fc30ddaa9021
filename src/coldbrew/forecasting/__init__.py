"""Forecasting daily interaction counts: per item (popularity), per genre, and in total.

The pieces, each in its own module (this package imports none of them eagerly, so
``coldbrew.forecasting.config`` stays free of torch):

* ``config``: ``ForecastConfig``, ``LSTMConfig`` and the ``seed``/``large`` presets (no torch);
* ``events``: timestamped (item, time) events from a dataset (ML-100K ``u.data``), and a
  synthetic seasonal generator for tests;
* ``series``: daily counts ``(num_series, num_days)`` for ``item``, ``genre`` or ``total``;
* ``windows``: the train/val/test split by days and window gathering on the device;
* ``scaling``: the LSTM's per-series scaling (``log1p`` then divide by the training mean);
* ``baselines``: naive, seasonal naive, moving average, window median, and statsforecast
  models (optional);
* ``metrics``: MAE, RMSE, MASE (seasonality 7), sMAPE, per horizon step and overall;
* ``task``: ``ForecastingTask`` (the task contract) and ``evaluate_baselines``;
* ``plot``: a PNG of forecasts against the truth (matplotlib, imported lazily).
"""

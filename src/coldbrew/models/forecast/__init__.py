"""Forecasting models of daily interaction counts: the LSTM forecaster (``lstm.py`` and its
torch-free ``lstm_config.py``) and the classical baselines it is measured against
(``baselines.py``)."""

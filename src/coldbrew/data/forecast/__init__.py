"""The forecaster's data: timestamped events, daily series, scaling and the windows of its split."""

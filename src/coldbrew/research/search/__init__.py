"""Hyper-parameter search: spaces, the Optuna study and its trials, shared studies and parallel jobs."""

"""The research workflow on top of the one training engine: repeated seeds (``seeds``),
hyper-parameter search with Optuna (``search``), per-epoch curves (``curves``) and one table
across runs (``compare``). Torch-free at import; each module imports what it needs inside its
functions."""

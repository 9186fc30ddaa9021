"""Leaderboards: several models' runs on one dataset, on cold-item folds, paired tests, blends and comparisons."""

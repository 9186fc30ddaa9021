"""Which items are cold: the run's cold split, the cold-item folds, and validation's two halves."""

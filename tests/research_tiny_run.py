"""The small run every research test trains: seconds on a CPU, both groups present."""

TINY = {
    "data": "synthetic:small,users=120,items=80",
    "batch_size": 1024,
    "num_neg": 4,
    "lr": 0.01,
    "epochs": 2,
    "ks": [5, 20],
    "quiet": True,
}

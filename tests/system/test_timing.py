import torch

from coldbrew.system.timing import time_in_turn


def test_time_in_turn_rotates_the_order_and_times_every_call():
    calls: list[str] = []
    functions = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    times = time_in_turn(functions, torch.device("cpu"), warmup=1, seconds=0.0, min_rounds=3)
    assert calls[:3] == ["a", "b", "c"]  # the warm-up, once each
    assert calls[3:] == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert {name: len(values) for name, values in times.items()} == {"a": 3, "b": 3, "c": 3}
    assert all(value >= 0 for values in times.values() for value in values)

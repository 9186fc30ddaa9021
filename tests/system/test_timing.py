import re

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


def test_peak_rss_counts_this_process_and_its_largest_ended_child():
    import subprocess
    import sys

    from coldbrew.system.timing import peak_rss_bytes

    own = peak_rss_bytes()
    # a child that holds 200 MB at its peak: the children's figure is at least that
    grow = "b = bytearray(200_000_000); b[::4096] = b'x' * len(b[::4096])"
    subprocess.run([sys.executable, "-c", grow], check=True)
    assert own > 10_000_000 and peak_rss_bytes(children=True) >= 200_000_000


def test_the_boards_peak_memory_line():
    from coldbrew.cli.leaderboard import peak_memory_line

    assert re.fullmatch(
        r"peak memory: \d+\.\d GB in this process(, \d+\.\d GB in .*)?", peak_memory_line()
    )

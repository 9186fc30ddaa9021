"""The encode's progress: texts/s and a time left from the padded tokens still to encode."""

from __future__ import annotations

from coldbrew.data.text import embedder
from coldbrew.data.text.embedder import EncodeProgress, clock


def test_time_left_follows_tokens_not_texts(monkeypatch, capsys):
    now = [100.0]
    monkeypatch.setattr(embedder.time, "perf_counter", lambda: now[0])
    progress = EncodeProgress(texts=40, tokens=1000, show=True, every=0.0)
    now[0] = 110.0  # 10 s for the first 10 texts, the longest: 400 padded tokens
    progress.update(10, 400)
    # 10 texts / 10 s = 1.0 texts/s; 600 tokens left at 40 tokens/s = 15 s
    assert progress.status() == (1.0, 15.0)
    now[0] = 115.0  # 30 more texts, 600 tokens: done
    progress.update(30, 600)
    assert progress.status() == (40 / 15, 0.0)
    progress.bar.close()
    lines = capsys.readouterr().err.splitlines()  # not a terminal here: lines, no bar
    assert lines == [
        # 400 tokens in 10 s: 1,000 in 25 s, 40 texts / 25 s = 1.6 texts/s
        "encoding 40 texts: about 25 s at ~1.6 texts/s on this machine (from the first batch)",
        "encoding texts: 10/40, 1.0 texts/s, about 15 s left",
        "encoding texts: 40/40, 2.7 texts/s, about 0 s left",
    ]


def test_no_lines_without_progress_or_between_intervals(capsys):
    quiet = EncodeProgress(texts=4, tokens=8, show=False, every=0.0)
    quiet.update(4, 8)
    sparse = EncodeProgress(texts=4, tokens=8, show=True, every=3600.0)
    sparse.update(2, 6)  # inside the interval, not the last, nothing to foretell: no line
    assert capsys.readouterr().err == ""
    assert sparse.status()[1] is not None


def test_clock():
    assert (clock(None), clock(12.4), clock(125)) == ("?", "12 s", "2 min 05 s")
    assert clock(11255) == "3 h 07 min"  # 3 h, 7 min, 35 s

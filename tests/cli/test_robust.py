"""What a new user runs into: interrupts, options a command cannot use, misleading messages."""

from __future__ import annotations

import signal

from coldbrew.cli import main


def test_an_interrupt_a_library_swallowed_still_exits_130(monkeypatch, capsys):
    import coldbrew.cli as cli

    def finishes_anyway(args):
        try:  # as Python does with an interrupt raised in a finaliser
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass
        return 0

    monkeypatch.setattr(cli, "handler", lambda command: finishes_anyway)
    assert main(["doctor"]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

"""A run killed right after one epoch's checkpoint, then resumed: what resume tests compare
with an uninterrupted run."""

from __future__ import annotations

from pathlib import Path

import pytest

from coldbrew.config import make_config
from coldbrew.training.run import train


def killed_and_resumed(options: dict, folder: Path, dataset, after_epoch: int) -> dict:
    """``train`` on ``options`` into ``folder``, killed (KeyboardInterrupt) right after epoch
    ``after_epoch``'s checkpoint, then resumed there; the resumed run's results. Asserts that
    the killed run wrote no results."""

    def kill(state):
        if state.epoch == after_epoch:
            raise KeyboardInterrupt  # the process dies right after this epoch's checkpoint

    with pytest.raises(KeyboardInterrupt):
        train(make_config(options), folder, dataset=dataset, on_epoch_end=kill)
    assert not (folder / "results.json").exists()
    return train(make_config(options), folder, dataset=dataset, resume=True)

"""A stand-in for the sentence encoder in tests of item tables: no model runs."""

from __future__ import annotations

import torch

from coldbrew.data.tables import content


def fake_encoder(monkeypatch) -> list[list[str]]:
    """Texts become [length, 1] vectors; returns the lists of texts encoded, call by call."""
    seen: list[list[str]] = []

    def embed(texts, options):
        seen.append(list(texts))
        return torch.tensor([[float(len(text)), 1.0] for text in texts])

    monkeypatch.setattr(content, "text_embeddings", embed)
    monkeypatch.setattr(content, "text_encoder_available", lambda: True)
    return seen

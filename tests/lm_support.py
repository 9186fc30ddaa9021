"""Shared pieces of the LM recommender tests: a tiny GPT-2 folder and a tiny text dataset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from coldbrew.data.dataset import Dataset

ITEM_TEXTS = [
    "Toy Story (1995). Genres: Animation, Children's, Comedy.",
    "Heat (1995). Genres: Action, Crime, Thriller.",
    "Casino (1995). Genres: Crime, Drama.",
    "Sense and Sensibility (1995). Genres: Drama, Romance.",
    "Jumanji (1995). Genres: Adventure, Children's, Fantasy.",
    "GoldenEye (1995). Genres: Action, Adventure, Thriller.",
    "Babe (1995). Genres: Children's, Comedy, Drama.",
    "Dead Man Walking (1995). Genres: Drama.",
    "Apollo 13 (1995). Genres: Drama. Plot: Astronauts fly to the moon and come back.",
    "Balto (1995). Genres: Animation, Children's.",
    "Sabrina (1995). Genres: Comedy, Romance.",
    "Clueless (1995). Genres: Comedy, Romance.",
]
USER_TEXTS = [
    f"User: {age} years old, {gender}, {job}, zip code {zip_code}."
    for age, gender, job, zip_code in [
        (24, "male", "technician", "85711"),
        (53, "female", "other", "94043"),
        (23, "male", "writer", "32067"),
        (33, "female", "educator", "15213"),
        (42, "male", "engineer", "98101"),
        (19, "female", "student", "55414"),
    ]
]
COLD_ITEMS = [9, 10, 11]


def tiny_gpt2(folder: Path) -> Path:
    """A randomly initialised 2-layer, 32-wide GPT-2 and a byte-level BPE tokenizer trained on
    the test texts, saved as a local model folder (no hub involved)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2Model, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(ITEM_TEXTS + USER_TEXTS, trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
    )
    wrapped.save_pretrained(folder)
    config = GPT2Config(
        vocab_size=len(wrapped),
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=128,
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(0)
    GPT2Model(config).save_pretrained(folder)
    return folder


def tiny_dataset(user_text: bool = True) -> Dataset:
    """6 users × 12 items; items 9-11 cold. User u liked items u, u+1, u+3 (mod 9)."""
    num_users, num_items = 6, len(ITEM_TEXTS)
    users = np.repeat(np.arange(num_users), 3)
    items = np.array([(u + shift) % 9 for u in range(num_users) for shift in (0, 1, 3)])
    train = sp.csr_matrix(
        (np.ones(len(users), dtype=np.float32), (users, items)), shape=(num_users, num_items)
    )
    cold = sp.csr_matrix(
        (np.ones(num_users, dtype=np.float32), (np.arange(num_users), 9 + np.arange(6) % 3)),
        shape=(num_users, num_items),
    )
    return Dataset(
        name="tiny-text",
        num_users=num_users,
        num_items=num_items,
        train=train,
        cold_items=np.array(COLD_ITEMS),
        splits={"val": {"cold": cold}},
        item_text=list(ITEM_TEXTS),
        user_text=list(USER_TEXTS) if user_text else None,
    )


def fixed_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Users with a positive from training and two warm negatives, repeats included."""
    users = torch.tensor([0, 1, 2, 3, 4, 5, 0])
    items = torch.tensor(
        [[0, 5, 6], [1, 7, 8], [2, 0, 1], [3, 8, 0], [4, 2, 1], [5, 1, 3], [3, 2, 2]]
    )  # (B=7, 1+K=3)
    return users, items

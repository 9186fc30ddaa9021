"""``gpu_check.py --dry-run``: the plan at tiny sizes, and tiny stand-ins for what
``gpu_data.py`` gathers, in the same layouts (a pickle-free CLCRec-layout conversion, an
ml-1m-coldstart-style CSV folder, a cached backbone, a tiny BERT packed as MiniLM is),
so the dry run reads them through the same loaders as the device run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

GENRES = ["Action", "Comedy", "Drama", "Horror", "Romance"]
WORDS = ["film", "genres", "plot", "user", "the", "a", "of", "and"]


def write_csv_coldstart(out: Path, users: int = 100, warm: int = 160, cold: int = 30) -> None:
    """train.csv / cold_val.csv / items.csv of ml-1m-coldstart's shape, seeded."""
    rng = np.random.default_rng(0)
    out.mkdir(parents=True)
    train = [(u, i) for u in range(users) for i in rng.choice(warm, 10, replace=False)]
    cold_val = [(u, warm + i) for u in range(users) for i in rng.choice(cold, 3, replace=False)]
    for name, rows in (("train.csv", train), ("cold_val.csv", cold_val)):
        lines = ["uid,iid"] + [f"{u},{i}" for u, i in rows]
        (out / name).write_text("\n".join(lines) + "\n")
    items = ["iid,title,genres"]
    for item in range(warm + cold):
        genres = "|".join(rng.choice(GENRES, 2, replace=False))
        items.append(f"{item},Film {item} ({1980 + item % 20}),{genres}")
    (out / "items.csv").write_text("\n".join(items) + "\n")


def write_tiny_bert(out: Path) -> None:
    """config.json + a word-piece vocabulary of a 2-layer, 32-wide BERT (no weights)."""
    out.mkdir(parents=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "(", ")", ",", ".", ":", "|"]
    vocab += [g.lower() for g in GENRES] + WORDS + [str(d) for d in range(10)]
    (out / "vocab.txt").write_text("\n".join(vocab) + "\n")
    config = {
        "model_type": "bert",
        "architectures": ["BertModel"],
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "vocab_size": len(vocab),
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
    }
    (out / "config.json").write_text(json.dumps(config))
    tokenizer = {"tokenizer_class": "BertTokenizer", "do_lower_case": True}
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer))


SENTENCE_MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {
        "idx": 2,
        "name": "2",
        "path": "2_Normalize",
        "type": "sentence_transformers.models.Normalize",
    },
]


def write_tiny_minilm(out: Path) -> None:
    """The tiny BERT with seeded random weights as a sentence-transformers folder (mean
    pooling, normalized, as MiniLM's), packed as ``gpu_data.py`` packs MiniLM."""
    import tempfile

    import torch
    import transformers
    from gpu_minilm import pack

    with tempfile.TemporaryDirectory() as folder:
        model = Path(folder) / "model"
        write_tiny_bert(model)
        torch.manual_seed(0)
        config = transformers.AutoConfig.from_pretrained(model)
        transformers.AutoModel.from_config(config).save_pretrained(model)
        (model / "modules.json").write_text(json.dumps(SENTENCE_MODULES))
        (model / "1_Pooling").mkdir()
        pooling = {"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}
        (model / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
        (model / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64}))
        pack(model, out)


def make_dry_data(root: Path) -> Path:
    from gpu_data import cache_backbones

    from coldbrew.data import load_dataset
    from coldbrew.data.loaders.stored import save

    save(load_dataset("synthetic:small", features=[]), root / "clcrec-movielens")
    write_csv_coldstart(root / "ml-1m-coldstart")
    cache_backbones(root / "ml-1m-coldstart", root / "cache")
    write_tiny_minilm(root / "minilm")
    return root


def dry_plan(scratch: Path) -> dict:
    data = make_dry_data(scratch / "gpu_data")
    return {
        "dry_run": True,
        "data_root": str(data),
        "clcrec_data": str(data / "clcrec-movielens"),
        "feature_dims": [16, 8, 4],
        "num_neg": 8,
        "precisions": ["fp32"],  # bf16 needs CUDA
        "compile_options": [False],  # inductor's C++ build takes a minute on a loaded CPU
        "batches": [64, 256],
        "bench_seconds": 0.05,
        "ml1m_data": str(data / "ml-1m-coldstart"),
        "ml1m_features": "genre",
        "epochs": 1,
        "zoo": ["bpr", "deepmusic", "dropoutnet", "heater", "gar", "aldi", "knn"],
        "minilm": str(data / "minilm"),
        "lm_batch": 32,
        "synthetic": "synthetic:users=200,items=600",
        "synthetic_batch": 256,
        "synthetic_steps": 3,
        "fastest_batch": 256,
        "eval_chunks": [None, 2**12, 2**16],
        "lm_run_budget": 5,
        "profile_batch": 64,
        "profile_steps": 2,
        "doctor_seconds": 0.02,
        "compile_probe": False,
        "pytest_targets": ["tests/perf/test_doctor.py"],
        "budget_scale": 2.0,  # a loaded CPU: the device's time boxes, doubled
    }

"""Tune mode's item vectors on a tiny GPT-2: how many items a step sends through the tuned
layers (and how the out-of-memory back-off halves them), the table they refresh, the memory
check before the states are built, and ``coldbrew memory`` for the mode."""

from __future__ import annotations

import copy

import pytest
import torch

from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Batch
from coldbrew.models.lm import LMConfig, build
from coldbrew.models.lm.split import upper_parameters
from coldbrew.models.lm.tuned import check_states_fit, states_bytes
from lm_support import fixed_batch, tiny_dataset

pytest.importorskip("transformers")
pytest.importorskip("peft")


pytestmark = pytest.mark.usefixtures("private_cache")


def make(gpt2: str, rows_per_step: int | None = None, **options):
    torch.manual_seed(0)
    config = LMConfig(backbone=gpt2, dim=8, hidden=16, lm_mode="tune", lora="4,8", **options)
    return build(tiny_dataset(), config, progress=False, rows_per_step=rows_per_step)


def counting_upper(model) -> list[int]:
    """Rows of every pass through the tuned layers, recorded."""
    counts: list[int] = []
    upper = model.tuned.backbone.upper

    def counted(states, mask):
        counts.append(states.shape[0])
        return upper(states, mask)

    model.tuned.backbone.upper = counted
    return counts


def test_fresh_items_per_step_by_hand(gpt2):
    tuned = make(gpt2, rows_per_step=7, tune_items=3).tuned
    assert tuned.fresh_count(rows=7, distinct=9) == 3
    assert tuned.fresh_count(rows=3, distinct=9) == 2  # ceil(3 x 3 / 7)
    assert tuned.fresh_count(rows=1, distinct=9) == 1  # ceil(3 / 7)
    assert tuned.fresh_count(rows=7, distinct=2) == 2  # no more than the step's items
    per_call = make(gpt2, tune_items=3).tuned  # no step size given: per call
    assert per_call.fresh_count(rows=1, distinct=9) == 3


def test_a_step_refreshes_its_fresh_items_and_reads_the_rest(gpt2):
    model = make(gpt2, tune_items=3)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.5)  # as if trained: fresh vectors differ from the table
    model.tuned.all_vectors()
    with torch.no_grad():
        model.tuned.backbone.model.h[1].attn.c_attn.lora_B.default.weight.add_(0.3)
    before = model.tuned.vectors.clone()
    counts = counting_upper(model)
    users, items = fixed_batch()
    model.train()
    model(Batch(users, items)).total.backward()
    assert counts == [3]
    changed = (model.tuned.vectors - before).abs().sum(dim=1) > 0
    assert int(changed.sum()) == 3  # the 3 fresh items' rows, no others
    assert set(changed.nonzero().flatten().tolist()) <= set(items.unique().tolist())
    adapters = [p for name, p in model.named_parameters() if "lora_" in name]
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in adapters)


def test_the_out_of_memory_back_off_halves_the_fresh_items(gpt2):
    model = make(gpt2, rows_per_step=8, tune_items=6)
    counts = counting_upper(model)
    users, items = fixed_batch()  # 7 rows
    model.train()
    model(Batch(users[:4], items[:4]))  # half the micro-batch: ceil(6 x 4 / 8) = 3
    model(Batch(users, items))  # ceil(6 x 7 / 8) = 6
    assert counts == [3, 6]


def test_a_trainer_redoing_a_step_after_out_of_memory_encodes_half(gpt2, monkeypatch):
    from coldbrew.training.build import build_trainer

    monkeypatch.setenv("COLDBREW_INJECT_OOM", "0")
    config = make_config(
        {"model": "lm", "backbone": gpt2, "lm_mode": "tune", "lora": "4,8", "tune_items": 4},
        {"dim": 8, "hidden": 16, "num_neg": 2, "batch_size": 16, "quiet": True, "device": "cpu"},
    )
    trainer = build_trainer(config, tiny_dataset(), log=lambda line: None)
    counts = counting_upper(trainer.model)
    trainer.train_step(torch.arange(16) % trainer.task.num_samples())
    assert trainer.micro_batch == 8
    assert counts == [2, 2]  # two micro-batches of 8 rows, 4 x 8 / 16 fresh items each


def test_states_that_would_not_fit_are_refused_before_any_work(gpt2, monkeypatch):
    assert states_bytes(3018, 64, 384) == 296_681_472
    check_states_fit(3018, 64, 384, available=2**30)  # 0.28 GiB of 1 GiB: fits
    with pytest.raises(ColdbrewError, match=r"0\.28 GiB of hidden states.*lower --max-length"):
        check_states_fit(3018, 64, 384, available=2**28)
    calls: list[int] = []
    from coldbrew.models.lm import backbone as backbone_module

    monkeypatch.setattr(
        backbone_module.TextBackbone, "lower", lambda self, *a: calls.append(1) or None
    )
    monkeypatch.setattr(
        "coldbrew.system.memory.host_memory", lambda: {"available_bytes": 10, "total_bytes": 10}
    )
    with pytest.raises(ColdbrewError, match="RAM available"):
        make(gpt2)
    assert calls == []


def test_a_loaded_state_makes_the_table_recomputed(gpt2):
    trained, fresh = make(gpt2, tune_items=3), make(gpt2, tune_items=3)
    with torch.no_grad():
        for name, parameter in trained.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.5)
    trained.tuned.all_vectors()
    fresh.tuned.all_vectors()
    fresh.load_state_dict(trained.state_dict())
    assert fresh.tuned.stale
    fresh.eval()
    with torch.no_grad():
        text = fresh.tuned(torch.arange(12), rows=1)  # reads the table: recomputed first
    torch.testing.assert_close(text, trained.tuned.vectors)


def test_the_best_epochs_table_is_read_back_from_memory_not_recomputed(gpt2):
    """A run's end: the best epoch's adapters load after later steps changed them; its table
    comes from memory, equal to recomputing it, and other weights still run the layers."""
    model = make(gpt2, tune_items=3)
    lora_b = [p for name, p in model.named_parameters() if "lora_B" in name]
    with torch.no_grad():
        for parameter in lora_b:
            parameter.normal_(std=0.5)
    best_table = model.tuned.all_vectors()  # the "best epoch"'s evaluation
    best_state = copy.deepcopy(model.state_dict())
    with torch.no_grad():
        lora_b[0].add_(0.3)  # later training
    later_table = model.tuned.all_vectors()
    assert not torch.allclose(later_table, best_table, atol=1e-4)
    counts = counting_upper(model)
    model.load_state_dict(best_state)
    assert model.tuned.stale
    torch.testing.assert_close(model.tuned.all_vectors(), best_table, rtol=0, atol=0)
    assert counts == []  # no pass over the catalogue
    model.tuned.kept.clear()
    torch.testing.assert_close(model.tuned.all_vectors(), best_table, rtol=0, atol=0)
    assert counts  # the same numbers when recomputed
    counts.clear()
    names = dict(upper_parameters(model.tuned.backbone.model, model.tuned.backbone.split))
    frozen = next(p for p in names.values() if not p.requires_grad)
    with torch.no_grad():
        frozen.add_(0.01)  # a frozen weight of the tuned layer changed (another checkpoint)
    model.tuned.all_vectors()
    assert counts  # recomputed: the key follows the tuned layers' frozen weights too


def test_the_key_reads_the_tuned_layers_not_the_lower_ones_or_embeddings(gpt2):
    backbone = make(gpt2, tune_items=3).tuned.backbone
    names = [name for name, _ in upper_parameters(backbone.model, backbone.split)]
    assert names and all(name.startswith(("h.1.", "ln_f.")) for name in names), names
    assert any("lora_" in name for name in names)


def test_kept_tables_are_bounded_by_bytes(gpt2, monkeypatch):
    from coldbrew.models.lm import tuned as tuned_module

    model = make(gpt2, tune_items=3)
    one = model.tuned.vectors.numel() * 4
    monkeypatch.setattr(tuned_module, "KEPT_TABLES_BYTES", 2 * one)
    lora_b = next(p for name, p in model.named_parameters() if "lora_B" in name)
    keys = []
    for step in range(4):
        with torch.no_grad():
            lora_b.fill_(0.1 * (step + 1))
        model.tuned.all_vectors()
        keys.append(model.tuned.weights_key())
    assert list(model.tuned.kept) == keys[-2:]  # the two newest, the oldest dropped first


def test_coldbrew_memory_estimates_tune_mode_from_shapes(gpt2, monkeypatch):
    from coldbrew.training.memory.estimate import estimate_memory

    config = make_config(
        {"model": "lm", "backbone": gpt2, "lm_mode": "tune", "max_length": 16},
        {"dim": 8, "hidden": 16, "num_neg": 2, "batch_size": 4, "quiet": True, "device": "cpu"},
    )
    report = estimate_memory(config, tiny_dataset(), device_memory=2**30)
    assert report["method"] == "shapes"
    kinds = report["by_kind_at_peak"]
    # held states and table: 12 items x (16 + 1) tokens x 32 wide floats, plus token ids and
    # users' history and text vectors (6 x 64 floats)
    assert kinds["buffer"] == 12 * 17 * 32 * 4 + 12 * 17 * 8 + 6 * 64 * 4
    assert report["activation_bytes_per_sample"] > 0 and report["largest_micro_batch"] > 0


def test_a_new_item_goes_through_the_fine_tuned_layers(gpt2):
    from lm_support import COLD_ITEMS, ITEM_TEXTS

    model = make(gpt2, tune_items=3).eval()
    cold = COLD_ITEMS[0]
    frozen = model.encode_items(texts=[ITEM_TEXTS[cold]])
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.5)  # as if trained
    tuned = model.encode_items(texts=[ITEM_TEXTS[cold]])  # the whole forward, adapters on
    # as the cold item itself is scored: its held states through the tuned layers
    torch.testing.assert_close(tuned[0], model.item_embeddings()[cold], rtol=1e-4, atol=1e-5)
    assert not torch.allclose(tuned, frozen, atol=1e-3)


@pytest.mark.slow  # three short runs: about 10 s on a quiet machine, 34 s under load 8
def test_a_killed_run_resumes_to_the_same_result_and_saves_adapters_only(gpt2, tmp_path):
    from coldbrew.training.checkpoint import load_checkpoint
    from coldbrew.training.run import train
    from resume_support import killed_and_resumed

    options = {"model": "lm", "backbone": gpt2, "lm_mode": "tune", "lora": "4,8"}
    options |= {"tune_items": 3, "dim": 8, "hidden": 16, "num_neg": 2, "batch_size": 4}
    options |= {"epochs": 3, "lr": 0.02, "quiet": True, "device": "cpu", "seed": 2}
    straight = train(make_config(options), tmp_path / "straight", dataset=tiny_dataset())
    resumed = killed_and_resumed(options, tmp_path / "killed", tiny_dataset(), after_epoch=1)
    assert resumed["metrics"] == straight["metrics"]
    assert [entry["losses"] for entry in resumed["history"]] == [
        entry["losses"] for entry in straight["history"]
    ]
    saved = load_checkpoint(tmp_path / "killed" / "best.pt")["model"]
    backbone = sorted(key for key in saved if "backbone" in key)
    assert backbone == [  # the top layer's adapters; no frozen weight, no held state
        "tuned.backbone.model.h.1.attn.c_attn.lora_A.default.weight",
        "tuned.backbone.model.h.1.attn.c_attn.lora_B.default.weight",
    ]
    assert resumed["config"]["lm"]["lm_mode"] == "tune"
    assert resumed["config"]["lm"]["backbone"] == gpt2


def test_a_second_build_reads_the_held_states_from_disk(gpt2, monkeypatch, tmp_path):
    from coldbrew.models.lm.backbone import TextBackbone

    first = make(gpt2)
    files = sorted((tmp_path / "cache" / "states").iterdir(), key=lambda path: len(path.name))
    cached, first_table = files  # "<key>.npy", "<key>-<pooling>-first.npy"
    assert first_table.name == f"{cached.stem}-{first.tuned.backbone.pooling}-first.npy"
    calls: list[int] = []
    upper_calls: list[int] = []
    lower, upper = TextBackbone.lower, TextBackbone.upper

    def counted(self, ids, mask):
        calls.append(ids.shape[0])
        return lower(self, ids, mask)

    def counted_upper(self, states, mask):
        upper_calls.append(states.shape[0])
        return upper(self, states, mask)

    monkeypatch.setattr(TextBackbone, "lower", counted)
    monkeypatch.setattr(TextBackbone, "upper", counted_upper)
    again = make(gpt2)
    assert calls == [] and upper_calls == []  # read back, not computed: no pass at all
    assert torch.equal(again.tuned.vectors, first.tuned.vectors) and not again.tuned.stale
    torch.testing.assert_close(again.user_features, first.user_features)
    assert torch.equal(again.tuned.item_states, first.tuned.item_states)
    first.eval(), again.eval()  # no ID dropout
    torch.testing.assert_close(again.item_embeddings(), first.item_embeddings())
    cached.write_bytes(b"not an array")  # damaged: computed again, the same, and rewritten
    mended = make(gpt2)
    assert sum(calls) == len(first.tuned.item_lengths)
    assert torch.equal(mended.tuned.item_states, first.tuned.item_states)
    assert cached.stat().st_size > len(b"not an array")


def test_the_states_cache_key_names_backbone_split_and_tokens():
    from coldbrew.models.lm.tuned import states_cache_file

    ids, lengths = torch.tensor([[5, 6, 0], [7, 8, 9]]), torch.tensor([2, 3])
    key = states_cache_file("backbone@1", 2, ids, lengths)
    assert key == states_cache_file("backbone@1", 2, ids.clone(), lengths.clone())
    assert key != states_cache_file("backbone@2", 2, ids, lengths)  # other files
    assert key != states_cache_file("backbone@1", 1, ids, lengths)  # another split
    assert key != states_cache_file("backbone@1", 2, ids[:, :2], lengths.clamp(max=2))  # shorter
    assert key != states_cache_file("backbone@1", 2, ids.flip(0), lengths.flip(0))  # order


def test_first_vectors_run_the_layers_once_adapters_are_trained(gpt2):
    model = make(gpt2)  # writes the first table
    tuned = model.tuned
    frozen = tuned.first_vectors()  # read back
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.5)  # as if trained: the cached table is not theirs
    trained = tuned.first_vectors()
    torch.testing.assert_close(trained, tuned.all_vectors())
    assert not torch.allclose(trained, frozen, atol=1e-3)

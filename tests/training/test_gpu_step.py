"""The training step as a GPU runs it, proven on the CPU: no host synchronisation, no
data-dependent shape, and one graph for ``torch.compile(fullgraph=True)``.

"As a GPU runs it": the rank sampler (the rejection sampler is the CPU's), CLCRec with
``fixed_shapes`` (distinct items padded, not trimmed; dense or gather scoring, as ``auto``
picks on a GPU), bf16 autocast. Every op dispatched in a step is checked; an op that reads a
device value back to the host (``aten._local_scalar_dense``: ``.item()``, ``int(t)``, ``if t``)
or whose output size depends on values (``nonzero``, ``masked_select``, ``unique``, indexing
with a boolean mask) would stall a GPU, so the step must have none after its first run. So
would an indexed write of a host scalar (``mask[idx] = True``): the value is made on the host
(``aten.lift_fresh``) and copied to the device. On an H100 that was the step's two syncs, which
the checker missed until it tracked such values (BENCHMARKS.md, "Measured on a GPU").
Adam's step counters are the one exception: they live on the host even when the parameters
are on a GPU (``capturable=False``), so reading them is not a device sync.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from coldbrew import load_dataset
from coldbrew.config import make_config
from coldbrew.models.content import ContentEncoder
from coldbrew.system.runtime import Runtime
from coldbrew.training.run import build_trainer

aten = torch.ops.aten
SYNCING = {aten._local_scalar_dense, aten.item, aten.is_nonzero, aten.equal, aten.allclose}
DATA_DEPENDENT = {
    aten.nonzero,
    aten.nonzero_static,
    aten.masked_select,
    aten._unique,
    aten._unique2,
    aten.unique_dim,
    aten.unique_consecutive,
    aten.repeat_interleave,
}
MASKABLE = {aten.index, aten.index_put, aten.index_put_, aten._index_put_impl_}
INDEXED_WRITES = {aten.index_put, aten.index_put_, aten._index_put_impl_}


class NoHostSync(TorchDispatchMode):
    """Records every op that would sync a GPU with the host or has a data-dependent shape."""

    def __init__(self, host_tensors=()):
        super().__init__()
        self.host_tensors = {id(tensor) for tensor in host_tensors}
        self.fresh: list[torch.Tensor] = []  # host-made values, kept alive so ids stay unique
        self.found: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        packet = func.overloadpacket
        if packet is aten.lift_fresh:
            self.fresh.append(args[0])
        if packet in INDEXED_WRITES and any(args[2] is value for value in self.fresh):
            self.found.append(f"{func} of a host scalar")
        if packet in SYNCING and not (args and id(args[0]) in self.host_tensors):
            self.found.append(str(func))
        if packet in DATA_DEPENDENT:
            self.found.append(str(func))
        if packet in MASKABLE and any(
            index is not None and index.dtype == torch.bool for index in args[1]
        ):
            self.found.append(f"{func} with a boolean mask")
        return func(*args, **(kwargs or {}))


def gpu_like_trainer(neighbor_loss: bool = False, **options):
    dataset = load_dataset("synthetic:small", seed=1)
    settings = {"data": "synthetic:small", "batch_size": 256, "num_neg": 8, "quiet": True}
    config = make_config({**settings, "device": "cpu", "neighbor_loss": neighbor_loss, **options})
    trainer = build_trainer(config, dataset, fixed_shapes=True)
    trainer.task.num_samples()  # builds the sampler
    assert trainer.model.fixed_shapes and trainer.task.sampler.method == "rank"
    trainer.runtime = Runtime(torch.device("cpu"), torch.bfloat16, None)  # autocast as on a GPU
    return trainer


def adam_step_counters(optimizer) -> list[torch.Tensor]:
    return [state["step"] for state in optimizer.state.values() if "step" in state]


@pytest.mark.parametrize(
    "options",
    [{}, {"neighbor_loss": True}, {"neighbor_loss": True, "neighbor_negatives": 15}],
    ids=["base", "neighbor-term", "neighbor-term-sampled"],
)
def test_a_gpu_step_has_no_host_sync_and_no_data_dependent_shape(options):
    trainer = gpu_like_trainer(**options)
    trainer.train_step(torch.arange(256))  # the first step creates Adam's state
    with NoHostSync(adam_step_counters(trainer.optimizer)) as spy:
        for start in (256, 512):
            trainer.train_step(torch.arange(start, start + 256))
    assert spy.found == []


def test_the_checker_catches_what_it_looks_for():
    values = torch.tensor([0.0, 2.0, 3.0])
    with NoHostSync() as spy:
        _ = values.sum().item()
        _ = values[values > 1]
        _ = values.nonzero()
        _ = torch.unique(values)
        values[torch.tensor([0])] = 1.0
        values.index_fill_(0, torch.tensor([0]), 1.0)  # the value is a kernel argument: fine
        values[torch.tensor([1])] = values[:1].clone()  # a device value: fine
    assert spy.found == [
        "aten._local_scalar_dense.default",
        "aten.index.Tensor with a boolean mask",
        "aten.nonzero.default",
        "aten._unique2.default",
        "aten.index_put_.default of a host scalar",
    ]


def test_the_cpu_step_does_read_values_back():
    # the CPU's own path (rejection sampler, trimmed distinct items) syncs by design: proof that
    # the GPU-path test above looks at the right place
    dataset = load_dataset("synthetic:small", seed=1)
    config = make_config(
        {"data": "synthetic:small", "batch_size": 256, "num_neg": 8, "quiet": True}
    )
    trainer = build_trainer(config, dataset)
    trainer.train_step(torch.arange(256))
    with NoHostSync(adam_step_counters(trainer.optimizer)) as spy:
        trainer.train_step(torch.arange(256, 512))
    assert spy.found


@pytest.mark.parametrize(
    "options", [{}, {"neighbor_loss": True, "neighbor_negatives": 15}], ids=["base", "neighbor"]
)
def test_the_whole_forward_compiles_as_one_graph(options):
    trainer = gpu_like_trainer(**options)
    model, task = trainer.model, trainer.task
    users, items = task._training_data()

    def step(index: torch.Tensor) -> torch.Tensor:
        batch = task.make_batch(index)  # the rank sampler draws the negatives
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(batch).total

    compiled = torch.compile(step, fullgraph=True, dynamic=False)  # a graph break is an error
    loss = compiled(torch.arange(256))
    loss.backward()
    assert torch.isfinite(loss) and model.user_embedding.grad is not None


def test_the_lm_cache_mode_gpu_step_has_no_host_sync(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from lm_support import tiny_dataset, tiny_gpt2

    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path / "cache"))
    settings = {"model": "lm", "data": "tiny-text", "backbone": str(tiny_gpt2(tmp_path / "gpt2"))}
    settings.update(dim=8, hidden=16, loss="infonce", num_neg=2, score="cosine", batch_size=8)
    trainer = build_trainer(
        make_config(settings, {"quiet": True, "device": "cpu"}), tiny_dataset(), fixed_shapes=True
    )
    count = trainer.task.num_samples()  # builds the sampler
    trainer.runtime = Runtime(torch.device("cpu"), torch.bfloat16, None)
    trainer.train_step(torch.arange(8) % count)
    with NoHostSync(adam_step_counters(trainer.optimizer)) as spy:
        trainer.train_step(torch.arange(8, 16) % count)
    assert spy.found == []


ZOO_TRAINED = ("deepmusic", "dropoutnet", "heater", "gar", "aldi", "bpr")
ZOO_CONTENT = ("deepmusic", "dropoutnet", "heater", "gar", "aldi")  # a ContentEncoder each


def zoo_gpu_like_trainer(model: str, monkeypatch, wide: bool = False):
    """A zoo model's trainer taking the GPU's step (fixed shapes, rank sampler, bf16), over the
    tests' deterministic SVD teacher in place of the collaborative backbone; ``wide``: with a
    64-value one-hot block, which the content encoder reads by its non-zeros."""
    from teacher_support import PROVIDER

    monkeypatch.setattr("coldbrew.registry.COLLABORATIVE", PROVIDER)
    dataset = load_dataset("synthetic:small", seed=1)
    if wide:
        authors = torch.arange(dataset.num_items) % 64
        dataset.features["author"] = torch.nn.functional.one_hot(authors, 64).float()
    settings = {"data": "synthetic:small", "batch_size": 256, "quiet": True, "device": "cpu"}
    config = make_config({**settings, "model": model})
    if model != "bpr":
        config.model_options.backbone_dim = 8
    trainer = build_trainer(config, dataset, fixed_shapes=True)
    trainer.task.num_samples()  # builds the sampler
    assert trainer.model.fixed_shapes and trainer.task.sampler.method == "rank"
    encoders = [m for m in trainer.model.modules() if isinstance(m, ContentEncoder)]
    assert all(encoder.fixed_shapes and encoder.sparse == wide for encoder in encoders)
    trainer.runtime = Runtime(torch.device("cpu"), torch.bfloat16, None)
    return trainer


ZOO_CASES = [(model, False) for model in ZOO_TRAINED] + [
    pytest.param(model, True, id=f"{model}-sparse") for model in ZOO_CONTENT
]


@pytest.mark.parametrize(("model", "wide"), ZOO_CASES)
def test_a_zoo_models_gpu_step_has_no_host_sync(model, wide, monkeypatch):
    trainer = zoo_gpu_like_trainer(model, monkeypatch, wide)
    trainer.train_step(torch.arange(256))  # the first step creates Adam's state
    with NoHostSync(adam_step_counters(trainer.optimizer)) as spy:
        trainer.train_step(torch.arange(256, 512))
    assert spy.found == []


# aot_eager traces the whole step (a graph break is an error whatever the backend) and its
# backward in seconds; inductor also generates the kernels, a minute a model on 2 cores: slow
@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
@pytest.mark.parametrize(("model", "wide"), ZOO_CASES)
def test_a_zoo_models_whole_step_compiles_as_one_graph(model, wide, backend, monkeypatch):
    # every case compiles the same `step` code object: past dynamo's recompile limit (8), a
    # full-graph compile fails, so `-m "slow or not slow"` failed the later models; start clean
    torch._dynamo.reset()
    trainer = zoo_gpu_like_trainer(model, monkeypatch, wide)
    model, task = trainer.model, trainer.task

    def step(index: torch.Tensor) -> torch.Tensor:
        batch = task.make_batch(index)  # the rank sampler draws the negatives
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(batch).total

    compiled = torch.compile(step, fullgraph=True, dynamic=False, backend=backend)
    loss = compiled(torch.arange(256))
    loss.backward()
    gradients = [p.grad for p in model.parameters() if p.requires_grad]
    assert torch.isfinite(loss) and gradients and all(g is not None for g in gradients)

"""The levers for small batches on a GPU, proven on the CPU: ``compile_mode`` reaches
``torch.compile`` (reduce-overhead replays CUDA graphs, which need the compiled loss to be one
graph that writes none of its inputs, with no host sync: tests/training/test_gpu_step.py
proves the step has none), and
``fused_optimizer`` picks torch's fused Adam on CPU and CUDA (equal to the plain loop:
tests/training/test_optim.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from test_gpu_step import gpu_like_trainer

from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.training.optim import fused_choice


def fake_parameter(device: str, floating: bool = True):
    return SimpleNamespace(device=torch.device(device), is_floating_point=lambda: floating)


def test_fused_where_the_device_has_it_and_only_when_wanted():
    on = [{"params": [fake_parameter("cuda"), fake_parameter("cuda")]}]
    assert fused_choice(on) is True
    assert fused_choice(on, wanted=False) is None  # torch's default (foreach on CUDA)
    assert fused_choice([{"params": [fake_parameter("cpu")]}]) is True
    assert fused_choice([{"params": [fake_parameter("mps")]}]) is None
    assert fused_choice([{"params": [fake_parameter("cpu"), fake_parameter("cuda")]}]) is None
    assert fused_choice([{"params": [fake_parameter("cuda", floating=False)]}]) is None


def test_the_compile_mode_reaches_torch_compile(monkeypatch):
    calls = []

    def fake_compile(function, **options):
        calls.append(options)
        return function

    monkeypatch.setattr(torch, "compile", fake_compile)
    gpu_like_trainer(compile=True, compile_mode="reduce-overhead")
    assert {"mode": "reduce-overhead"} in calls
    with pytest.raises(ColdbrewError, match="compile_mode"):
        make_config({"compile_mode": "fast"})


def test_the_compiled_loss_is_one_graph_that_cuda_graphs_can_replay():
    # CUDA graphs replay one captured graph: a break would leave eager code (launches, syncs)
    # between its pieces. dynamo's view of what the trainer compiles, under bf16 autocast
    torch._dynamo.reset()
    trainer = gpu_like_trainer()
    batch = trainer.make_batch(torch.arange(256))
    with trainer.runtime.autocast():
        explained = torch._dynamo.explain(trainer.wrapped)(batch)
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1


def mutated_inputs(function, *args) -> list[list[int]]:
    """The inputs (parameters and buffers included) each graph of ``function``'s compiled
    forward writes to, as AOT autograd's metadata says: inductor replays CUDA graphs only for
    a graph that mutates none ("skipping cudagraphs due to mutated inputs"), and falls back to
    plain launches without an error."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    found = []

    def forward_compiler(graph, inputs):
        metadata = torch._guards.TracingContext.try_get().fw_metadata
        found.append(
            [
                i
                for i, info in enumerate(metadata.input_info)
                if info.mutates_data or info.mutates_metadata
            ]
        )
        return make_boxed_func(graph.forward)

    backend = aot_autograd(
        fw_compiler=forward_compiler,
        bw_compiler=lambda graph, inputs: make_boxed_func(graph.forward),
    )
    torch._dynamo.reset()
    torch.compile(function, backend=backend, fullgraph=True)(*args).backward()
    return found


def test_the_mutation_checker_sees_a_written_buffer():
    buffer, weight = torch.zeros(3), torch.nn.Parameter(torch.ones(3))

    def writes(x):
        buffer.add_(1)
        return (x * weight).sum()

    assert mutated_inputs(writes, torch.ones(3)) == [[0]]
    assert mutated_inputs(lambda x: (x * weight).sum(), torch.ones(3)) == [[]]


@pytest.mark.parametrize("options", [{}, {"neighbor_loss": True}], ids=["base", "neighbor-term"])
def test_the_compiled_loss_writes_none_of_its_inputs(options):
    trainer = gpu_like_trainer(**options)
    batch = trainer.make_batch(torch.arange(256))

    def loss(batch):
        with trainer.runtime.autocast():
            return trainer.wrapped(batch).total

    assert mutated_inputs(loss, batch) == [[]]  # one graph, and CUDA graphs may replay it


@pytest.mark.slow
def test_a_reduce_overhead_step_trains_as_the_eager_one():
    # inductor builds the kernels on the CPU (CUDA graphs themselves need CUDA: skipped here
    # with a warning), so the compiled path runs end to end; a minute on 2 cores
    torch._dynamo.reset()
    torch.manual_seed(0)
    eager = gpu_like_trainer()
    torch.manual_seed(0)
    compiled = gpu_like_trainer(compile=True, compile_mode="reduce-overhead")
    compiled.model.load_state_dict(eager.model.state_dict())
    for trainer in (eager, compiled):
        torch.manual_seed(1)
        losses = [trainer.train_step(torch.arange(s, s + 256))[0] for s in (0, 256, 512)]
        trainer.losses = torch.stack(losses)
    torch.testing.assert_close(compiled.losses, eager.losses, rtol=2e-2, atol=2e-2)

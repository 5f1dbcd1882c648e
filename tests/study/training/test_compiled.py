"""study.training.compiled: the compiled training forward computes what the eager one does, on every layer
kind, with one graph for every stack size of two runs or more; the rule that picks it; the trainer's use.

Compiling costs time (CI has 2 cores): the capture is checked with the "aot_eager_decomp_partition"
backend (dynamo's graph, AOTAutograd's backward and inductor's decompositions, run by ATen's kernels,
a few seconds per net), inductor's own code on one small net (marked ``inductor``: about 20-30 s of
compiling on 2 cores, gcc included)."""

from types import SimpleNamespace

import pytest
import torch

from archstudy.sampling import ArchSpec, SpecError
from archstudy.study import Protocol, build_network, train_architecture
from archstudy.study.nn.gmp import GmP
from archstudy.study.nn.householder import Householder
from archstudy.study.nn.layers import Dense
from archstudy.study.training import compiled
from archstudy.study.training.compiled import CompiledForward, choose, decide, select_forward
from archstudy.study.training.stack import keep, new_stack, train_step

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"),
]

CAPTURE = "aot_eager_decomp_partition"
KINDS = {
    # Householder layers, a GmP input layer, batchnorm (biases folded where no skip starts), skips after the
    # linear op with a projection into the output, a debiased shifted tanh
    "householder-gmp-bn-skip": ArchSpec(
        depth=5,
        width=6,
        d_in=5,
        d_out=3,
        activation="tanh",
        norm="batch",
        weights="householder",
        param="gmp",
        skip="after_linear",
        debias=True,
        shift=0.2,
    ),
    # GmP with input mean normalization (running means), layernorm with the relu folded into its affine,
    # skips after the norm op at strength 0.5, Gaussian biases
    "gmp-imn-ln-skip": ArchSpec(
        depth=5,
        width=6,
        d_in=5,
        d_out=3,
        activation="relu",
        norm="layer",
        param="gmp",
        skip="after_norm",
        skip_strength=0.5,
        bias_init="gaussian",
        dilation=1.2,
        shift=-0.2,
    ),
    # dense layers with batchnorm: the bias folded into the running mean, relu into batchnorm's affine
    "dense-bn": ArchSpec(depth=3, width=6, d_in=5, d_out=3, activation="relu", norm="batch", bias_init="gaussian"),
}
PROTOCOL = Protocol()
LRS = [0.01, 0.1, 0.3]


def _data(spec, n=20, count=3):
    g = torch.Generator().manual_seed(0)
    return [
        (torch.randn(n, spec.d_in, generator=g, dtype=torch.float64), torch.randint(0, spec.d_out, (n,), generator=g))
        for _ in range(count)
    ]


def _relative(a, b) -> float:
    """max |a - b| / max |a| over every stacked tensor (parameters and running statistics)."""
    worst = 0.0
    for (_name, x), (_, y) in zip(a.net.stacked_tensors(), b.net.stacked_tensors()):
        scale = float(x.detach().abs().max())
        if scale:
            worst = max(worst, float((x.detach() - y.detach()).abs().max()) / scale)
    return worst


def _steps_alike(spec, forward, sizes):
    """Eager and compiled stacks stepped side by side; the stack shrinks through ``sizes`` (runs kept)."""
    data = _data(spec)
    eager = new_stack(build_network(spec, 1, runs=len(LRS)), LRS, PROTOCOL)
    other = new_stack(build_network(spec, 1, runs=len(LRS)), LRS, PROTOCOL)
    worst = []
    for runs in sizes:
        eager, other = keep(eager, runs), keep(other, runs)
        for x, y in data:
            train_step(eager, x, y, 1.3, PROTOCOL)
            train_step(other, x, y, 1.3, PROTOCOL, forward=forward)
        worst.append(_relative(eager, other))
    return worst


@pytest.mark.parametrize("spec", KINDS.values(), ids=KINDS.keys())
def test_compiled_forward_steps_like_the_eager_one_on_every_layer_kind(spec):
    forward = CompiledForward(spec, backend=CAPTURE)
    worst = _steps_alike(spec, forward, [[0, 1, 2], [0, 2], [2]])
    assert max(worst) <= 1e-12, worst
    # stacks of 3 and 2 runs share one graph (the runs dimension is dynamic); a stack of 1 is the second
    assert forward.stats.graphs == 2 and forward.stats.sizes == {1, 2, 3}


@pytest.mark.inductor
def test_inductor_code_steps_like_the_eager_one():
    """The cheapest net whose compiled code has every kind of kernel the others add to (a batched product,
    the batchnorm reductions with the folded bias and relu, their gradients): about 20 s of CPU to compile
    on this machine, gcc included. (The two other nets of KINDS, compiled by inductor once by hand, agreed
    with the eager step to 1.6e-15 after the same steps.)"""
    spec = KINDS["dense-bn"]
    forward = CompiledForward(spec)  # inductor: C++ loops built with gcc
    worst = _steps_alike(spec, forward, [[0, 1, 2], [0, 2]])
    assert max(worst) <= 1e-12, worst
    assert forward.stats.graphs == 1 and forward.stats.compile_s > 0


def test_a_training_with_the_compiled_forward_is_the_eager_training_with_one_graph_per_size_class():
    """A whole training (the stack shrinks as runs finish) gives the eager outcome, and compiles one graph
    for all stacks of two runs or more plus at most one for a single run."""
    spec = KINDS["dense-bn"]
    data = SimpleNamespace()
    g = torch.Generator().manual_seed(2)
    for name, n in (("train", 60), ("val", 30), ("test", 30)):
        x = torch.randn(n, spec.d_in, generator=g, dtype=torch.float64)
        setattr(data, name, SimpleNamespace(x=x, y=(x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()))
    protocol = Protocol(
        batch_size=20, patience_first=2, patience=1, divisions=1, max_epochs=8, lrs=[0.003, 0.03, 0.3, 3.0]
    )
    forward = CompiledForward(spec, backend=CAPTURE)
    eager = train_architecture(spec, data, seed=4, protocol=protocol, forward="eager")
    other = train_architecture(spec, data, seed=4, protocol=protocol, forward=forward)
    for a, b in zip(eager.runs, other.runs):
        assert (a.epochs, a.divisions, a.diverged) == (b.epochs, b.divisions, b.diverged)
        for f in ("val_error", "train_error", "test_error"):
            assert abs(getattr(a, f) - getattr(b, f)) <= 1e-12
    assert len({r.epochs for r in eager.runs}) > 1  # runs finished at different epochs: the stack shrank
    assert len(forward.stats.sizes) > 1 and forward.stats.graphs <= 1 + (1 in forward.stats.sizes)


def test_the_rule_is_eager_on_a_cpu_and_on_a_gpu_a_threshold_on_the_layer_steps(monkeypatch):
    """On a GPU: the CUDA graph for the families that declare it (``tests/study/training/test_graphed.py``), for the
    others a threshold on the layer-steps, checked here with the graph declared by none."""
    spec = KINDS["dense-bn"]
    assert choose(spec, torch.device("cpu"), 10**9, 250).kind == "eager"
    from archstudy.study.perf.bench import CASES

    # the bench's cases (batchnorm nets), measured on an H200: the dense nets graph with fused epilogues, the
    # Householder net compiles
    picks = {k: choose(c.spec, torch.device("cuda"), c.samples, 250).kind for k, c in CASES.items()}
    assert picks == {k: "compiled" if k == "1M-householder" else "fused-graph" for k in CASES}
    monkeypatch.setattr(Dense, "cuda_graph", False)
    monkeypatch.setattr(GmP, "cuda_graph", False)
    least = compiled.cuda_compile_min_layer_steps(spec)
    assert least == Dense.cuda_compile_min_layer_steps == 6_000  # the H100's measurement (docs/performance.md)
    examples = -(-least // spec.depth) * 250  # the fewest whole minibatches that reach the threshold
    assert compiled.layer_steps(spec, examples, 250) >= least > compiled.layer_steps(spec, examples - 250, 250)
    assert choose(spec, torch.device("cuda"), examples, 250).kind == "compiled"
    assert choose(spec, torch.device("cuda"), examples - 250, 250).kind == "eager"
    hh = spec.replace(weights="householder")
    assert compiled.cuda_compile_min_layer_steps(hh) == Householder.cuda_compile_min_layer_steps == 400
    assert choose(hh, torch.device("cuda"), examples - 250, 250).kind == "compiled"  # a lower threshold
    gmp = spec.replace(param="gmp")  # a dense net of GmP layers: the threshold every family inherits
    assert compiled.cuda_compile_min_layer_steps(gmp) == GmP.cuda_compile_min_layer_steps == least
    # the bench's cases, measured on an H100: only the deepest dense net and the Householder net compile
    picks = {k: choose(c.spec, torch.device("cuda"), c.samples, 250).kind for k, c in CASES.items()}
    assert {k for k, v in picks.items() if v == "compiled"} == {"1M-d49", "1M-householder"}
    assert decide(1.0, compiled.FASTER) == "compiled" and decide(1.0, compiled.FASTER * 1.01) == "eager"
    stack = new_stack(build_network(spec, 0, runs=2), LRS[:2], PROTOCOL)
    ((x, y),) = _data(spec, count=1)
    forward, choice = select_forward("auto", stack, x, y, 1.0, PROTOCOL, None, 1_000)
    assert choice.kind == "eager" and forward is compiled.folded_forward  # on this CPU


def test_a_resumed_training_keeps_the_forward_it_started_with(tmp_path, monkeypatch):
    """The choice is part of the checkpoint: a session resumed under "auto" uses the forward the first
    session used (here "compiled", which the rule would not pick on a CPU)."""
    from archstudy.study.training import trainer

    spec = KINDS["dense-bn"]
    splits = zip(("train", "val", "test"), _data(spec, 40))
    data = SimpleNamespace(**{k: SimpleNamespace(x=x, y=y) for k, (x, y) in splits})
    protocol = Protocol(batch_size=20, max_epochs=4, lrs=[0.01, 0.1])
    path = tmp_path / "ckpt.pt"
    monkeypatch.setattr(compiled, "CompiledForward", lambda spec: CompiledForward(spec, backend=CAPTURE))
    options = []

    def spy(option, *args, **kwargs):
        options.append(option)
        return select_forward(option, *args, **kwargs)

    monkeypatch.setattr(trainer, "select_forward", spy)

    def stop(progress):
        if progress.epoch == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_architecture(
            spec,
            data,
            seed=1,
            protocol=protocol,
            forward="compiled",
            checkpoint_path=path,
            checkpoint_every_s=0.0,
            progress=stop,
        )
    assert torch.load(path, weights_only=False)["forward"] == "compiled"
    train_architecture(spec, data, seed=1, protocol=protocol, checkpoint_path=path)
    assert options == ["compiled", "compiled"]


def test_the_trainer_refuses_an_unknown_forward_in_one_line():
    with pytest.raises(SpecError, match="train_architecture.forward = 'fast': must be one of"):
        train_architecture(KINDS["dense-bn"], None, forward="fast")

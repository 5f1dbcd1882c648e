"""The training step as a CUDA graph (``study.training.graphed``).

On the CPU, CUDA graphs are emulated (``emulated_graphs``): the warm-up runs its steps, the capture records
nothing, and a replay runs the step eagerly after checking that every tensor the step reads or writes still has
the address it had at the capture, which is the condition under which a real graph's replay computes the step.
That checks everything but the CUDA mechanics: the warm-up leaves the state bit for bit as it found it, the
stack is captured again each time it shrinks, the trainer's bookkeeping between steps writes in place, the
choice is kept in the checkpoint. On a CUDA device (tests marked ``cuda``) the real graphs: a whole training
equals the eager one to round-off, checkpoint and resume, no host synchronization inside an epoch, the bench.
"""

import inspect
import weakref
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from device_training import DATA, LAYERNORM, RICH, SHORT, SPEC, no_host_sync, on_device, same_runs

from archstudy.sampling import SpecError
from archstudy.study import build_network, train_architecture
from archstudy.study.experiment.protocol import Protocol
from archstudy.study.training import checkpoint as ckpt
from archstudy.study.training import compiled
from archstudy.study.training import graphed
from archstudy.study.training import trainer as trainer_module
from archstudy.study.training.graphed import GraphedStep, restore, state_of
from archstudy.study.training.stack import Stack, new_stack, train_step

# runs that end at different epochs (the high rates early), so that the stack shrinks and is captured again
PROTOCOL = SHORT.replace(lrs=[0.01, 0.1, 1.0, 10.0, 100.0], max_epochs=12)
ADAM = SHORT.replace(optimizer="adam", lrs=[1e-3, 1e-2, 1e-1], max_epochs=6)


def _addresses(env: dict) -> dict[str, int]:
    """The address of every tensor a captured step (its closure's variables ``env``) reads or writes: the stack's
    state, rates, marks and sums, every chunk's views of them, the static minibatch buffers and a per-run loss
    scale."""
    stack = env["stack"]
    tensors = {**stack.tensors(), "lr": stack.lr, "nonfinite": stack.nonfinite, "loss_sum": stack.loss_sum}
    for chunk_size, chunk_parts in stack._parts.items():
        for j, part in enumerate(chunk_parts):
            for k, t in [*part.net.stacked_tensors(), ("lr", part.lr), ("loss_sum", part.loss_sum)]:
                tensors[f"part {chunk_size}.{j}.{k}"] = t
    tensors.update(x=env["x"], y=env["y"])
    if isinstance(env["c_out"], torch.Tensor):
        tensors["c_out"] = env["c_out"]
    return {k: t.data_ptr() for k, t in tensors.items()}


@pytest.fixture
def emulated_graphs(monkeypatch):
    """CUDA graphs emulated on the CPU (module docstring); yields the stack sizes captured, in order."""
    captured: list[int] = []

    def capture(step, device):
        # Like a real graph, the emulation holds nothing the step reads: only weak references, so that a replay
        # into a stack nobody keeps alive fails here as it would corrupt memory there.
        env = inspect.getclosurevars(step).nonlocals
        refs = {k: weakref.ref(v) for k, v in env.items() if isinstance(v, (torch.Tensor, Stack))}
        plain = {k: v for k, v in env.items() if k not in refs}
        code = step.__code__
        del step, env
        captured.append(refs["stack"]().size)

        def replay():
            env = {**plain, **{k: r() for k, r in refs.items()}}
            freed = [k for k, r in refs.items() if r() is None]
            assert not freed, f"the graph replays into freed memory: {freed}"
            assert _addresses(env) == before, "a tensor the graph reads moved"
            train_step(env["stack"], env["x"], env["y"], env["c_out"], env["protocol"], env["chunk"], env["forward"])

        before = _addresses({**plain, **{k: r() for k, r in refs.items()}})
        assert "train_step" in code.co_names  # the captured step is one train_step on these variables
        return SimpleNamespace(replay=replay)

    monkeypatch.setattr(graphed, "supported", lambda device: True)
    monkeypatch.setattr(graphed, "warm_up", lambda step, device, times: [step() for _ in range(times)])
    monkeypatch.setattr(graphed, "capture", capture)
    return captured


def _same_networks(a, b) -> None:
    for (name, ta), (_, tb) in zip(a.network.stacked_tensors(), b.network.stacked_tensors()):
        assert torch.equal(ta, tb), name


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize(
    "spec, protocol",
    [(SPEC, PROTOCOL), (RICH, PROTOCOL), (LAYERNORM, PROTOCOL), (SPEC, ADAM)],
    ids=["dense-bn", "householder-gmp-skip", "gmp-ln-skip", "adam"],
)
def test_a_graphed_training_is_the_eager_one(emulated_graphs, spec, protocol):
    """Emulated graphs train exactly as the eager step (the same kernels on the CPU, so bit for bit): the warm-up
    before each capture restores the state it changed, and a stack is captured again, at its new size, each time
    finished runs leave it (and only then)."""
    eager = train_architecture(spec, DATA, seed=3, protocol=protocol, forward="eager")
    graph = train_architecture(spec, DATA, seed=3, protocol=protocol, forward="graph")
    same_runs(eager, graph, 0.0)
    _same_networks(eager, graph)
    runs = len(protocol.lrs)
    assert emulated_graphs[0] == runs
    assert emulated_graphs == sorted(set(emulated_graphs), reverse=True)  # one capture per stack, shrinking
    sizes = {runs - sum(1 for r in eager.runs if r.epochs < e) for e in range(1, max(r.epochs for r in eager.runs) + 1)}
    assert set(emulated_graphs) == sizes  # the live stack sizes the training went through
    assert len(sizes) >= (2 if protocol is PROTOCOL else 1)


@pytest.mark.usefixtures("one_thread")
def test_several_initializations_graph_with_their_own_loss_scales(emulated_graphs):
    """Several initializations in one stack: the loss divides each run by its own c_out (a tensor the graph
    reads), rebuilt with each smaller stack."""
    args = dict(spec=RICH, data=DATA, seed=3, protocol=PROTOCOL, init_seeds=[1, 2])
    eager = train_architecture(**args, forward="eager")
    graph = train_architecture(**args, forward="graph")
    same_runs(eager, graph, 0.0)
    _same_networks(eager, graph)
    assert emulated_graphs[0] == 10 and len(emulated_graphs) >= 3


def test_the_bench_keeps_what_its_graph_replays_into(emulated_graphs):
    """The bench's graphed runner holds its stack and data while it replays (a graph holds no reference to them):
    after a garbage collection a replay still finds them."""
    import gc

    from archstudy.study.perf.bench import GraphedRunner

    runner = GraphedRunner(SPEC, 3, 20, torch.device("cpu"))
    gc.collect()
    runner(1)
    assert emulated_graphs == [3] and runner.graphed.capture_s > 0


@pytest.mark.usefixtures("one_thread")
def test_a_capture_that_fails_goes_on_eagerly(emulated_graphs, monkeypatch):
    """A step that cannot be captured (an operation CUDA forbids while capturing) costs the graph, not the training:
    one line says so, and the training goes on eagerly to the eager numbers."""

    def refused(step, device):
        raise RuntimeError("operation not permitted when stream is capturing\nmore detail")

    monkeypatch.setattr(graphed, "capture", refused)
    lines: list[str] = []
    eager = train_architecture(SPEC, DATA, seed=3, protocol=PROTOCOL, forward="eager")
    graph = train_architecture(SPEC, DATA, seed=3, protocol=PROTOCOL, forward="graph", report=lines.append)
    same_runs(eager, graph, 0.0)
    _same_networks(eager, graph)
    assert lines == [
        "the step as a CUDA graph could not be captured (RuntimeError: operation not permitted when stream is "
        "capturing); training goes on with the eager step"
    ]


@pytest.mark.usefixtures("one_thread")
def test_a_warm_up_that_fails_part_way_leaves_the_state_as_it_was(emulated_graphs, monkeypatch):
    """A warm-up that fails after a step (out of memory, say) has changed the state: it is restored before the
    training goes on eagerly, so the numbers are the eager ones."""

    def failing(step, device, times):
        step()
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(graphed, "warm_up", failing)
    lines: list[str] = []
    eager = train_architecture(SPEC, DATA, seed=3, protocol=PROTOCOL, forward="eager")
    graph = train_architecture(SPEC, DATA, seed=3, protocol=PROTOCOL, forward="graph", report=lines.append)
    same_runs(eager, graph, 0.0)
    _same_networks(eager, graph)
    assert len(lines) == 1 and "(OutOfMemoryError: CUDA out of memory." in lines[0]


def test_the_emulation_sees_a_tensor_that_moves(emulated_graphs, monkeypatch):
    """The address check can fail: rates set by replacing the stack's tensor (not in place) are caught."""

    def replacing(stack, lr_of_run):
        stack.lr = torch.as_tensor(lr_of_run[stack.runs], dtype=torch.float64)

    monkeypatch.setattr(trainer_module, "set_rates", replacing)
    with pytest.raises(AssertionError, match="moved"):
        train_architecture(SPEC, DATA, seed=3, protocol=PROTOCOL, forward="graph")


@pytest.mark.usefixtures("one_thread")
def test_the_warm_up_leaves_the_state_as_it_found_it():
    """``state_of`` / ``restore``: after two Adam steps (parameters, running statistics, moments, step counts,
    marks and sums all change) the state is back, bit for bit, at the same addresses."""
    p = Protocol(optimizer="adam", batch_size=50)
    stack = new_stack(build_network(RICH, 3, runs=2), [1e-2, 1e-1], p)
    x, y = DATA.train.x[:50], DATA.train.y[:50]
    train_step(stack, x, y, 1.0, p)
    saved = state_of(stack)
    live = {**stack.tensors(), "nonfinite": stack.nonfinite, "loss_sum": stack.loss_sum}
    addresses = {k: t.data_ptr() for k, t in live.items()}
    for _ in range(2):
        train_step(stack, x, y, 1.0, p)
    assert any(not torch.equal(saved[k], t) for k, t in live.items())
    restore(stack, saved)
    for k, t in live.items():
        assert torch.equal(saved[k], t) and t.data_ptr() == addresses[k], k


def _stopped_after(epoch, **kwargs):
    class Stop(Exception):
        pass

    def stop(progress):
        if progress.epoch == epoch:
            raise Stop

    with pytest.raises(Stop):
        train_architecture(progress=stop, checkpoint_every_s=0.0, **kwargs)


@pytest.mark.usefixtures("one_thread")
def test_a_graphed_training_resumes_as_a_graph_and_off_cuda_eagerly(emulated_graphs, tmp_path, monkeypatch):
    """The choice is kept in the checkpoint: a graphed training stopped after epoch 3 resumes (``forward="auto"``)
    as a graph and ends as the uninterrupted one; resumed where graphs are not supported it continues eagerly,
    with the same numbers (a replay runs the eager step's kernels)."""
    args = dict(spec=SPEC, data=DATA, seed=3, protocol=PROTOCOL)
    whole = train_architecture(**args, forward="graph")
    for where in ("graph", "cpu"):
        path = tmp_path / f"{where}.pt"
        _stopped_after(3, checkpoint_path=path, forward="graph", **args)
        state = torch.load(path, weights_only=False)
        assert state["forward"] == "graph"
        del emulated_graphs[:]
        if where == "cpu":
            monkeypatch.setattr(graphed, "supported", lambda device: False)
        resumed = train_architecture(**args, checkpoint_path=path)
        same_runs(whole, resumed, 0.0)
        _same_networks(whole, resumed)
        assert (len(emulated_graphs) > 0) == (where == "graph")


@pytest.fixture
def cheap_compile(monkeypatch):
    """``CompiledForward`` with the backend that traces, decomposes and differentiates as inductor does but runs
    ATen's kernels (seconds, not a C++ build): the compiled step on the CPU, bit for bit as reproducible."""
    made = compiled.CompiledForward
    monkeypatch.setattr(
        compiled, "CompiledForward", lambda spec: made(spec, backend="aot_eager_decomp_partition"), raising=True
    )


@pytest.mark.usefixtures("one_thread", "cheap_compile")
def test_a_graph_of_the_compiled_forward_trains_as_the_compiled_step(emulated_graphs, tmp_path, monkeypatch):
    """``forward="compiled-graph"``: the compiled forward's step captured once per stack, exactly the compiled
    training (bit for bit with emulated graphs); the checkpoint keeps the kind, and resumed where graphs are not
    supported the training goes on with the compiled step to the same numbers."""
    args = dict(spec=SPEC, data=DATA, seed=3, protocol=PROTOCOL)
    plain = train_architecture(**args, forward="compiled")
    graph = train_architecture(**args, forward="compiled-graph")
    same_runs(plain, graph, 0.0)
    _same_networks(plain, graph)
    assert emulated_graphs[0] == len(PROTOCOL.lrs) and emulated_graphs == sorted(set(emulated_graphs), reverse=True)
    path = tmp_path / "c.pt"
    _stopped_after(3, checkpoint_path=path, forward="compiled-graph", **args)
    assert torch.load(path, weights_only=False)["forward"] == "compiled-graph"
    monkeypatch.setattr(graphed, "supported", lambda device: False)
    del emulated_graphs[:]
    resumed = train_architecture(**args, checkpoint_path=path, checkpoint_every_s=0.0)
    same_runs(plain, resumed, 0.0)
    assert emulated_graphs == [] and torch.load(path, weights_only=False)["forward"] == "compiled"


@pytest.fixture
def cheap_fuse(monkeypatch):
    """The fused epilogues (``study.nn.epilogue``) through the backend of ``cheap_compile``."""
    from archstudy.study.training import stack as stack_module

    monkeypatch.setattr(stack_module, "FUSE_BACKEND", "aot_eager_decomp_partition")


@pytest.mark.usefixtures("one_thread", "cheap_fuse")
def test_a_graph_of_the_fused_forward_trains_as_the_fused_step(emulated_graphs, tmp_path, monkeypatch):
    """``forward="fused-graph"`` (the rule on a GPU for nets with normalizations): the fused step captured once per
    stack, exactly the fused training; the checkpoint keeps the kind, and resumed where graphs are not supported
    the training goes on with the fused step to the same numbers."""
    args = dict(spec=LAYERNORM, data=DATA, seed=3, protocol=PROTOCOL)
    plain = train_architecture(**args, forward="fused")
    graph = train_architecture(**args, forward="fused-graph")
    same_runs(plain, graph, 0.0)
    _same_networks(plain, graph)
    assert emulated_graphs[0] == len(PROTOCOL.lrs) and emulated_graphs == sorted(set(emulated_graphs), reverse=True)
    path = tmp_path / "f.pt"
    _stopped_after(3, checkpoint_path=path, forward="fused-graph", **args)
    assert torch.load(path, weights_only=False)["forward"] == "fused-graph"
    monkeypatch.setattr(graphed, "supported", lambda device: False)
    del emulated_graphs[:]
    resumed = train_architecture(**args, checkpoint_path=path, checkpoint_every_s=0.0)
    same_runs(plain, resumed, 0.0)
    assert emulated_graphs == [] and torch.load(path, weights_only=False)["forward"] == "fused"


@pytest.mark.usefixtures("one_thread", "cheap_fuse")
def test_the_projection_and_the_bench_measure_the_fused_graph(emulated_graphs):
    """Where the rule fuses (a net with batchnorm, on a device with graphs), the projection's step is the fused
    graph at every size, with its per-process compile apart; the bench has its column."""
    from archstudy.study.perf.bench import BenchCase, bench_case
    from archstudy.study.perf.projection import measure_step_times, project

    case = BenchCase("tiny", SPEC, 1_000, 1, 100)
    (row,) = measure_step_times([case], sizes=(3, 1), repeats=1, steps=1, eval_examples=50, graph=True)
    assert row["forward"] == "fused-graph" and set(row["step_s"]) == {3, 1}
    assert row["capture_s"] > 0 and row["process_compile_s"] > 0
    assert emulated_graphs == [3, 1, 3, 1]  # the eager graph's stacks, then the fused graph's
    hours = project([{**row, "depth": d} for d in (3, 49)])[-1]
    without = project([{**row, "depth": d, "process_compile_s": 0.0} for d in (3, 49)])[-1]
    assert hours["hours_one_device"] - without["hours_one_device"] == pytest.approx(hours["setup_hours_per_device"])
    del emulated_graphs[:]
    bench = bench_case(case, runs=3, batch=50, repeats=1, plain=False, compiled=False, graph=True)
    assert bench["graph_fused_s_per_epoch"] > 0 and bench["graph_fused_error"] == ""
    assert bench["graph_fused_gemm_fraction"] == pytest.approx(bench["gemm_fraction"] * bench["graph_fused_speedup"])
    assert emulated_graphs == [3, 3]  # the graph, then the fused graph


@pytest.mark.usefixtures("one_thread", "cheap_compile")
def test_the_projection_measures_the_graph_of_the_compiled_forward_beside_the_rules_pick(emulated_graphs, monkeypatch):
    """``measure_step_times`` with the compile asked for, where the trainer graphs: the graph (the rule's pick) and
    the graph of the compiled forward, each at every stack size; a capture that fails costs only the latter."""
    from archstudy.study.perf.bench import BenchCase
    from archstudy.study.perf.projection import compiled_graph_rows, measure_step_times

    case = BenchCase("tiny", SPEC.replace(norm="none"), 1_000, 1, 100)  # nothing to fuse: the rule's pick is "graph"
    (row,) = measure_step_times([case], sizes=(3, 1), repeats=1, steps=1, compiled=True, eval_examples=50, graph=True)
    assert row["forward"] == "graph" and set(row["step_s"]) == set(row["compiled_graph_step_s"]) == {3, 1}
    assert row["compiled_graph_compile_s"] > 0 and row["compiled_graph_capture_s"] > 0
    # compiled before the captures, as the trainer does: a capture's seconds are not the compile's
    assert row["compiled_graph_capture_s"] < 0.5 * row["compiled_graph_compile_s"]
    assert compiled_graph_rows([row])[0]["step_s"] == row["compiled_graph_step_s"]
    assert emulated_graphs == [3, 1, 3, 1]  # the graph's stacks, then the compiled graph's

    refuse_the_compiled_forward(monkeypatch)
    (row,) = measure_step_times([case], sizes=(3, 1), repeats=1, steps=1, compiled=True, eval_examples=50, graph=True)
    assert row["forward"] == "graph" and set(row["step_s"]) == {3, 1} and "compiled_graph_step_s" not in row
    assert row["compiled_graph_error"] == "RuntimeError: operation not permitted when stream is capturing"
    assert compiled_graph_rows([row]) is None


@pytest.mark.usefixtures("one_thread", "cheap_fuse")
def test_the_bench_times_the_graph_of_the_compiled_forward(emulated_graphs, monkeypatch):
    """A bench row with the graph and the compile: the graph of the compiled forward is timed beside them, and a
    capture of it that fails is a NaN and its error's first line, not a failed bench."""
    from archstudy.study.perf.bench import BenchCase, bench_case

    case = BenchCase("tiny", SPEC, 1_000, 1, 100)
    args = dict(runs=3, batch=50, repeats=1, plain=False, compile_backend="aot_eager_decomp_partition", graph=True)
    row = bench_case(case, **args)
    assert row["graph_compiled_s_per_epoch"] > 0 and row["graph_compiled_error"] == ""
    assert row["graph_compiled_speedup"] == pytest.approx(
        row["stacked_s_per_epoch"] / row["graph_compiled_s_per_epoch"]
    )
    assert emulated_graphs == [3, 3, 3]  # the graph, the graph of the compiled forward, the fused graph
    refuse_the_compiled_forward(monkeypatch)
    row = bench_case(case, **args)
    assert np.isnan(row["graph_compiled_s_per_epoch"]) and row["graph_s_per_epoch"] > 0
    assert row["graph_compiled_error"] == "RuntimeError: operation not permitted when stream is capturing"


def refuse_the_compiled_forward(monkeypatch) -> None:
    """From here on (emulated) captures fail for the compiled forward's step only."""
    emulated = graphed.capture

    def refuses(step, device):
        if type(inspect.getclosurevars(step).nonlocals["forward"]).__name__ == "CompiledForward":
            raise RuntimeError("operation not permitted when stream is capturing\nmore")
        return emulated(step, device)

    monkeypatch.setattr(graphed, "capture", refuses)


def test_the_rule_graphs_the_families_that_declare_it():
    """``forward="auto"`` on a CUDA device: the graph for nets whose every layer family declares it (dense, GmP), the
    compile rule for the others (Householder); never on a CPU."""
    cuda = torch.device("cuda")
    gmp = SPEC.replace(param="gmp")
    for spec in (SPEC, gmp, LAYERNORM, SPEC.replace(norm="none")):
        # with fused epilogues where a normalization has one (study.nn.epilogue)
        kind = "fused-graph" if spec.norm != "none" else "graph"
        assert compiled.cuda_graph(spec) and compiled.choose(spec, cuda, 40_000, 250).kind == kind
        assert compiled.choose(spec, torch.device("cpu"), 40_000, 250).kind == "eager"
    assert not compiled.cuda_graph(RICH)  # Householder hidden layers
    assert compiled.choose(RICH, cuda, 40_000, 250).kind == "compiled"  # 5 x 160 layer-steps >= 400
    assert compiled.choose(RICH, cuda, 1_000, 250).kind == "eager"


def test_a_graph_off_cuda_is_a_one_line_error():
    """Asked for on a CPU, the graph is refused before anything is trained, naming the field and the device."""
    with pytest.raises(
        SpecError, match=r"train_architecture.forward = 'graph': needs a CUDA device \(the device is cpu\)"
    ):
        train_architecture(SPEC, DATA, seed=3, protocol=PROTOCOL, forward="graph")
    with pytest.raises(SpecError, match=r"forward = 'compiled-graph': needs a CUDA device"):
        train_architecture(SPEC, DATA, seed=3, protocol=PROTOCOL, forward="compiled-graph")
    stack = new_stack(build_network(SPEC, 3, runs=2), [0.1, 1.0], PROTOCOL)
    with pytest.raises(ValueError, match="needs a CUDA device"):
        GraphedStep().prepare(stack, DATA.train.x, DATA.train.y, torch.arange(50), 1.0, PROTOCOL)


def test_a_checkpoint_with_an_unknown_step_is_refused(tmp_path):
    """A checkpoint whose step kind is none of the known ones is discarded, saying why."""
    path = tmp_path / "c.pt"
    args = dict(spec=SPEC, data=DATA, seed=3, protocol=PROTOCOL)
    _stopped_after(1, checkpoint_path=path, forward="eager", **args)
    state = torch.load(path, weights_only=False)
    state["forward"] = "jit"
    ckpt.save_checkpoint(path, state)
    lines = []
    train_architecture(**args, checkpoint_path=path, report=lines.append)
    assert (
        len(lines) == 1
        and "forward: 'jit' is not one of eager, compiled, graph, compiled-graph, fused, fused-graph" in lines[0]
    )


# -- on a CUDA device ------------------------------------------------------------------------------------
@pytest.mark.cuda
@pytest.mark.parametrize(
    "spec, protocol",
    [(SPEC, PROTOCOL), (RICH, PROTOCOL), (LAYERNORM, PROTOCOL), (SPEC, ADAM)],
    ids=["dense-bn", "householder-gmp-skip", "gmp-ln-skip", "adam"],
)
def test_cuda_graph_trains_like_the_eager_step(cuda, spec, protocol, monkeypatch):
    """Real CUDA graphs: the same schedule decisions and selected run as the eager step, errors and parameters
    equal to round-off, one capture per stack."""
    captures = []
    original = GraphedStep.prepare

    def counted(self, *args, **kwargs):
        original(self, *args, **kwargs)
        captures.append(self.captures)

    monkeypatch.setattr(GraphedStep, "prepare", counted)
    data = on_device(DATA, cuda)
    eager = train_architecture(spec, data, seed=3, protocol=protocol, device=cuda, forward="eager")
    graph = train_architecture(spec, data, seed=3, protocol=protocol, device=cuda, forward="graph")
    same_runs(eager, graph, 1e-12)
    assert eager.best.lr_index == graph.best.lr_index
    for (name, a), (_, b) in zip(eager.network.stacked_tensors(), graph.network.stacked_tensors()):
        torch.testing.assert_close(a, b, rtol=1e-7, atol=1e-10, msg=name)  # as the CPU and the GPU agree
    live = {
        len(protocol.lrs) - sum(1 for r in eager.runs if r.epochs < e)
        for e in range(1, max(r.epochs for r in eager.runs) + 1)
    }
    assert captures[-1] == len(live)


@pytest.mark.cuda
def test_cuda_graph_of_the_compiled_forward_trains_like_the_compiled_step(cuda):
    """Real CUDA graphs of inductor's compiled forward: the same decisions and selected run as the compiled step
    launched kernel by kernel, errors equal to round-off."""
    args = dict(spec=SPEC, data=on_device(DATA, cuda), seed=3, protocol=PROTOCOL, device=cuda)
    plain = train_architecture(**args, forward="compiled")
    graph = train_architecture(**args, forward="compiled-graph")
    same_runs(plain, graph, 1e-12)
    assert plain.best.lr_index == graph.best.lr_index


@pytest.mark.cuda
def test_cuda_graph_prepare_leaves_the_state_unchanged(cuda):
    """The warm-up steps on the side stream are undone: after ``prepare`` (warm-up and capture, nothing replayed)
    the stack's state is the one before, bit for bit."""
    stack = new_stack(build_network(RICH, 3, runs=3, device=cuda), [1e-2, 1e-1, 1.0], ADAM)
    x, y = DATA.train.x.to(cuda), DATA.train.y.to(cuda)
    before = state_of(stack)
    graph = GraphedStep()
    graph.prepare(stack, x, y, torch.arange(50, device=cuda), 1.0, ADAM)
    torch.cuda.synchronize()
    for k, t in state_of(stack).items():
        assert torch.equal(before[k], t), k
    graph.step(torch.arange(50, 100, device=cuda))
    eager = new_stack(build_network(RICH, 3, runs=3, device=cuda), [1e-2, 1e-1, 1.0], ADAM)
    train_step(eager, x[50:100], y[50:100], 1.0, ADAM)
    for k, t in eager.tensors().items():
        torch.testing.assert_close(stack.tensors()[k], t, rtol=1e-12, atol=1e-14, msg=k)


@pytest.mark.cuda
def test_cuda_graph_with_several_initializations(cuda):
    """Each run's own c_out (a tensor the graph reads), remade with each smaller stack."""
    args = dict(spec=RICH, data=on_device(DATA, cuda), seed=3, protocol=PROTOCOL, init_seeds=[1, 2], device=cuda)
    eager = train_architecture(**args, forward="eager")
    graph = train_architecture(**args, forward="graph")
    same_runs(eager, graph, 1e-12)
    assert eager.best.lr_index == graph.best.lr_index


@pytest.mark.cuda
def test_cuda_graph_resumes_a_checkpoint(cuda, tmp_path):
    data = on_device(DATA, cuda)
    args = dict(spec=RICH, data=data, seed=3, protocol=PROTOCOL, device=cuda)
    whole = train_architecture(**args, forward="graph")
    path = tmp_path / "ckpt.pt"
    _stopped_after(3, checkpoint_path=path, forward="graph", **args)
    resumed = train_architecture(**args, checkpoint_path=path)
    same_runs(whole, resumed, 0.0)
    _same_networks(whole, resumed)


@pytest.mark.cuda
@pytest.mark.parametrize("spec", [SPEC, RICH], ids=["dense-bn", "householder-gmp-skip"])
def test_cuda_graph_epochs_never_wait_for_the_device(cuda, monkeypatch, spec):
    no_host_sync(monkeypatch, cuda, spec, "graph")


@pytest.mark.cuda
def test_cuda_bench_row_has_the_graph(cuda):
    import gc

    from archstudy.study.perf.bench import BenchCase, GraphedRunner, bench_case

    case = BenchCase("tiny", SPEC, 1_000, 3, 200)
    row = bench_case(case, runs=4, batch=50, repeats=1, device=cuda, compiled=False, plain=False)
    runner = GraphedRunner(SPEC, 4, 50, cuda)  # still replays correctly after its garbage is collected
    gc.collect()
    torch.cuda.empty_cache()
    before = {k: t.clone() for k, t in runner.graphed._stack.tensors().items()}
    runner(1)
    torch.cuda.synchronize()
    assert any(not torch.equal(before[k], t) for k, t in runner.graphed._stack.tensors().items())
    assert row["graph_s_per_epoch"] > 0 and row["graph_gemm_fraction"] > 0
    assert row["graph_speedup"] == pytest.approx(row["stacked_s_per_epoch"] / row["graph_s_per_epoch"])
    assert np.isnan(row["compiled_s_per_epoch"])

"""Checkpoints: a training killed mid-epoch (or at an epoch boundary) and resumed in a FRESH process
finishes with exactly the outcome of an uninterrupted run."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from archstudy.sampling import ArchSpec
from archstudy.study import Protocol, train_architecture
from archstudy.study.training import checkpoint as ckpt
import trainer_standins as standins
from trainer_standins import waveform_noise

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

SPEC = ArchSpec(depth=3, width=16, d_in=40, d_out=3, activation="relu", norm="batch")
# Adam (moments and step counts are state too), batchnorm (running statistics), and runs that finish
# at different epochs (20, 12 and 13: the stack shrinks, the selected-so-far network is kept).
PROTOCOL = Protocol(
    optimizer="adam",
    warmup_epochs=1,
    lrs=[1e-3, 3e-2, 1e6],
    batch_size=50,
    patience_first=3,
    patience=2,
    divisions=2,
    max_epochs=20,
)
SEED = 3

# Run in a fresh interpreter: train with a checkpoint written after every step and every epoch; with
# KILL > 0 the process dies (os._exit, no cleanup) right after the KILL-th checkpoint is on disk.
SCRIPT = r"""
import os, sys, torch
torch.set_num_threads(1)
sys.path.insert(0, {here!r})
import trainer_standins as standins
from trainer_standins import waveform_noise
from archstudy.sampling import ArchSpec
from archstudy.study import Protocol, train_architecture
from archstudy.study.training import checkpoint as ckpt
kill, path, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if kill > 0:
    save, count = ckpt.save_checkpoint, [0]
    def dying(p, state):
        save(p, state)
        count[0] += 1
        if count[0] == kill:
            os._exit(17)
    ckpt.save_checkpoint = dying
data = waveform_noise(400, 200, 200, seed=1)
spec = ArchSpec.from_dict({spec!r})
protocol = Protocol.from_dict({protocol!r})
o = train_architecture(spec, data, seed={seed}, protocol=protocol, checkpoint_path=path, checkpoint_every_s=0.0)
torch.save({{"runs": [vars(r) for r in o.runs], "best": vars(o.best), "lr_min": o.lr_min, "c_out": o.c_out,
             "net": dict(o.network.stacked_tensors())}}, out)
"""


def run_fresh(kill: int, path: Path, out: Path) -> int:
    script = SCRIPT.format(here=str(ROOT / "tests"), spec=SPEC.to_dict(), protocol=PROTOCOL.to_dict(), seed=SEED)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(kill), str(path), str(out)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 17), proc.stderr[-3000:]
    return proc.returncode


def without_wall(records):
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in records]


@pytest.fixture(scope="module")
def uninterrupted():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return train_architecture(SPEC, waveform_noise(400, 200, 200, seed=1), seed=SEED, protocol=PROTOCOL)
    finally:
        torch.set_num_threads(n)


# 8 steps per epoch, a checkpoint after each step and after each epoch's bookkeeping: 9 per epoch.
# 13 = after step 4 of epoch 2; 45 = after the bookkeeping of epoch 5; 112 = after step 4 of epoch 13,
# when one run has finished (at epoch 12).
@pytest.mark.parametrize("kill", [13, 45, 112])
def test_killed_and_resumed_in_a_fresh_process_gives_the_uninterrupted_outcome(kill, tmp_path, uninterrupted):
    path, out = tmp_path / "state.pt", tmp_path / "outcome.pt"
    assert run_fresh(kill, path, out) == 17 and path.is_file() and not out.exists()
    saved = torch.load(path, weights_only=False)
    assert saved["key"]["arch_id"] == SPEC.content_id
    if kill == 112:
        assert 0 < len(saved["live"]) < 3, "the stack should have shrunk before this kill point"
    assert run_fresh(0, path, out) == 0
    got = torch.load(out, weights_only=False)
    assert without_wall(got["runs"]) == without_wall([vars(r) for r in uninterrupted.runs])
    assert {k: v for k, v in got["best"].items() if k != "wall_s"} == {
        k: v for k, v in vars(uninterrupted.best).items() if k != "wall_s"
    }
    assert got["lr_min"] == uninterrupted.lr_min and got["c_out"] == uninterrupted.c_out
    for name, t in uninterrupted.network.stacked_tensors():
        assert torch.equal(got["net"][name], t), name


def test_a_checkpoint_of_another_training_is_discarded(tmp_path):
    state = {"key": ckpt.checkpoint_key("abc", 1, PROTOCOL.to_dict(), "d"), "x": torch.zeros(2)}
    ckpt.save_checkpoint(tmp_path / "c.pt", state)
    loaded, problem = ckpt.load_checkpoint(
        tmp_path / "c.pt", ckpt.checkpoint_key("abc", 1, PROTOCOL.to_dict(), "d"), torch.device("cpu")
    )
    assert loaded["x"].shape == (2,) and problem == ""
    assert ckpt.load_checkpoint(tmp_path / "none.pt", state["key"], torch.device("cpu")) == (None, "")
    others = [
        ckpt.checkpoint_key(a, s, PROTOCOL.to_dict(), d)
        for a, s, d in (("abd", 1, "d"), ("abc", 2, "d"), ("abc", 1, "e"))
    ]
    others.append(ckpt.checkpoint_key("abc", 1, PROTOCOL.replace(max_epochs=3).to_dict(), "d"))
    for key in others:
        ckpt.save_checkpoint(tmp_path / "c.pt", state)
        loaded, problem = ckpt.load_checkpoint(tmp_path / "c.pt", key, torch.device("cpu"))
        assert loaded is None and problem.startswith("a checkpoint of another training")
        assert not (tmp_path / "c.pt").exists()
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    loaded, problem = ckpt.load_checkpoint(tmp_path / "junk.pt", others[0], torch.device("cpu"))
    assert loaded is None and problem.startswith("not a valid checkpoint (") and "\n" not in problem
    assert list(tmp_path.iterdir()) == []  # discarded, and no temporary files left


@pytest.mark.parametrize("damage", ["net shape", "opt name", "live", "candidate"])
def test_a_checkpoint_of_this_key_whose_contents_do_not_fit_is_discarded_and_training_starts_afresh(
    damage, tmp_path, uninterrupted, one_thread
):
    """A data-only file with the right key but tensors or bookkeeping this architecture does not make (a bug
    or a hand-made file) is reported and discarded, never trained from."""
    path = tmp_path / "c.pt"
    data = waveform_noise(400, 200, 200, seed=1)
    save, saved = ckpt.save_checkpoint, []

    def first(p, state):  # keep the first checkpoint written (after step 1), then stop saving
        if not saved:
            saved.append(state)
            save(p, state)

    ckpt.save_checkpoint = first
    try:
        train_architecture(SPEC, data, seed=SEED, protocol=PROTOCOL, checkpoint_path=path, checkpoint_every_s=0.0)
    finally:
        ckpt.save_checkpoint = save
    state = torch.load(path, weights_only=True)
    if damage == "net shape":
        name = next(iter(state["net"]))
        state["net"][name] = state["net"][name][:1]  # [1, ...] would broadcast into [R, ...] unnoticed
    elif damage == "opt name":
        state["opt"]["unknown"] = torch.zeros(3)
    elif damage == "live":
        state["live"] = [0, 7]
    else:
        state["candidate"] = {"index": 0, "error": 0.5, "net": {}}
    ckpt.save_checkpoint(path, state)  # as the trainer saves it (its digest fits): only the content check refuses it
    lines = []
    got = train_architecture(
        SPEC, data, seed=SEED, protocol=PROTOCOL, checkpoint_path=path, checkpoint_every_s=1e9, report=lines.append
    )
    assert len(lines) == 1 and "its contents do not fit this training (" in lines[0], lines
    assert without_wall([vars(r) for r in got.runs]) == without_wall([vars(r) for r in uninterrupted.runs])


# Layouts older versions wrote. A checkpoint is transient (it lives while its architecture trains), so only the
# current layout is read: any other is discarded, as a damaged one is, and the architecture trained afresh.
OLDER_LAYOUTS = ("one initialization as scalars, no seeds", "no curves or loss sums", "no forward choice")


def _as_older(state: dict, layout: str) -> None:
    """``state`` as an older version wrote it."""
    if layout == "one initialization as scalars, no seeds":  # before several initializations
        state["lr_min"], state["c_out"] = state["lr_min"][0], state["c_out"][0]
        del state["seeds"]
    elif layout == "no curves or loss sums":  # before the training curves
        del state["curves"], state["loss_sum"]
    else:  # before the forward's choice was kept
        del state["forward"]


@pytest.mark.parametrize("layout", OLDER_LAYOUTS)
def test_a_checkpoint_in_an_older_layout_is_reported_discarded_and_training_starts_afresh(
    layout, tmp_path, monkeypatch, uninterrupted, one_thread
):
    path = tmp_path / "c.pt"
    data = waveform_noise(400, 200, 200, seed=1)
    standins.interrupted(monkeypatch, path, 1, spec=SPEC, data=data, seed=SEED, protocol=PROTOCOL)
    state = torch.load(path, weights_only=True)
    _as_older(state, layout)
    ckpt.save_checkpoint(path, state)
    lines = []
    got = train_architecture(
        SPEC, data, seed=SEED, protocol=PROTOCOL, checkpoint_path=path, checkpoint_every_s=1e9, report=lines.append
    )
    assert len(lines) == 1 and lines[0].startswith(f"checkpoint {path}: its contents do not fit this training ("), lines
    assert without_wall([vars(r) for r in got.runs]) == without_wall([vars(r) for r in uninterrupted.runs])
    assert len(got.curve_rows()) == len(uninterrupted.curve_rows())


class Planted:
    """Unpickling this runs code: it creates the marker file (what a planted checkpoint could do instead)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _plant(path: Path, marker: Path, form: str) -> None:
    key = ckpt.checkpoint_key(SPEC.content_id, SEED, PROTOCOL.to_dict(), "d")
    if form == "torch.save":  # the zip format, with the right key: only the loader itself can refuse it
        torch.save({"key": key, "lr_min": Planted(marker)}, path)
    else:  # a bare pickle, as torch.load's legacy format reads it
        import pickle

        path.write_bytes(pickle.dumps({"key": key, "lr_min": Planted(marker)}, protocol=2))


@pytest.mark.parametrize("form", ["torch.save", "pickle"])
def test_a_planted_pickle_is_never_executed_but_reported_and_discarded(form, tmp_path):
    path, marker = tmp_path / "c.pt", tmp_path / "marker"
    _plant(path, marker, form)
    key = ckpt.checkpoint_key(SPEC.content_id, SEED, PROTOCOL.to_dict(), "d")
    state, problem = ckpt.load_checkpoint(path, key, torch.device("cpu"))
    assert state is None and not marker.exists()
    assert problem.startswith("not a valid checkpoint (") and "\n" not in problem, problem
    assert not path.exists()  # discarded: the unit starts afresh


def test_training_over_a_planted_checkpoint_reports_it_and_gives_the_uninterrupted_outcome(
    tmp_path, uninterrupted, one_thread
):
    path, marker = tmp_path / "c.pt", tmp_path / "marker"
    _plant(path, marker, "torch.save")
    lines = []
    got = train_architecture(
        SPEC,
        waveform_noise(400, 200, 200, seed=1),
        seed=SEED,
        protocol=PROTOCOL,
        checkpoint_path=path,
        checkpoint_every_s=1e9,
        report=lines.append,
    )
    assert not marker.exists()
    assert (
        len(lines) == 1
        and lines[0].startswith(f"checkpoint {path}: not a valid checkpoint (")
        and lines[0].endswith("discarded; training starts afresh")
    ), lines
    assert without_wall([vars(r) for r in got.runs]) == without_wall([vars(r) for r in uninterrupted.runs])
    # what it saved instead is data only: it loads with weights_only=True
    assert torch.load(path, weights_only=True)["key"]["arch_id"] == SPEC.content_id


# -- a well-formed but tampered checkpoint is refused by its content digest ------------------------------------------
def _tamper(state: dict, how: str) -> None:
    """Change a loaded checkpoint as a hand (or a bug) would: every tensor still of its dtype and shape."""
    if how == "weights x1.5":
        state["net"] = {k: t * 1.5 if t.is_floating_point() else t for k, t in state["net"].items()}
    elif how == "epoch 10**6":
        state["epoch"] = 10**6
    elif how == "NaN weights":
        name = next(k for k, t in state["net"].items() if t.is_floating_point())
        state["net"][name] = torch.full_like(state["net"][name], float("nan"))
    else:  # saved without its digest (torch.save of the state as an older archstudy wrote it)
        del state[ckpt.DIGEST]


@pytest.mark.parametrize("how", ["weights x1.5", "epoch 10**6", "NaN weights", "no digest"])
def test_a_well_formed_but_tampered_checkpoint_is_reported_discarded_and_training_starts_afresh(
    how, tmp_path, monkeypatch, uninterrupted, one_thread
):
    """Before, the changed state was resumed without a word and changed the results (weights x1.5, NaN), or ended
    the training at once (epoch 10**6)."""
    path = tmp_path / "c.pt"
    data = waveform_noise(400, 200, 200, seed=1)
    standins.interrupted(monkeypatch, path, 3, spec=SPEC, data=data, seed=SEED, protocol=PROTOCOL)
    state = torch.load(path, weights_only=True)
    _tamper(state, how)
    torch.save(state, path)  # well-formed: data only, the right key, every tensor of its dtype and shape
    lines = []
    got = train_architecture(
        SPEC, data, seed=SEED, protocol=PROTOCOL, checkpoint_path=path, checkpoint_every_s=1e9, report=lines.append
    )
    why = "no content digest" if how == "no digest" else "its content does not match the digest written with it"
    assert len(lines) == 1 and lines[0].startswith(f"checkpoint {path}: ") and why in lines[0], lines
    assert lines[0].endswith("; discarded; training starts afresh") and "\n" not in lines[0]
    assert without_wall([vars(r) for r in got.runs]) == without_wall([vars(r) for r in uninterrupted.runs])
    assert len(got.curve_rows()) == len(uninterrupted.curve_rows())


def test_the_content_digest_is_that_of_the_state_saved_on_any_device_and_changes_with_any_value(tmp_path):
    state = {
        "key": {"arch_id": "a", "seed": 1},
        "net": {"w": torch.arange(6.0).reshape(2, 3), "flag": torch.tensor([True, False])},
        "records": {0: {"lr": 0.1, "epochs": 3, "best": None}},
        "wall": [0.5, float("nan")],
    }
    ckpt.save_checkpoint(tmp_path / "c.pt", state)
    saved = torch.load(tmp_path / "c.pt", weights_only=True)
    assert saved[ckpt.DIGEST] == ckpt.content_digest(state) == ckpt.content_digest(saved)
    assert ckpt.DIGEST not in state  # the caller's state is not changed
    assert ckpt.load_checkpoint(tmp_path / "c.pt", state["key"], torch.device("cpu"))[1] == ""
    for change in (
        lambda s: s["net"]["w"].__setitem__((0, 0), 1e-30),
        lambda s: s["net"].__setitem__("w", s["net"]["w"].double()),
        lambda s: s["net"].__setitem__("w", s["net"]["w"].reshape(3, 2)),
        lambda s: s["records"][0].__setitem__("epochs", 4),
        lambda s: s["wall"].append(0.0),
        lambda s: s["key"].__setitem__("seed", True),
    ):
        other = torch.load(tmp_path / "c.pt", weights_only=True)
        change(other)
        assert ckpt.content_digest(other) != saved[ckpt.DIGEST]

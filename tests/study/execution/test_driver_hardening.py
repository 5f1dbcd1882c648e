"""The driver against a user's mistakes and an attacker's files, on a real (tiny) study: one study holds one
science config (an edited study.yaml is refused, rows of another config never count); a planted checkpoint is
never executed; two drivers racing for a new directory cannot mix two studies."""

import errno
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import ray
import yaml

from process_state import session
from study_commands import VOLATILE, cli, files, new_run, tiny_study

from archstudy.sampling import UserError
from archstudy.study.cli import main
from archstudy.study.execution.store import Store

KEYS = tiny_study(architectures=2)

# Credentials for the local S3 server (any pass there). Every process that opens an s3:// study needs them: the
# driver and every Ray worker (a worker reads and writes checkpoints), so they are set before Ray starts (the
# module's Ray: tests/conftest.py's local_ray).
LOCAL_RAY_ENV = {
    "AWS_ACCESS_KEY_ID": "archstudy-test",
    "AWS_SECRET_ACCESS_KEY": "archstudy-test",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def values(location) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables of a study without the columns that differ between two computations, sorted."""
    store = Store(location)
    arch, runs = store.read_table("architectures"), store.read_table("runs")
    arch = arch[[c for c in arch.columns if c not in VOLATILE]].sort_values(["index", "arch_id"])
    runs = runs[[c for c in runs.columns if c not in VOLATILE]].sort_values(["index", "arch_id", "lr_index"])
    return arch.reset_index(drop=True), runs.reset_index(drop=True)


@pytest.fixture(scope="module")
def reference(local_ray, tmp_path_factory):
    from archstudy.study.execution.driver import run_study

    out = tmp_path_factory.mktemp("reference") / "study"
    assert run_study(KEYS, out, progress=None).complete
    return out


def copy_of(reference, tmp_path) -> Path:
    study = tmp_path / "s"
    shutil.copytree(reference, study)
    return study


def edit_yaml(study: Path, **changes) -> None:
    config = yaml.safe_load((study / "study.yaml").read_text())
    for key, value in changes.items():
        if isinstance(value, dict):
            config[key] = {**config[key], **value}
        else:
            config[key] = value
    (study / "study.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def one_line_error(argv, capsys, command="resume") -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and lines[0].startswith(f"archstudy {command}: error: "), err
    return lines[0]


# -- one study, one science config ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "edit, differs",
    [
        ({"seed": 12}, "seed (11 in the results, 12 here)"),  # other architectures: the old files are in no plan
        ({"protocol": {"max_epochs": 3}}, "protocol.max_epochs (2 in the results, 3 here)"),  # the same names
    ],
)
def test_a_study_yaml_edited_after_results_were_written_is_refused_and_nothing_changes(
    reference, tmp_path, capsys, edit, differs
):
    study = copy_of(reference, tmp_path)
    edit_yaml(study, **edit)
    before = files(study)
    line = one_line_error(["resume", str(study)], capsys)
    assert "2 result file(s) were computed under another science config than this one" in line and differs in line
    assert files(study) == before
    # status: the rows are reported, never counted as finished
    assert main(["status", str(study), "--json"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["finished"] == 0 and state["total"] == 2
    assert len(state["extra"]) + len(state["other_config"]) == 2
    assert main(["status", str(study)]) == 0
    text = capsys.readouterr().out
    assert ("not in plan" in text or "other config" in text) and differs in text
    assert files(study) == before


def test_force_config_never_mixes_a_new_config_into_finished_rows(reference, tmp_path, capsys):
    study = copy_of(reference, tmp_path)
    before = files(study)
    cfg = tmp_path / "keys.yaml"
    cfg.write_text(yaml.safe_dump({**KEYS, "seed": 12}))
    line = one_line_error(["run", "--config", str(cfg), "--out", str(study), "--force-config"], capsys, "run")
    assert "seed (11 in the results, 12 here)" in line
    assert files(study) == before


def test_result_files_of_this_config_that_no_unit_of_its_plan_names_are_refused_too(reference, tmp_path, capsys):
    """(What a sampler of another archstudy version could leave: the same science keys, other architectures.)"""
    study = copy_of(reference, tmp_path)
    name = Store(study).names("architectures", ".parquet")[0]
    stray = name[:7] + "0123456789abcdef"
    for kind in ("architectures", "runs"):
        (study / kind / f"{name}.parquet").rename(study / kind / f"{stray}.parquet")
    before = files(study)
    line = one_line_error(["resume", str(study)], capsys)
    assert "1 result file(s) are no architecture of this config's plan" in line, line
    assert files(study) == before


# -- no code from study files ------------------------------------------------------------------------------
class Planted:
    """Unpickling it creates the marker file (``open(marker, "w")``): what a planted checkpoint could do instead.
    The pickle names only ``builtins.open``, so any process could unpickle it."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_planted_checkpoint_is_never_executed_on_resume_and_the_study_ends_as_an_uninterrupted_one(
    reference, tmp_path, capsys
):
    import torch

    study = copy_of(reference, tmp_path)
    name = Store(study).names("architectures", ".parquet")[1]
    for kind in ("architectures", "runs"):  # unit 1 is not finished: resume runs it, from its "checkpoint"
        (study / kind / f"{name}.parquet").unlink()
    marker = tmp_path / "marker"
    (study / "checkpoints").mkdir(exist_ok=True)
    torch.save({"key": "anything", "state": Planted(marker)}, study / "checkpoints" / f"{name}.pt")
    assert main(["resume", str(study)]) == 0
    err = capsys.readouterr().err
    assert not marker.exists()
    assert re.search(
        rf"^archstudy: {name}: checkpoint \S+{name}\.pt: not a valid checkpoint \(UnpicklingError: "
        r".*\); discarded; training starts afresh$",
        err,
        re.M,
    ), err
    for mine, ref in zip(values(study), values(reference)):
        pd.testing.assert_frame_equal(mine, ref, check_exact=True)
    assert Store(study).names("checkpoints", ".pt") == []


# -- two drivers racing for a new directory ------------------------------------------------------------------
def test_a_driver_that_finds_a_study_created_while_it_started_refuses_instead_of_overwriting_it(
    local_ray, tmp_path, monkeypatch
):
    """B checks that the directory is new, then pauses (as in a slow Ray start) before it takes the lock; A
    creates the study with another seed and finishes. B, continued, must not rewrite study.yaml or mix seeds."""
    from archstudy.study.execution import driver

    study = tmp_path / "new"
    paused, go = threading.Event(), threading.Event()
    capacity = driver._check_capacity

    def slow_start(*args, **kwargs):  # between B's new-directory check and its lock
        if threading.current_thread().name == "driver-B":
            paused.set()
            assert go.wait(120)
        return capacity(*args, **kwargs)

    monkeypatch.setattr(driver, "_check_capacity", slow_start)
    box = {}

    def driver_b():
        try:
            box["result"] = driver.run_study({**KEYS, "architectures": 1, "seed": 6}, study, progress=None)
        except UserError as e:
            box["error"] = e

    b = threading.Thread(target=driver_b, name="driver-B")
    b.start()
    assert paused.wait(120)
    a = driver.run_study({**KEYS, "architectures": 1, "seed": 5}, study, progress=None)
    assert a.complete
    before = files(study)
    go.set()
    b.join(120)
    assert "result" not in box and str(box["error"]) == (
        f"{study}: another driver created a study here while this one started (seed 5 in its study.yaml); "
        "nothing was changed: run the command again to continue that study, or choose another directory"
    )
    assert files(study) == before and Store(study).read_config().seed == 5


def test_a_driver_that_finds_another_one_starting_in_a_new_directory_says_so_not_that_it_is_no_study(tmp_path):
    """A started here, holds the lock and writes its first files before study.yaml: B is refused with A's lock
    line, not with "exists and is not a study"; once A is gone (its lock left behind), the directory is what it
    is, not a study, and nothing in it changed."""
    from archstudy.study.execution import driver

    study = tmp_path / "new"
    study.mkdir()
    (study / ".study.yaml.tmp").write_text("being written")  # A's write of study.yaml, under way
    with Store(study).driver_lock():
        with pytest.raises(UserError, match="another archstudy driver is running on this study"):
            driver.run_study({**KEYS, "architectures": 1}, study, progress=None)
    before = files(study)
    with pytest.raises(UserError, match="exists and is not a study"):
        driver.run_study({**KEYS, "architectures": 1}, study, progress=None)
    assert files(study) == before


# -- a large study says how far planning is before its first unit --------------------------------------------
def test_planning_says_how_far_it_is_and_plans_the_same_units(monkeypatch):
    from archstudy.study.execution import state
    from archstudy.study.experiment.config import StudyConfig
    from archstudy.study.execution.unit import work_units

    config = StudyConfig(**{**KEYS, "architectures": 6, "siblings": ["param"]}).replace(d_in=40, d_out=3)
    lines = []
    monkeypatch.setattr(state, "PLAN_PROGRESS_S", 0.0)
    units = state.work_units_saying(config, lines.append)
    assert [u.to_dict() for u in units] == [u.to_dict() for u in work_units(config)]
    assert [line.split(",")[0] for line in lines] == [f"planning: {i}/6 architectures sampled" for i in range(1, 6)]
    assert all(re.fullmatch(r"planning: \d/6 architectures sampled, about \d+ s left", line) for line in lines)
    monkeypatch.setattr(state, "PLAN_PROGRESS_S", 60.0)
    lines.clear()
    state.work_units_saying(config, lines.append)
    assert lines == []  # a plan of seconds says nothing


# -- an interrupt while the embedded Ray starts --------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    "signum, moment",
    [
        (signal.SIGINT, "raylet/raylet"),  # the raylet has just been started (its agents follow)
        (signal.SIGTERM, "ray::DashboardAgent"),  # the raylet's agents are up
    ],
)
def test_an_interrupt_while_ray_starts_shuts_it_all_down_and_says_interrupted(signum, moment, tmp_path):
    """SIGINT (Ctrl-C) or SIGTERM (`kill`, `ray job stop`) at a moment of the embedded Ray's start: the driver
    says "interrupted" (exit 130), writes nothing, and leaves no Ray process behind (its session is empty). Each
    signal once and each moment once: SIGINT and the CLI's SIGTERM both arrive as KeyboardInterrupt, and ``ray.init``
    would put its own SIGTERM handler (which exits at once) in place before it starts any process, so a SIGTERM at
    the later moment finds the same handler as one at the earlier moment."""
    out = tmp_path / "s"
    proc = cli(new_run(out, architectures=1), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not any(moment in cmd for _, cmd in session(proc.pid)):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"Ray did not start: {proc.communicate()[1].decode()[-2000:]}")
            time.sleep(0.01)
        os.kill(proc.pid, signum)
        _, err = proc.communicate(timeout=120)
        err = err.decode()
        deadline = time.monotonic() + 30
        while session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = session(proc.pid)
    finally:
        for pid, _ in session(proc.pid):  # only this test's driver's session: never anyone else's processes
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert left == [], [cmd[:80] for _, cmd in left]
    assert proc.returncode == 130 and err.rstrip().splitlines()[-1] == "archstudy run: interrupted", err[-3000:]
    assert "Traceback" not in err and not out.exists()


# -- object storage for real: a study on an S3 server ---------------------------------------------------------


def test_a_study_on_an_s3_server_killed_and_resumed_reads_back_as_the_same_study_on_a_local_disk(
    local_ray, reference, s3_endpoint, tmp_path, capsys
):
    """Through pyarrow's S3 client (the endpoint in the URI): the driver is SIGKILLed after its first commit,
    `archstudy resume` finishes the study, `status` and `report` read it back, and its rows are the local
    study's, value for value."""
    import pyarrow.fs as pafs

    query = f"endpoint_override={s3_endpoint}&scheme=http"
    pafs.FileSystem.from_uri(f"s3://archstudy-test?{query}&allow_bucket_creation=true")[0].create_dir("archstudy-test")
    uri = f"s3://archstudy-test/studies/wave?{query}"
    cfg = tmp_path / "keys.yaml"
    cfg.write_text(yaml.safe_dump(KEYS))
    fs, root = pafs.FileSystem.from_uri(uri)
    committed = lambda: [
        i
        for i in fs.get_file_info(pafs.FileSelector(f"{root}/architectures", allow_not_found=True))
        if i.base_name.endswith(".parquet")
    ]  # noqa: E731
    # A driver connected to this module's Ray, one architecture at a time: killed after its first commit.
    argv = ["run", "--config", str(cfg), "--out", uri, "--address", ray.get_runtime_context().gcs_address]
    driver = cli([*argv, "--max-in-flight", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300
        while not committed():
            assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()[1].decode()[-3000:]
            time.sleep(0.05)
    finally:
        driver.kill()
        driver.wait()
    assert len(committed()) == 1
    assert main(["resume", uri]) == 0
    err = capsys.readouterr().err
    assert f"{uri}: 1 of 2 architectures to run (1 finished earlier)" in err and "2/2 architectures finished" in err
    assert main(["status", uri, "--json"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert (state["finished"], state["remaining"], state["extra"], state["other_config"]) == (2, 0, [], {})
    report = tmp_path / "report.html"
    assert main(["report", uri, "--out", str(report)]) == 0
    assert "all 2 planned architectures are finished" in report.read_text(encoding="utf-8")
    for mine, ref in zip(values(uri), values(reference)):
        pd.testing.assert_frame_equal(mine, ref, check_exact=True)
    assert Store(uri).temp_files() == [] and Store(uri).names("checkpoints", ".pt") == []


# -- a study directory that stops accepting writes ---------------------------------------------------------------------
def _injected_folder_failure(monkeypatch, study: Path, cause: str) -> None:
    """At the second commit (the first architecture committed), the store's write path fails: ENOSPC or EACCES
    injected where the store makes sure of the folder it writes in (root, whom chmod does not stop, runs these
    tests), or the study directory removed for real."""
    real = Store._local_folder
    commits = []

    def folder(self, path):
        if path.endswith("/architectures"):
            commits.append(path)
            if len(commits) == 2:
                if cause == "disk full":
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
                if cause == "read-only":
                    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
                shutil.rmtree(study)
        return real(self, path)

    monkeypatch.setattr(Store, "_local_folder", folder)


@pytest.mark.parametrize(
    "cause, why",
    [
        ("disk full", "No space left on device"),
        ("read-only", "Permission denied"),
        ("vanished", "the study directory {study} is gone"),
    ],
)
def test_a_study_directory_that_stops_accepting_writes_stops_the_driver_in_one_line(
    local_ray, reference, tmp_path, monkeypatch, cause, why
):
    """It was a traceback (PermissionError ... .parquet.tmp-... from store.write_bytes). Now: one line saying where,
    why and that `archstudy resume` continues; the engine's jobs cancelled; the committed architecture and
    everything else stored intact (and a vanished directory never made again); the resume ends with the
    uninterrupted study's values."""
    from archstudy.study.execution.driver import StudyStopped, run_study
    from archstudy.study.execution.state import survey

    study = tmp_path / "s"
    _injected_folder_failure(monkeypatch, study, cause)
    with pytest.raises(StudyStopped) as e:
        run_study({**KEYS, "max_retries": 0}, study, progress=None, max_in_flight=1)
    assert re.fullmatch(
        rf"{re.escape(str(study))}: the study stopped: cannot write (architectures/\d{{6}}-[0-9a-f]{{16}}\.parquet|\.) "
        rf"\({re.escape(why.format(study=study))}\); every architecture committed before is kept and nothing stored "
        rf"was damaged: `archstudy resume {re.escape(str(study))}` continues it once the location accepts writes "
        r"again",
        str(e.value),
    ), str(e.value)
    deadline = time.monotonic() + 60  # the job in flight was cancelled: its CPU is free again
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2
    monkeypatch.undo()
    if cause == "vanished":
        assert not study.exists()
        return
    state = survey(Store(study))
    assert (len(state.finished), state.corrupt, Store(study).temp_files()) == (1, {}, [])
    assert json.loads((study / "driver.json").read_text())["stopped"] == "storage"
    if cause == "disk full":
        assert main(["resume", str(study)]) == 0
        for mine, ref in zip(values(study), values(reference)):
            pd.testing.assert_frame_equal(mine, ref, check_exact=True)


# -- a symbolic link inside a study is never written through -----------------------------------------------------------
@pytest.mark.parametrize("entry", ["checkpoints", "runs", ".lock"])
def test_a_link_inside_an_untrusted_study_is_refused_before_anything_is_written(reference, tmp_path, capsys, entry):
    """A planted `checkpoints -> /elsewhere` made every worker write its checkpoints there."""
    study = copy_of(reference, tmp_path)
    name = Store(study).names("architectures", ".parquet")[1]
    for kind in ("architectures", "runs"):  # unit 1 is not finished: a resume would run it
        (study / kind / f"{name}.parquet").unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = study / entry
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    target.symlink_to(elsewhere / entry)
    before = files(study)
    line = one_line_error(["resume", str(study)], capsys)
    assert line.endswith(
        f"{study}: {entry} is a symbolic link (to {elsewhere / entry}); a study never writes through "
        "a link, so nothing was run: replace it with a real directory (or file)"
    )
    assert files(study) == before and list(elsewhere.iterdir()) == []


# -- a worker's exception keeps its reason -----------------------------------------------------------------------------
def _raises_a_spec_error(payload, attempt):
    """A unit whose worker raises an exception Ray could not rebuild on the driver (its constructor takes four
    arguments): what a dataset too small to split did before its splits were checked up front."""
    from archstudy.sampling import SpecError

    raise SpecError("data", "val.x", (0, 2), "must have shape [N >= 1, d_in = 2]")


ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def test_an_exception_a_worker_raises_reaches_the_progress_line_and_status_with_its_own_reason(
    local_ray, tmp_path, monkeypatch, capsys
):
    """It arrived as "UnserializableException: Failed to deserialize exception", the real reason only at the end
    of failed/*.json. The memory estimate is printed with the plan."""
    from archstudy.study.execution import driver

    monkeypatch.setattr(driver, "execute_unit", _raises_a_spec_error)
    study, log = tmp_path / "s", io.StringIO()
    result = driver.run_study({**KEYS, "architectures": 1, "max_retries": 1}, study, progress=log)
    reason = "SpecError: data.val.x = (0, 2): must have shape [N >= 1, d_in = 2]"
    assert list(result.failed.values()) == [reason]
    name = next(iter(result.failed))
    text = log.getvalue()
    assert f"archstudy: {name}: attempt 1 failed: {reason}; trying again\n" in text
    assert f"archstudy: {name} failed after 2 attempt(s): {reason}\n" in text
    assert re.search(
        r"^archstudy: memory: the most an architecture needs is about \d[\d.]* (kB|MB) \([\d,]+ parameters "
        r"x 3 runs x 4 copies x 8 bytes = ",
        text,
        re.M,
    ), text
    record = json.loads((study / "failed" / f"{name}.json").read_text())
    assert record["reason"] == reason and "_raises_a_spec_error" in record["detail"]
    assert main(["status", str(study)]) == 0
    assert f"  {name}  {reason}  (2 attempts)" in capsys.readouterr().out


# -- one driver per study on S3: a lock object created only if absent --------------------------------------------------
def _bucket(endpoint: str, name: str) -> str:
    import pyarrow.fs as pafs

    query = f"endpoint_override={endpoint}&scheme=http"
    pafs.FileSystem.from_uri(f"s3://{name}?{query}&allow_bucket_creation=true")[0].create_dir(name)
    return query


def test_of_many_drivers_taking_an_s3_lock_at_once_exactly_one_holds_it_and_a_gone_owner_is_taken_over(
    local_ray, s3_endpoint
):
    """The conditional create against the S3 server: six takers released together by a barrier, one wins; the
    lock is deleted on the way out; a lock left by a process of this host that has ended is taken over."""
    from archstudy.study.execution.object_lock import ObjectLock

    uri = f"s3://archstudy-lock/race?{_bucket(s3_endpoint, 'archstudy-lock')}"
    barrier, outcomes, refused = threading.Barrier(6), [], threading.Event()

    def take():
        store = Store(uri)
        barrier.wait()
        try:
            with store.driver_lock():
                outcomes.append("held")
                # held until the five others have tried (a slow taker on a loaded machine would otherwise come
                # after the release and hold it in turn, which is right, not a second holder at once)
                refused.wait(60)
        except UserError as e:
            outcomes.append(str(e))
            if sum(o != "held" for o in outcomes) == 5:
                refused.set()

    threads = [threading.Thread(target=take) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert outcomes.count("held") == 1, outcomes
    assert all(
        o == "held" or f"{uri}: another archstudy driver is running on this study (pid {os.getpid()} on " in o
        for o in outcomes
    ), outcomes
    assert not Store(uri).exists(".lock")  # released
    # A driver killed by SIGKILL leaves its lock: its process is gone, so the next driver here takes over at once.
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    store = Store(uri)
    dead = ObjectLock(store.fs, store.root, uri)
    dead.owner.update(pid=int(gone.stdout), pid_start="1")
    dead.client.put_object(Bucket=dead.bucket, Key=dead.key, Body=dead._body())
    with store.driver_lock() as taken:
        assert (
            taken == f"took over the lock of pid {int(gone.stdout)} on {socket.gethostname()} (its process "
            f"{int(gone.stdout)} on this host has ended)"
        )
    assert (
        ObjectLock.owner_gone({"host": "elsewhere", "pid": 1, "renewed_unix": time.time() - 61})
        == "its lease was last renewed 61 s ago"
    )
    assert ObjectLock.owner_gone({"host": "elsewhere", "pid": 1, "renewed_unix": time.time() - 5}) is None


def test_a_starting_drivers_write_probe_does_not_make_a_new_s3_location_look_taken(s3_endpoint):
    """The race the two-driver test below saw on a loaded machine: the second driver listed the new study while
    the first one's write probe (``Store.write_problem``) existed, and said "exists and is not a study"."""
    from archstudy.study.execution.driver import _check_new_location
    from archstudy.study.execution.store import PROBE

    uri = f"s3://archstudy-probe/studies/new?{_bucket(s3_endpoint, 'archstudy-probe')}"
    store = Store(uri)
    with store.fs.open_output_stream(store.path(f"{PROBE}123-abcdef12")) as f:
        f.write(b"")
    assert store.listing() == []
    _check_new_location(store)  # a new study may start here
    with store.fs.open_output_stream(store.path("notes.txt")) as f:  # anything else is the user's
        f.write(b"x")
    assert store.listing() == ["notes.txt"]
    with pytest.raises(UserError, match="exists and is not a study"):
        _check_new_location(store)


def test_two_drivers_started_together_on_one_s3_study_one_runs_it_and_the_other_is_refused(
    local_ray, reference, s3_endpoint, tmp_path
):
    """Both start at once on a new study (connected to this module's Ray, one architecture at a time, so the one
    that takes the lock holds it while the other arrives): exactly one runs the study to the end, the other is
    refused in one line; the study holds the uninterrupted study's values and no lock."""
    uri = f"s3://archstudy-race/studies/wave?{_bucket(s3_endpoint, 'archstudy-race')}"
    cfg = tmp_path / "keys.yaml"
    cfg.write_text(yaml.safe_dump(KEYS))
    argv = ["run", "--config", str(cfg), "--out", uri, "--address", ray.get_runtime_context().gcs_address]
    argv += ["--max-in-flight", "1"]
    drivers = [cli(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    ends = []
    try:
        for d in drivers:
            _, err = d.communicate(timeout=300)
            ends.append((d.returncode, err))
    finally:
        for d in drivers:
            if d.poll() is None:
                d.kill()
    codes = sorted(code for code, _ in ends)
    assert codes == [0, 2], [err[-2000:] for _, err in ends]
    refused = next(err for code, err in ends if code == 2)
    assert (
        refused.strip()
        .splitlines()[-1]
        .startswith(f"archstudy run: error: {uri}: another archstudy driver is running on this study (pid ")
    ), refused[-2000:]
    assert "Traceback" not in refused
    for mine, ref in zip(values(uri), values(reference)):
        pd.testing.assert_frame_equal(mine, ref, check_exact=True)
    assert not Store(uri).exists(".lock") and Store(uri).temp_files() == []


# -- every entry the driver writes or deletes is link-checked; every table's file of a finished unit -------------------
def test_a_planted_progress_link_is_refused_and_nothing_there_is_written_or_deleted(reference, tmp_path, capsys):
    """`progress` was not among the link-checked names: a resume deleted the `NNNNNN-<id>.json` files there."""
    study = copy_of(reference, tmp_path)
    name = Store(study).names("architectures", ".parquet")[1]
    for kind in ("architectures", "runs", "curves"):  # unit 1 is not finished: a resume would run it
        (study / kind / f"{name}.parquet").unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    theirs = {f"{name}.json": b'{"mine": 1}\n', "000000-0123456789abcdef.json": b"{}\n", "keep.txt": b"x"}
    for file, data in theirs.items():
        (elsewhere / file).write_bytes(data)
    if (study / "progress").exists():
        shutil.rmtree(study / "progress")
    (study / "progress").symlink_to(elsewhere)
    before = files(study)
    line = one_line_error(["resume", str(study)], capsys)
    assert line.endswith(
        f"{study}: progress is a symbolic link (to {elsewhere}); a study never writes through a link, so nothing "
        "was run: replace it with a real directory (or file)"
    )
    assert files(study) == before
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == theirs


def test_a_deleted_curves_file_of_a_finished_study_is_reported_by_status_and_redone_by_resume(
    reference, tmp_path, capsys
):
    """It went unnoticed: `status` complete, `resume` nothing to do, the unit's curve rows lost."""
    study = copy_of(reference, tmp_path)
    name = Store(study).names("architectures", ".parquet")[0]
    (study / "curves" / f"{name}.parquet").unlink()
    assert main(["status", str(study)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^corrupt:\n  " + re.escape(name) + r"  curves file: missing$", out, re.M), out
    assert main(["resume", str(study)]) == 0
    err = capsys.readouterr().err
    assert f"archstudy: {name}: curves file: missing: removed, it will be redone\n" in err, err
    assert "nothing to do" not in err
    for mine, ref in zip(values(study), values(reference)):
        pd.testing.assert_frame_equal(mine, ref, check_exact=True)
    curves = [
        Store(s).read_table("curves").sort_values(["index", "arch_id", "lr_index", "epoch"]) for s in (study, reference)
    ]
    pd.testing.assert_frame_equal(*(c.reset_index(drop=True) for c in curves), check_exact=True)
    assert main(["status", str(study)]) == 0 and "corrupt" not in capsys.readouterr().out


def test_force_config_with_the_studys_own_config_and_data_rewrites_nothing(reference, tmp_path, capsys):
    """It rewrote study.yaml and said "replacing the study's config (--force-config): the data changed"."""
    study = copy_of(reference, tmp_path)
    before, stat = files(study), os.stat(study / "study.yaml")
    cfg = tmp_path / "keys.yaml"
    cfg.write_text(yaml.safe_dump(KEYS))
    assert main(["run", "--config", str(cfg), "--out", str(study), "--force-config"]) == 0
    err = capsys.readouterr().err
    assert "nothing to do: all 2 architectures are finished" in err and "changed" not in err and "replacing" not in err
    after = os.stat(study / "study.yaml")
    assert files(study) == before and (after.st_ino, after.st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)

"""Shared test fixtures."""

import io
import logging
import random
import time
import sys
import subprocess
import socket
from pathlib import Path

import numpy as np
import pytest
import torch

from archstudy.sampling import EXTENDED


@pytest.fixture
def one_thread():
    """One torch thread: on the shared 2-core CI machine it is faster and steadier for tiny nets (thread
    wake-ups dominate their small ops), and results do not depend on how busy the machine is."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _global_random_state() -> tuple:
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return (torch.get_rng_state().tolist(), (name, keys.tolist(), pos, has_gauss, cached), random.getstate())


@pytest.fixture
def global_random_state():
    """A function giving the state of the process's global random generators (torch's CPU generator, numpy's
    legacy global one, Python's ``random``): equal before and after a call when the call drew from none."""
    return _global_random_state


# A real study, run by the runner on built-in data (embedded Ray, tiny budgets, siblings on so the paired
# effects and the granulated Kendall Psi have cells, an NLC trajectory for the curves): what the report's
# end-to-end tests render and the schema test checks the files of. Run once per session.
REAL_STUDY = {
    "dataset": "waveform-noise",
    "architectures": 3,
    "param_budget": 2000,
    "seed": 5,
    "space": {**EXTENDED.to_dict(), "name": "extended-shallow", "depths": [3, 5]},
    "protocol": {"preset": "quick", "num_lrs": 3, "max_epochs": 2},
    "metrics": {
        "nlc_batches": 4,
        "gradient_batches": 2,
        "variability_grid": 8,
        "variability_planes": 1,
        "proxy_batch_size": 32,
        "nlc_trajectory": [0, 2],
    },
    "siblings": ["weights", "param", "skip", "imn"],
    "max_retries": 1,
}


@pytest.fixture(scope="session")
def real_study_dir(tmp_path_factory) -> Path:
    from archstudy.study.execution.driver import run_study

    out = tmp_path_factory.mktemp("real") / "study"
    result = run_study(REAL_STUDY, out, progress=io.StringIO())
    assert result.complete, result
    return out


def bomb(levels: int = 9, under: str | None = None, head: str = "") -> str:
    """A 'billion laughs' YAML document: ``levels`` levels of 9 aliases each (9 levels: about 400 bytes,
    9^9 = 387 million strings once expanded), as top-level keys or nested under the key ``under``."""
    names = "abcdefghijklmnop"[:levels]
    lines = [f'{names[0]}: &{names[0]} ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"{b}: &{b} [" + ",".join([f"*{a}"] * 9) + "]" for a, b in zip(names, names[1:])]
    if under is not None:
        lines = [f"{under}:"] + ["  " + line for line in lines]
    return head + "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def alias_bomb():
    """``bomb`` (a conftest is not importable by name under pytest's importlib mode)."""
    return bomb


def pytest_collection_modifyitems(config, items):
    """Tests marked ``cuda`` skip, with the reason, where torch sees no CUDA device."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device: torch.cuda.is_available() is False here")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def cuda():
    """The CUDA device, with the flags a worker sets for reproducible float64 (study.training.determinism)."""
    from archstudy.study.training.determinism import deterministic_cuda

    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    deterministic_cuda()
    yield torch.device("cuda")
    torch.use_deterministic_algorithms(before[0], warn_only=before[1])


@pytest.fixture(scope="module")
def s3_endpoint():
    """An S3-protocol server on 127.0.0.1 (moto's standalone server, the `dev` extra), one per module asking."""
    pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install -e '.[dev]')")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "the S3 server did not start"
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(30)


@pytest.fixture(scope="module")
def local_ray(request):
    """A Ray of the module's own, shut down after it: ``address="local"`` (never the cluster a ``ray start`` or a
    ``ray.cluster_utils.Cluster`` on this machine recorded in /tmp/ray/ray_current_cluster, which a plain
    ``ray.init()`` would join), 2 CPUs, 100 MiB of object store, no dashboard, only Ray's errors. A module sets
    ``LOCAL_RAY_GPUS`` (logical GPUs, default 0) and ``LOCAL_RAY_ENV`` (environment variables set before Ray
    starts, so that every worker has them; put back afterwards). Modules whose every test needs it say
    ``pytestmark = pytest.mark.usefixtures("local_ray")``."""
    import ray

    with pytest.MonkeyPatch.context() as mp:
        for key, value in getattr(request.module, "LOCAL_RAY_ENV", {}).items():
            mp.setenv(key, value)
        ray.init(
            address="local",
            num_cpus=2,
            num_gpus=getattr(request.module, "LOCAL_RAY_GPUS", 0),
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
            object_store_memory=100 * 2**20,
        )
        try:
            yield
        finally:
            ray.shutdown()

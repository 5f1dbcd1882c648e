"""The tiny real study the driver and command tests run (waveform-noise, the extended space at shallow depths, 3
learning rates, 2 epochs, cheap metrics: seconds per architecture), and the ``archstudy`` command lines they start
or plan it with, declared once.

Test modules import it by name (``pythonpath`` in the pytest config holds tests/).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from archstudy.sampling import EXTENDED

ROOT = Path(__file__).resolve().parents[1]

CHEAP_METRICS = {
    "nlc_batches": 4,
    "gradient_batches": 2,
    "variability_grid": 8,
    "variability_planes": 1,
    "proxy_batch_size": 32,
}
SPACE = EXTENDED.replace(name="extended-shallow", depths=(3, 5, 7)).to_dict()
# Columns that legitimately differ between two computations of the same architecture.
VOLATILE = {"build_s", "measure_s", "train_s", "total_s", "wall_s", "finished_at", "attempt"}


def tiny_study(architectures: int) -> dict[str, Any]:
    """The science keys of the tiny study (seed 11, a 3,000-parameter budget) with ``architectures`` draws."""
    return {
        "dataset": "waveform-noise",
        "architectures": architectures,
        "param_budget": 3000,
        "seed": 11,
        "space": SPACE,
        "protocol": {"preset": "quick", "num_lrs": 3, "max_epochs": 2},
        "metrics": CHEAP_METRICS,
        "max_retries": 1,
    }


def new_run(out: Path | str, architectures: int) -> list[str]:
    """``archstudy run`` of a new study on built-in data (waveform-noise, 3,000 parameters, the quick protocol) into
    ``out``: what the tests that kill or interrupt a starting run start."""
    return ["run", "--dataset", "waveform-noise", "--architectures", str(architectures), "--param-budget", "3000"] + [
        "--protocol",
        "quick",
        "--out",
        str(out),
    ]


def dry_run(study: Path, *extra: str, flags: tuple[str, ...] = ()) -> list[str]:
    """``archstudy run --dry-run`` of the study whose study.yaml is in ``study`` (``flags`` repeat keys of it on the
    command line), then ``extra``."""
    return ["run", "--config", str(study / "study.yaml"), *flags, "--out", str(study), "--dry-run", *extra]


def cli(argv: list[str], **popen: Any) -> subprocess.Popen:
    """``python -m archstudy.study.cli ARGV`` started from the source tree (``popen``: subprocess.Popen's
    arguments: where its output goes, ``start_new_session``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "archstudy.study.cli", *argv],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        **popen,
    )


def files(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (relative name: its bytes): equal before and after a command that wrote nothing."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def config_only(path: Path, keys: dict[str, Any]) -> Path:
    """The study ``path`` as a driver leaves it before any result: its study.yaml alone, of ``keys`` with
    waveform-noise's derived d_in = 40 and d_out = 3."""
    from archstudy.study.execution.store import Store
    from archstudy.study.experiment.config import StudyConfig

    Store(path).write_config(StudyConfig(**keys).replace(d_in=40, d_out=3))
    return path

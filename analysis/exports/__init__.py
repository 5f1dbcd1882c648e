"""Exports of a study to the tools researchers already use (``archstudy export STUDY --to TARGET --out DEST``).

One way, from the study's files (read as ``load_results`` reads them; nothing of the study is written), each through
the target's own library, from the optional extra ``export`` (``pip install "archstudy[export]"``):

* ``optuna``: an SQLite RDB storage with one study, a trial per architecture (``to_optuna``);
* ``mlflow``: an SQLite tracking store and its artifacts, a run per architecture under the study's run, a nested run
  per learning rate (``to_mlflow``);
* ``tensorboard``: event files, the HParams plugin's summaries and each architecture's curves (``to_tensorboard``);
* ``hf``: a Hugging Face ``datasets`` folder: the three tables as Parquet and a dataset card (``to_hf``).

Every export carries the study's notes and provenance. ``DEST`` is a new directory (or an empty one); an export that
fails is removed, so ``DEST`` holds a whole export or nothing of one.
"""

from __future__ import annotations

import importlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from archstudy.sampling import SpecError, UserError

from .source import ExportSource, read_source

WHERE = "export"
# target -> (its module here, the distribution its library comes from, how to open the export: {out} is DEST)
TARGETS: dict[str, tuple[str, str, str]] = {
    "optuna": ("to_optuna", "optuna", "optuna-dashboard sqlite:///{out}/optuna.db"),
    "mlflow": ("to_mlflow", "mlflow", "mlflow ui --backend-store-uri sqlite:///{out}/mlflow.db"),
    "tensorboard": ("to_tensorboard", "tensorboard", "tensorboard --logdir {out}"),
    "hf": ("to_hf", "datasets", 'datasets.load_dataset("{out}", "architectures")'),
}
INSTALL = 'pip install "archstudy[export]" (in a source tree: pip install -e ".[export]")'


@dataclass(frozen=True)
class Exported:
    """What an export wrote: the target, where, what it holds (``counts``), how to open it and how long it took."""

    target: str
    out: str
    counts: dict[str, int]
    open_with: str
    seconds: float

    def line(self) -> str:
        held = ", ".join(f"{v:,} {k}" for k, v in self.counts.items())
        return f"exported to {self.target} in {self.out} ({held}; {self.seconds:.1f} s); open it: {self.open_with}"


def check_target(target: str) -> str:
    if target not in TARGETS:
        raise SpecError(WHERE, "to", target, f"must be one of {', '.join(TARGETS)}")
    return target


def library(target: str) -> None:
    """Import the target's library, or say in one line that the extra is missing and how to install it."""
    distribution = TARGETS[check_target(target)][1]
    try:
        importlib.import_module(distribution)
    except ImportError as e:
        raise UserError(f"export --to {target} needs {distribution} ({e.msg}): {INSTALL}") from None


def _destination(out: str | os.PathLike[str]) -> Path:
    dest = Path(out).expanduser().absolute()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise SpecError(WHERE, "out", str(out), "must be a new or empty directory (an export never overwrites)")
    return dest


def export_study(
    study_dir: str | os.PathLike[str],
    target: str,
    out: str | os.PathLike[str],
    *,
    rate_runs: bool = True,
    say: Callable[[str], None] | None = None,
) -> Exported:
    """Export the study at ``study_dir`` to ``target`` (``TARGETS``) in the new directory ``out`` (module docstring).
    ``rate_runs`` (mlflow): a nested run per learning rate, else each architecture's run alone; ``say``: progress."""
    library(target)
    dest = _destination(out)
    t0 = time.perf_counter()
    source = read_source(study_dir)
    module = importlib.import_module(f"{__name__}.{TARGETS[target][0]}")
    write: Callable[..., dict[str, int]] = module.write
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    options = {"rate_runs": rate_runs} if target == "mlflow" else {}
    try:
        counts = write(source, dest, say=say or (lambda line: None), **options)
    except BaseException:
        if created:
            shutil.rmtree(dest, ignore_errors=True)
        else:
            for child in dest.iterdir():
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
        raise
    return Exported(target, str(dest), counts, TARGETS[target][2].format(out=dest), time.perf_counter() - t0)


__all__ = ["ExportSource", "Exported", "TARGETS", "export_study", "read_source"]

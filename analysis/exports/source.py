"""What every export carries, read once from the study (``read_source``): its config, its architectures (trained,
pruned at launch) and failures, every run and curve, its notes and its provenance, and which columns are design
axes and which are measures.

``axes`` and ``measures`` are the study's design axes and measures at initialization (``analysis.features``).

A failed architecture has no row: its spec is drawn again from the study's config as the driver drew it
(``failed_spec``: ``sampling.sample_spec``, and ``sampling.siblings`` for a sibling), so an export can give it its
design axes.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from archstudy.sampling import BASE, ArchSpec, UserError, sample_spec, siblings
from archstudy.sampling.unit_names import unit_name
from archstudy.study.experiment.notes import Note

from ..features import design_axes, measures
from ..results import load_results
from ..study_notes import read_notes

# What each kind of row is in an export: trained (its selected run's test error is its value), pruned at launch
# (measured, not trained), failed (its worker kept failing: no row).
TRAINED, PRUNED, FAILED = "trained", "pruned", "failed"
ERRORS = ("test_error", "val_error", "train_error")
# Columns of the selected run every export names besides the errors.
SELECTED = ("lr", "lr_index", "epochs", "n_diverged", "lr_edge", "high_bias")


@dataclass(frozen=True)
class ExportSource:
    """A study as the exports read it (module docstring)."""

    study: str
    name: str
    config: dict[str, Any]
    architectures: pd.DataFrame
    runs: pd.DataFrame
    curves: pd.DataFrame
    failed: list[dict[str, Any]]
    notes: list[Note]
    provenance: list[tuple[dict[str, Any], int]]
    axes: tuple[str, ...]
    measures: tuple[str, ...]
    failed_specs: dict[str, ArchSpec | None] = field(default_factory=dict)

    def state(self, row: dict[str, Any]) -> str:
        return TRAINED if row.get("trained", True) is not False else PRUNED

    def unit(self, row: dict[str, Any]) -> str:
        return unit_name(int(row["index"]), str(row["arch_id"]))

    def runs_by_unit(self) -> dict[str, pd.DataFrame]:
        """Each architecture's runs, by unit name, by initialization (``init_index``) then lowest rate first."""
        return _by_unit(self.runs, *[c for c in ("init_index", "lr_index") if c in self.runs.columns])

    def curves_by_unit(self) -> dict[str, pd.DataFrame]:
        """Each architecture's curves (every run's), by unit name, by rate then epoch."""
        return _by_unit(self.curves, "lr_index", "epoch")

    @property
    def main_record(self) -> dict[str, Any]:
        """The provenance record that computed most of the architectures (empty where none was recorded)."""
        return max(self.provenance, key=lambda p: p[1])[0] if self.provenance else {}

    def counts(self) -> dict[str, int]:
        trained = int(self.architectures["trained"].astype(bool).sum()) if len(self.architectures) else 0
        return {
            "architectures": len(self.architectures) + len(self.failed),
            TRAINED: trained,
            PRUNED: len(self.architectures) - trained,
            FAILED: len(self.failed),
            "runs": len(self.runs),
            "curve_points": len(self.curves),
        }


def _by_unit(table: pd.DataFrame, *order: str) -> dict[str, pd.DataFrame]:
    if not len(table):
        return {}
    names = [unit_name(int(i), str(a)) for i, a in zip(table["index"], table["arch_id"])]
    table = table.assign(_unit=names).sort_values(["_unit", *order], kind="stable")
    return {str(k): g.drop(columns="_unit") for k, g in table.groupby("_unit", sort=False)}


def plain(value: Any) -> Any:
    """A JSON- and library-friendly scalar: numpy scalars as Python, NaN / NA / infinities as None, timestamps as
    ISO 8601 text."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value


def failed_spec(config: dict[str, Any], failure: dict[str, Any]) -> ArchSpec | None:
    """The spec of a failed architecture, drawn again from the config (module docstring); None where the config
    cannot draw it (a study.yaml without its data sizes) or no draw has its arch_id."""
    try:
        index = int(failure["index"])
        space = config.get("space") or config.get("preset")
        if space is None:
            return None
        base = sample_spec(
            int(config["seed"]), index, int(config["d_in"]), int(config["d_out"]), space, int(config["param_budget"])
        )
        variant = str(failure.get("variant") or BASE)
        candidates = [base] if variant == BASE else siblings(base, variant, int(config["param_budget"]))
    except (KeyError, TypeError, ValueError, UserError):
        return None
    return next((s for s in candidates if s.content_id == failure.get("arch_id")), None)


def read_source(study_dir: str | os.PathLike[str], *, curves: bool = True) -> ExportSource:
    """The study at ``study_dir`` as the exports read it (``curves``: with every run's curve)."""
    r = load_results(study_dir, runs=True, curves=curves)
    arch = r.architectures.sort_values(["index", "variant", "arch_id"], kind="stable").reset_index(drop=True)
    name = os.path.basename(str(r.study_dir).rstrip("/")) or "study"
    failed = sorted(r.failed, key=lambda f: (int(f.get("index", -1)), str(f.get("arch_id"))))
    return ExportSource(
        study=r.study_dir,
        name=name,
        config=r.config,
        architectures=arch,
        runs=r.runs,
        curves=r.curves,
        failed=failed,
        notes=read_notes(study_dir),
        provenance=r.provenance,
        axes=design_axes(arch),
        measures=measures(arch),
        failed_specs={str(f.get("arch_id")): failed_spec(r.config, f) for f in failed},
    )

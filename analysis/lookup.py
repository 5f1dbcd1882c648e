"""Looking up a study's architectures (``archstudy lookup``, ``archstudy.lookup``): by content id, by spec, or by a
filter over the columns; each found architecture with its row, its runs by learning rate and where its training
curves are.

* ``id``: an ``arch_id`` (``ArchSpec.content_id``, 16 hex digits), a unique prefix of one (at least
  ``MIN_PREFIX`` digits), or a unit name ``<index>-<arch_id>``. A large study samples some specs more than once,
  and siblings share an index: every row of that id is found.
* ``spec``: an ``ArchSpec`` as JSON, canonicalized as the sampler makes a spec (``spec_of``): ``d_in``, ``d_out``
  and ``preset`` default to the study's; without ``width``, the width is solved from the study's parameter budget
  (``sampling.solve_width``); a field added after the first schema may be left out at its default. Two spellings of
  one spec (key order, a real field as ``1`` or ``1.0``, the defaults written or not) have one content id, so they
  find one row.
* ``where``: a condition over the architectures table's columns (``analysis.row_filter``).

Only what is needed is read: an id or a spec reads the rows of that id alone (the files named by it, or the rows
of it in the packs), a filter the architectures table; then the runs of the architectures found. The curves are
not read: their file (a unit's own, or the pack that holds it) is named, with the call that reads them
(``read_curves``).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from archstudy.sampling import ArchSpec, SpecError, solve_width
from archstudy.sampling.unit_names import UNIT_NAME, unit_name
from archstudy.study.experiment.packs import read_packs, sources

from .columns import ARCHITECTURE_DTYPES, ARCHITECTURE_REQUIRED, PREDICTORS, RUN_DTYPES, RUN_REQUIRED
from .interactive import spec_text
from .results import study_filesystem, _fill_derived, _list, _read_table, read_config, typed
from .row_filter import filter_rows

WHERE = "lookup"
MIN_PREFIX = 4  # hex digits of the shortest arch_id prefix looked up
LIMIT = 5  # architectures shown in full by default
ID = re.compile(r"^[0-9a-f]{1,16}$")
RUN_SHOWN = ("lr_index", "lr", "epochs", "val_error", "test_error", "train_error", "diverged", "selected")


@dataclass(frozen=True)
class Lookup:
    """What a lookup found: ``query`` (what was asked, in words), ``matches`` (how many architectures), the first
    ``limit`` of them (``architectures``: their rows, lowest test error first, every column), their ``runs`` (one row
    per learning rate) and, per unit name, where its curves are (``curves``)."""

    study: str
    query: str
    matches: int
    architectures: pd.DataFrame
    runs: pd.DataFrame
    curves: dict[str, str] = field(default_factory=dict)

    def units(self) -> list[str]:
        return [unit_name(int(i), str(a)) for i, a in zip(self.architectures["index"], self.architectures["arch_id"])]

    def runs_of(self, arch_id: str, index: int) -> pd.DataFrame:
        r = self.runs
        if not len(r):
            return r
        return r[(r["arch_id"] == arch_id) & (r["index"] == index)].sort_values(
            [c for c in ("init_index", "lr_index") if c in r.columns]
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the query, the count and each architecture shown with its runs and curves' place."""
        shown = []
        for name, row in zip(self.units(), self.architectures.to_dict("records")):
            runs = self.runs_of(str(row["arch_id"]), int(row["index"]))
            shown.append(
                {
                    "unit": name,
                    "row": {k: _plain(v) for k, v in row.items()},
                    "runs": [{k: _plain(v) for k, v in r.items()} for r in runs.to_dict("records")],
                    "curves": self.curves.get(name, ""),
                }
            )
        return {"study": self.study, "query": self.query, "matches": self.matches, "architectures": shown}

    def text(self) -> str:
        """For a terminal: per architecture its identity, errors, spec and metrics, its runs by rate, its curves."""
        n = len(self.architectures)
        head = f"{self.study}: {self.matches:,} architecture{'s' * (self.matches != 1)} with {self.query}"
        lines = [head + (f"; the {n} of lowest test error shown (-k)" if n < self.matches else "")]
        for name, row in zip(self.units(), self.architectures.to_dict("records")):
            lines += ["", *_row_lines(name, row), *_runs_lines(self.runs_of(str(row["arch_id"]), int(row["index"])))]
            lines.append(f"  curves: {self.curves.get(name) or 'none recorded'}")
        return "\n".join(lines)


def _plain(v: Any) -> Any:
    if v is None or v is pd.NA or (isinstance(v, float) and not math.isfinite(v)):
        return None
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return _plain(v.item())
    if isinstance(v, pd.Timestamp):
        return v.isoformat()
    return v


def _number(v: Any) -> str:
    v = _plain(v)
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _row_lines(name: str, row: Mapping[str, Any]) -> list[str]:
    metrics = [p.column for p in PREDICTORS if p.kind in ("metric", "proxy") and _plain(row.get(p.column)) is not None]
    return [
        f"{name}  ({row.get('variant') or 'base'}): test error {_number(row.get('test_error'))}, validation "
        f"{_number(row.get('val_error'))}, training {_number(row.get('train_error'))}",
        f"  spec: {spec_text(dict(row))}; {_number(row.get('num_params'))} parameters",
        "  at initialization: " + (", ".join(f"{c} {_number(row.get(c))}" for c in metrics) or "-"),
    ]


def _runs_lines(runs: pd.DataFrame) -> list[str]:
    if not len(runs):
        return ["  runs: none (not trained)"]
    lines = [f"  runs by learning rate ({len(runs)}):", "    " + "  ".join(f"{c:>10}" for c in RUN_SHOWN)]
    for r in runs.to_dict("records"):
        lines.append("    " + "  ".join(f"{_number(r.get(c)):>10}" for c in RUN_SHOWN))
    return lines


def spec_of(spec: str | Mapping[str, Any], config: Mapping[str, Any]) -> ArchSpec:
    """The ``ArchSpec`` a lookup by spec means (module docstring): ``spec`` as JSON or a mapping, completed from the
    study's ``config`` (study.yaml) as the sampler completes a draw."""
    d = json.loads(spec) if isinstance(spec, str) else dict(spec)
    if not isinstance(d, dict):
        raise SpecError(WHERE, "spec", spec, "must be a JSON object of ArchSpec fields (docs/architectures.md)")
    d = {"d_in": config.get("d_in"), "d_out": config.get("d_out"), "preset": config.get("preset"), **d}
    d = {k: v for k, v in d.items() if v is not None}
    if "width" in d:
        return ArchSpec.from_dict(d)
    budget = config.get("param_budget")
    if not isinstance(budget, int):
        raise SpecError(WHERE, "spec", spec, "must give width: the study records no param_budget to solve it from")
    return solve_width(ArchSpec.from_dict({**d, "width": 2}), budget)


def _ids(fs: Any, root: str, shown: str, arch_id: str) -> set[str]:
    """The arch_ids an ``id`` names (module docstring): itself, or those its prefix begins."""
    text = str(arch_id).strip().lower()
    m = UNIT_NAME.match(text)
    if m:
        return {m["arch_id"]}
    if not ID.match(text) or len(text) < MIN_PREFIX:
        raise SpecError(WHERE, "id", arch_id, f"must be an arch_id (16 hex digits), {MIN_PREFIX} or more of its first")
    if len(text) == 16:
        return {text}
    ids = {m["arch_id"] for _, m in _list(fs, root, "architectures", "parquet")}
    ids |= {n.split("-", 1)[1] for pack in read_packs(fs, root) if pack.ok for n in pack.names}
    found = {i for i in ids if i.startswith(text)}
    if len(found) > 1:
        some = ", ".join(sorted(found)[:5])
        raise SpecError(WHERE, "id", arch_id, f"begins {len(found)} arch_ids ({some}...): give more digits")
    return found or {text}


def lookup(
    study_dir: str | os.PathLike[str],
    *,
    id: str | None = None,  # noqa: A002 - the command's --id
    spec: str | Mapping[str, Any] | None = None,
    where: str | None = None,
    limit: int = LIMIT,
) -> Lookup:
    """The architectures of the study at ``study_dir`` with ``id``, with ``spec``, or for which ``where`` holds
    (exactly one of them; module docstring): at most ``limit`` of them, lowest test error first."""
    given = [k for k, v in (("id", id), ("spec", spec), ("where", where)) if v is not None]
    if len(given) != 1:
        raise SpecError(WHERE, "query", ", ".join(given) or "none", "must be exactly one of id, spec, where")
    if not isinstance(limit, int) or limit < 1:
        raise SpecError(WHERE, "limit", limit, "must be an integer >= 1")
    fs, root, shown = study_filesystem(study_dir)
    config = read_config(fs, root, shown)
    excluded: dict[str, str] = {}
    ids: set[str] | None = None
    if id is not None:
        ids, query = _ids(fs, root, shown, id), f"arch_id {id}"
    elif spec is not None:
        found = spec_of(spec, config)
        ids, query = {found.content_id}, f"the spec of arch_id {found.content_id}"
    else:
        query = f"{where}"
    raw, _ = _read_table(fs, root, shown, "architectures", config, excluded, arch_ids=ids)
    arch = _fill_derived(typed(raw, ARCHITECTURE_DTYPES, ARCHITECTURE_REQUIRED, f"{shown}/architectures"), config)
    if where is not None:
        arch = arch[filter_rows(arch, where).to_numpy()]
    arch = arch.sort_values(["test_error", "index"], kind="stable", na_position="last")
    top = arch.head(limit).reset_index(drop=True)
    wanted = set(top["arch_id"].astype(str))
    runs = pd.DataFrame(columns=list(RUN_DTYPES))
    if wanted:
        raw_runs, _ = _read_table(fs, root, shown, "runs", config, excluded, arch_ids=wanted)
        runs = typed(raw_runs, RUN_DTYPES, RUN_REQUIRED, f"{shown}/runs")
    names = [unit_name(int(i), str(a)) for i, a in zip(top["index"], top["arch_id"])]
    return Lookup(shown, query, len(arch), top, runs, _curves(fs, root, shown, names))


def _curves(fs: Any, root: str, shown: str, names: list[str]) -> dict[str, str]:
    """Where each unit's curves are: its own file, or the pack it is read from (which holds the rows of its
    ``arch_id``); "" where none were recorded."""
    if not names:
        return {}
    packs = {p.stem: p for p in read_packs(fs, root) if p.ok}
    winners = sources(list(packs.values()))
    own = {m.group(0)[: -len(".parquet")] for _, m in _list(fs, root, "curves", "parquet")}
    out = {}
    for name in names:
        stem = winners.get(name)
        arch_id = name.split("-", 1)[1]
        how = f"(read_curves({shown!r}, [{arch_id!r}]))"
        if stem is not None and "curves" in packs[stem].tables and name not in packs[stem].without_curves:
            out[name] = f"{shown}/curves/{stem}.parquet, rows with arch_id {arch_id} {how}"
        elif stem is None and name in own:
            out[name] = f"{shown}/curves/{name}.parquet {how}"
        else:
            out[name] = ""
    return out

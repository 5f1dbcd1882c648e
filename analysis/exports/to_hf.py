"""The Hugging Face export: a ``datasets`` folder, ``datasets.load_dataset("DEST", "architectures")`` (or ``"runs"``,
``"curves"``, ``"failed"``) loads it, locally or once pushed to the Hub.

* ``DEST/data/<table>/train-00000-of-00001.parquet``: each table of the study (``architectures``: one row per finished
  architecture; ``runs``: one per learning rate; ``curves``: one per rate and epoch; ``failed``: the failures, where
  there are any), written by ``datasets.Dataset.to_parquet`` from the table as ``load_results`` reads it;
* ``DEST/README.md``: the dataset card (``huggingface_hub.DatasetCard``): its YAML names each table as a config with
  its data files and its features and sizes (``datasets.DatasetInfosDict``), and its text gives the counts, the
  protocol, the design space (each axis's values or range in the study, and the space's full declaration), the
  schema (every column's type, unit and meaning, from ``study.experiment.schema``), the notes and the provenance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd
import yaml

from archstudy.study.experiment.provenance import describe
from archstudy.study.experiment.schema import columns

from .source import ExportSource, plain

SPLIT = "train"  # the one split of each config, as the Hub names a table that is not a train/test partition
FILE = "train-00000-of-00001.parquet"


def tables(source: ExportSource) -> dict[str, pd.DataFrame]:
    """The tables the dataset holds, by config name (module docstring)."""
    out = {"architectures": source.architectures, "runs": source.runs, "curves": source.curves}
    if source.failed:
        keep = ("index", "arch_id", "variant", "reason", "attempts", "failed_at", "host", "package_version")
        out["failed"] = pd.DataFrame([{k: plain(f.get(k)) for k in keep} for f in source.failed])
    return {k: v.reset_index(drop=True) for k, v in out.items() if len(v)}


def _schema_md(table: str, present: list[str]) -> list[str]:
    lines = [f"#### {table}", "", "| column | type | unit | meaning |", "|---|---|---|---|"]
    for c in columns(table):
        if c.name in present:
            lines.append(f"| {c.name} | {c.type} | {c.unit} | {c.meaning.replace('|', '/')} |")
    return lines + [""]


def _axis_md(source: ExportSource, axis: str) -> str:
    values = source.architectures[axis].dropna()
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values) and values.nunique() > 8:
        return f"| {axis} | {plain(values.min())} to {plain(values.max())} | {values.nunique():,} values |"
    counts = values.astype(str).value_counts().sort_index()
    return f"| {axis} | {', '.join(f'{k} ({n:,})' for k, n in counts.items())} | {len(counts)} values |"


def card_text(source: ExportSource, held: dict[str, pd.DataFrame]) -> str:
    """The card's Markdown (module docstring)."""
    counts = source.counts()
    cfg = source.config
    lines = [
        f"# {source.name}: an archstudy study of {cfg.get('dataset', '?')}",
        "",
        "Random fully-connected architectures, each measured at initialization (the nonlinearity coefficient of "
        "Philipp and Carbonell, *The Nonlinearity Coefficient*, and other metrics), trained with SGD at many "
        "starting learning rates in float64, the run of lowest validation error selected, exported by archstudy "
        f"from {source.study}.",
        "",
        "## Counts",
        "",
        *(f"- {k}: {v:,}" for k, v in counts.items()),
        "",
        "## Loading",
        "",
        "```python",
        "import datasets",
        *(f'{t} = datasets.load_dataset("PATH", "{t}", split="{SPLIT}")' for t in held),
        "```",
        "",
        "## Protocol",
        "",
        "```yaml",
        yaml.safe_dump({"protocol": cfg.get("protocol"), "metrics": cfg.get("metrics")}, sort_keys=False).strip(),
        "```",
        "",
        "## Design space",
        "",
        "| axis | values in the study | distinct |",
        "|---|---|---|",
        *(_axis_md(source, a) for a in source.axes),
        "",
        "<details><summary>the space as study.yaml declares it</summary>",
        "",
        "```yaml",
        yaml.safe_dump(
            {k: cfg.get(k) for k in ("preset", "space", "param_budget", "siblings")}, sort_keys=False
        ).strip(),
        "```",
        "</details>",
        "",
        "## Schema",
        "",
        *(line for t, df in held.items() if t != "failed" for line in _schema_md(t, list(df.columns))),
        "## Provenance",
        "",
        *([f"- {describe(r)} ({n:,} architectures)" for r, n in source.provenance] or ["- not recorded"]),
        "",
        "## Notes",
        "",
        *([f"- {n.at}: {n.text}" + (f" [{', '.join(n.tags)}]" if n.tags else "") for n in source.notes] or ["- none"]),
    ]
    return "\n".join(lines) + "\n"


def write(source: ExportSource, dest: Path, *, say: Callable[[str], None]) -> dict[str, int]:
    """Write the export into ``dest`` (module docstring); the rows of each table."""
    import datasets
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCard, DatasetCardData

    held = tables(source)
    infos: dict[str, Any] = {}
    for name, df in held.items():
        ds = datasets.Dataset.from_pandas(df, preserve_index=False)
        path = dest / "data" / name / FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        ds.to_parquet(str(path))
        splits = datasets.SplitDict()
        splits.add(datasets.SplitInfo(SPLIT, num_examples=len(ds), num_bytes=path.stat().st_size))
        infos[name] = datasets.DatasetInfo(features=ds.features, splits=splits)
        say(f"hf: {name}, {len(df):,} rows")
    data = DatasetCardData(
        pretty_name=f"archstudy {source.name}",
        tags=[
            "archstudy",
            "neural-architecture",
            "nonlinearity-coefficient",
            *(t for n in source.notes for t in n.tags),
        ],
        configs=[
            {
                "config_name": n,
                "data_files": [{"split": SPLIT, "path": f"data/{n}/*.parquet"}],
                "default": n == "architectures",
            }
            for n in held
        ],
    )
    DatasetInfosDict(infos).to_dataset_card_data(data)
    DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{card_text(source, held)}").save(dest / "README.md")
    return {name: len(df) for name, df in held.items()}

"""Direct references, one declaration per fact, and the change walk of a new metric column, performed.

* No declaration names a function by a "module:function" string (resolved by ``importlib``, which go-to-definition
  and renames do not follow): a computation is referenced by the object itself.
* No mirror type: a type the code derives from another (``analysis.columns.Predictor`` from the schema's
  ``AsPredictor``, ``analysis.study_analysis.StudyAnalysis`` being the ``FigureData`` its figures draw from) extends it
  instead of copying its fields.
* A new metric column at initialization is its metric module and ``study/experiment/schema.py`` (docs/layout.md,
  "Where a change goes"): on a copy of the package, those two files edited and nothing else, ``measure`` returns
  the new column with its value and every other column unchanged, and the analysis takes it as a predictor.
* Every package's ``__init__`` says in its first docstring line what the package holds.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("archstudy", "sampling", "study", "analysis")
# "module:function" (or "package.module:function"): the shape of a reference resolved by importlib.
REFERENCE = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*:[a-z_][a-z0-9_]*")


def sources() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


def module_names() -> set[str]:
    """Every dotted tail of every module of ours ("nlc", "metrics.nlc", "study.metrics.nlc", ...)."""
    out = set()
    for p in sources():
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        out |= {".".join(parts[i:]) for i in range(len(parts))}
    return out


def test_no_declaration_names_a_function_of_ours_by_a_string():
    ours = module_names()
    found = []
    for p in sources():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and REFERENCE.fullmatch(node.value):
                if node.value.partition(":")[0] in ours:
                    found.append(f"{p.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not found, "references by string: " + "; ".join(found)


def test_a_derived_type_extends_the_declaration_it_derives_from():
    """One declaration of each set of fields: the derived type adds its own fields and copies none."""
    from archstudy.analysis.columns import PREDICTORS, Predictor
    from archstudy.analysis.figures.base import FigureData
    from archstudy.analysis.study_analysis import StudyAnalysis
    from archstudy.study.experiment.schema import AsPredictor, predictor_columns

    for derived, declared in ((Predictor, AsPredictor), (StudyAnalysis, FigureData)):
        assert issubclass(derived, declared)
        own = set(derived.__dataclass_fields__) - set(declared.__dataclass_fields__)
        assert [f.name for f in dataclasses.fields(derived) if f.name not in own] == [
            f.name for f in dataclasses.fields(declared)
        ]
    # and the values are the declaration's: a predictor is its column's AsPredictor with the column's name
    assert [dataclasses.asdict(p) for p in PREDICTORS] == [
        {**dataclasses.asdict(c.predictor), "column": c.name} for c in predictor_columns()
    ]


# -- the walk of a new metric column ------------------------------------------------------------------------------

NEW_COLUMN = """        Column(
            "walk_metric",
            "float64",
            "",
            "mean square of the training inputs (the walk's metric)",
            values=MEASURED_SIZE,
            predictor=AsPredictor("walk metric", "metric", True, "a mean of squares", figure="metrics"),
        ),
"""
NEW_FUNCTION = '''

@measures("walk_metric", stream=6)
def measure_walk_metric(m: Measuring, seed: int) -> dict:
    """The walk test's metric: the mean square of the training inputs."""
    return {"walk_metric": float((m.x ** 2).mean())}
'''
# The end of the "init metrics" group of study/experiment/schema.py, where the column goes.
PROXIES_GROUP = """    ),
    *_group(
        ARCHITECTURES,
        "proxies",
"""
PROBE = """
import json, types
import numpy as np
import torch
from archstudy.analysis.columns import PREDICTOR_BY_COLUMN, figure_grid
from archstudy.sampling import ArchSpec
from archstudy.study import MetricOptions, build_network
from archstudy.study.metrics import measurement

spec = ArchSpec(depth=3, width=12, d_in=5, d_out=3, activation="tanh")
g = torch.Generator().manual_seed(1)
split = lambda n: types.SimpleNamespace(x=torch.randn(n, 5, generator=g, dtype=torch.float64),
                                        y=torch.randint(0, 3, (n,), generator=g))
data = types.SimpleNamespace(train=split(300), val=split(50), test=split(50), d_in=5, n_classes=3)
options = MetricOptions(nlc_batches=2, gradient_batches=2, proxy_batch_size=32, variability_grid=9,
                        variability_planes=1)
row = measurement.measure(build_network(spec, seed=0), data, spec, options=options, seed=4)
row.pop("measure_s")
p = PREDICTOR_BY_COLUMN.get("walk_metric")
print(json.dumps({"row": {k: repr(v) for k, v in row.items()},
                  "mean_square": repr(float(np.mean(data.train.x.numpy() ** 2))),
                  "predictor": None if p is None else [p.label, p.kind, p.log],
                  "in_grid": "walk_metric" in figure_grid("metrics")}))
"""


def installed_copy(source: Path, to: Path) -> Path:
    """``source``'s package folders copied in the installed layout (archstudy/, archstudy/sampling, ...): a
    ``PYTHONPATH`` entry that imports the copy instead of the editable install."""
    package = to / "archstudy"
    shutil.copytree(source / "archstudy", package, ignore=shutil.ignore_patterns("__pycache__"))
    for folder in FOLDERS[1:]:
        shutil.copytree(source / folder, package / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return to


def measure_in(path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(path), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def walk_a_new_metric_column(source: Path, tmp: Path) -> tuple[dict, dict]:
    """The row and the analysis' view of it before and after the walk's two edits, on copies of ``source``."""
    before = measure_in(installed_copy(source, tmp / "before"))
    after = installed_copy(source, tmp / "after") / "archstudy"
    schema = after / "study" / "experiment" / "schema.py"
    text = schema.read_text(encoding="utf-8")
    assert text.count(PROXIES_GROUP) == 1
    schema.write_text(text.replace(PROXIES_GROUP, NEW_COLUMN + PROXIES_GROUP), encoding="utf-8")
    module = after / "study" / "metrics" / "gradients.py"
    module.write_text(module.read_text(encoding="utf-8") + NEW_FUNCTION, encoding="utf-8")
    return before, measure_in(tmp / "after")


def test_a_new_metric_column_is_its_metric_module_and_the_schema(tmp_path):
    before, after = walk_a_new_metric_column(ROOT, tmp_path)
    assert "walk_metric" not in before["row"] and before["predictor"] is None
    new = after["row"].pop("walk_metric")
    assert float(new) == pytest.approx(float(after["mean_square"]), rel=1e-12)
    assert after["row"] == before["row"]  # its own stream: every other number unchanged, to the last bit
    assert after["predictor"] == ["walk metric", "metric", True] and after["in_grid"]


# -- what each package holds --------------------------------------------------------------------------------------


def packages() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("__init__.py"))


@pytest.mark.parametrize("init", packages(), ids=lambda p: str(p.relative_to(ROOT).parent))
def test_every_package_says_in_its_first_docstring_line_what_it_holds(init):
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")), clean=False)
    assert doc, f"{init.relative_to(ROOT)} has no docstring"
    lines = doc.split("\n")
    assert lines[0].strip() and (len(lines) == 1 or not lines[1].strip()), "the first line is a sentence of its own"
    assert len('"""' + lines[0]) <= 120

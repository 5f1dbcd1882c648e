"""The house rule: the layers import one way, and no two files import each other, directly or around a loop.

    sampling                 what to study: imports nothing of ours
    study (the library)      networks, training, metrics, datasets, the run machinery, performance tools:
                             of the other layers, imports sampling only
    study.experiment         the study's torch-free declarations (config, protocol, metric options, schema,
                             datasets, the NLC window rule): sampling and itself only
    analysis                 what was learned: sampling and study.experiment only (never torch)
    applications             study.cli, study.reproduce and the public API (archstudy/__init__): anything

Every ``import`` statement of every file counts, at any depth (a function's lazy import too), parsed, not run.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "archstudy": "archstudy",
    "sampling": "archstudy.sampling",
    "study": "archstudy.study",
    "analysis": "archstudy.analysis",
}
APPLICATIONS = ("archstudy.study.cli", "archstudy.study.reproduce")


def modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package's __init__) for every file of the four folders."""
    out = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            is_init = parts[-1] == "__init__"
            if is_init:
                parts = parts[:-1]
            out[".".join([package, *parts])] = (path, is_init)
    return out


MODULES = modules()


def _target(name: str) -> str | None:
    """The file-module an imported name lives in: the module itself, or the package whose attribute it is."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str) -> set[str]:
    """The modules of ours that ``module``'s file imports (``from package import submodule`` names the
    submodule; ``from package import name`` the package's __init__)."""
    path, is_init = MODULES[module]
    here = module if is_init else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            names = [f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source for a in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in FOLDERS and not name.startswith("archstudy"):
                out.add(name)  # a bare name (study.x): reported by the test below, never resolved
            elif name.startswith("archstudy") and (target := _target(name)) is not None and target != module:
                out.add(target)
    return out


GRAPH = {m: imports(m) for m in MODULES}


def layer(module: str) -> str:
    if module == "archstudy" or module.startswith(APPLICATIONS):
        return "application"
    for name in ("archstudy.sampling", "archstudy.study.experiment", "archstudy.analysis", "archstudy.study"):
        if module == name or module.startswith(name + "."):
            return name
    raise AssertionError(module)


# What each layer may import, besides itself.
MAY_IMPORT = {
    "archstudy.sampling": set(),
    "archstudy.study.experiment": {"archstudy.sampling"},
    "archstudy.study": {"archstudy.sampling", "archstudy.study.experiment"},
    "archstudy.analysis": {"archstudy.sampling", "archstudy.study.experiment"},
    "application": {"archstudy.sampling", "archstudy.study.experiment", "archstudy.study", "archstudy.analysis"},
}


def test_every_import_uses_the_archstudy_names():
    """``from study import x`` would load a second copy of a module under another name: none is written."""
    bare = sorted(f"{m} imports {t}" for m, targets in GRAPH.items() for t in targets if not t.startswith("archstudy"))
    assert not bare, bare


def test_the_layers_import_one_way():
    wrong = sorted(
        f"{m} ({layer(m)}) imports {t} ({layer(t)})"
        for m, targets in GRAPH.items()
        for t in targets
        if t.startswith("archstudy") and layer(t) != layer(m) and layer(t) not in MAY_IMPORT[layer(m)]
    )
    assert not wrong, "\n".join(wrong)


# study's own packages, lowest first: a package imports only those before it. The torch-free declarations, the
# networks, the data, the measures, the trainer, the run machinery, the performance tools, then the applications
# (the command line runs the reproductions, never the reverse).
STUDY_ORDER = (
    "archstudy.study.experiment",
    "archstudy.study.nn",
    "archstudy.study.datasets",
    "archstudy.study.metrics",
    "archstudy.study.training",
    "archstudy.study.execution",
    "archstudy.study.perf",
    "archstudy.study.reproduce",
    "archstudy.study.cli",
)


def study_package(module: str) -> str | None:
    """The package of ``STUDY_ORDER`` that holds ``module``, or None (outside study's packages)."""
    return next((p for p in STUDY_ORDER if module == p or module.startswith(p + ".")), None)


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a package of study to one after it in ``STUDY_ORDER``, naming both files."""
    out = []
    for m, targets in graph.items():
        for t in targets:
            a, b = study_package(m), study_package(t)
            if a is not None and b is not None and STUDY_ORDER.index(b) > STUDY_ORDER.index(a):
                out.append(f"{MODULES[m][0].relative_to(ROOT)} ({a}) imports {MODULES[t][0].relative_to(ROOT)} ({b})")
    return sorted(out)


def test_studys_packages_import_one_way():
    """No arrow up between study's packages (a package-level loop is a file-level one waiting to happen)."""
    assert upward(GRAPH) == []
    # the check itself: an arrow planted from the trainer to the run machinery is named
    planted = {**GRAPH, "archstudy.study.training.stack": {"archstudy.study.execution.costs"}}
    assert upward(planted) == [
        "study/training/stack.py (archstudy.study.training) imports "
        "study/execution/costs.py (archstudy.study.execution)"
    ]
    packages = {m.rsplit(".", 1)[0] if not MODULES[m][1] else m for m in MODULES if m.startswith("archstudy.study.")}
    assert {study_package(p) for p in packages} == set(STUDY_ORDER)  # every package is placed


def _package(module: str) -> str:
    return module if MODULES[module][1] else module.rpartition(".")[0]


def test_no_two_sibling_packages_import_each_other():
    """Wherever no order is declared (analysis' subpackages), two packages of one parent import one way at most."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for m, targets in GRAPH.items():
        for t in targets & MODULES.keys():
            a, b = _package(m), _package(t)
            if a != b and a.rpartition(".")[0] == b.rpartition(".")[0]:
                arrows.setdefault((a, b), []).append(f"{MODULES[m][0].relative_to(ROOT)} imports {t}")
    both = sorted(line for (a, b), lines in arrows.items() if (b, a) in arrows for line in lines)
    assert not both, "\n".join(both)


def test_layout_states_the_order_within_study():
    """docs/layout.md states ``STUDY_ORDER`` as it is declared here."""
    stated = re.search(r"`\w+`(?: < `\w+`)+", (ROOT / "docs" / "layout.md").read_text())
    assert stated and tuple(f"archstudy.study.{p}" for p in re.findall(r"`(\w+)`", stated[0])) == STUDY_ORDER


def test_the_package_facades_are_not_imported_from_inside():
    """A module imports what it needs from the module that holds it, not from its own package's __init__ (which
    imports the modules back: a loop)."""
    inside = sorted(
        f"{m} imports {t}"
        for m, targets in GRAPH.items()
        for t in targets
        if MODULES.get(t, (None, False))[1] and m.startswith(t + ".") and not m.endswith(".__main__")
    )
    assert not inside, inside


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_file_level_import_cycle():
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_loop():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_study_keeps_few_modules_outside_its_subpackages():
    loose = sorted(p.name for p in (ROOT / "study").glob("*.py"))
    assert loose == ["__init__.py"], loose


def test_pyproject_lists_every_package_folder():
    text = (ROOT / "pyproject.toml").read_text()
    listed = set(re.findall(r'"(archstudy[\w.]*)"', text.split("packages = [", 1)[1].split("]", 1)[0]))
    packages = {m for m, (_, is_init) in MODULES.items() if is_init}
    assert listed == packages


@pytest.mark.parametrize("package", ["archstudy.sampling", "archstudy.analysis", "archstudy.study.experiment"])
def test_torch_free_layers_never_load_torch(package):
    """Importing every module of the torch-free layers leaves torch (and Ray) unloaded."""
    names = [m for m in MODULES if m == package or m.startswith(package + ".")]
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in names)
        + "bad = [m for m in ('torch', 'ray') if m in sys.modules]\nassert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@pytest.mark.parametrize("bare", ["sampling", "study", "analysis"])
def test_a_bare_package_name_is_refused_not_loaded_twice(bare):
    """With the project's root on sys.path (a source tree), ``import study`` would be a second copy of every
    module, whose classes and registries differ from archstudy.study's: it is refused in one line."""
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\ntry:\n    import {bare}\nexcept ImportError as e:\n"
        f"    print(e)\nelse:\n    raise SystemExit('imported')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True, text=True).stdout
    assert out.strip() == f"import archstudy.{bare}, not {bare} (archstudy's packages live under archstudy)"


def test_a_user_module_named_analysis_does_not_shadow_the_package(tmp_path):
    (tmp_path / "analysis.py").write_text("load_results = 'the user file'\n")
    code = (
        "from archstudy.analysis import load_results; import analysis; "
        "assert callable(load_results) and analysis.load_results == 'the user file'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)


def test_a_script_beside_a_clone_named_archstudy_gets_the_package(tmp_path):
    """A script in the folder above a clone finds the clone first (its own folder leads sys.path): the clone's
    root ``__init__.py`` loads the public API in its place, where an empty namespace package used to shadow the
    installed one (``archstudy.predict_study`` missing)."""
    (tmp_path / "archstudy").symlink_to(ROOT, target_is_directory=True)
    code = (
        "import archstudy, archstudy.sampling\n"
        "assert callable(archstudy.predict_study) and callable(archstudy.run_study)\n"
        "print(archstudy.sampling.__file__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, capture_output=True, text=True)
    assert out.stdout.strip() == str(tmp_path / "archstudy" / "sampling" / "__init__.py")


def test_the_command_line_parser_loads_neither_torch_nor_ray():
    """Every command's parser is built whatever the command (``archstudy report``, ``status``, ``top`` need no
    torch): building it loads neither torch (1-2 s of every command's start) nor Ray; ``archstudy.study.perf.cases``
    declares the bench cases its help lists without torch."""
    code = (
        "import sys\nfrom archstudy.study.cli import build_parser\nbuild_parser()\n"
        "import archstudy.study.perf.cases\n"
        "bad = [m for m in ('torch', 'ray') if m in sys.modules]\nassert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@pytest.mark.parametrize("package", ["archstudy", "archstudy.study"])
def test_every_lazy_export_resolves_to_an_object_of_that_name(package):
    """``archstudy`` and ``archstudy.study`` load their public names on first use from the module each names (a
    module path as a string, so that ``import archstudy`` loads neither torch nor Ray): every one of them loads. A
    renamed module (``study.run`` became ``study.execution``) broke ``archstudy.run_study`` while every module
    imported."""
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert missing == []

"""Provenance records (``study.experiment.provenance``): what they name, the source tree's commit, the metadata value
of a file and of a pack, and the lines a resume says."""

from __future__ import annotations

import shutil
import subprocess
from importlib import metadata

import numpy
import pytest

from archstudy.study.experiment import provenance as p

GIT = shutil.which("git")


def test_a_record_names_the_installed_versions_without_importing_them():
    record = p.current(cuda="12.8", device="NVIDIA H200")
    assert set(record) == set(p.KEYS)
    assert record["numpy"] == numpy.__version__  # an independent reading: the imported module's own version
    assert record["pyarrow"] == metadata.version("pyarrow") and record["ray"] == metadata.version("ray")
    assert record["python"].count(".") == 2 and record["science_version"] == p.SCIENCE_VERSION
    assert (record["cuda"], record["device"]) == ("12.8", "NVIDIA H200")
    line = p.describe(record)
    assert all(f"{name} {record[name]}" in line for name in p.LIBRARIES) and "CUDA 12.8 on NVIDIA H200" in line


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_the_commit_is_the_source_trees_and_dirty_says_whether_tracked_files_changed():
    root = p.source_root()
    if not (root / ".git").exists():
        pytest.skip("archstudy runs from an installed copy here, not from its git checkout")
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout
    assert p.source_commit() == (head, bool(status.strip()))


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_no_commit_for_a_tree_without_its_own_repository(tmp_path, monkeypatch):
    """A copy of the tree (as a wheel installs it) has no commit, nor one inside another project's repository."""
    outer = tmp_path / "project"
    tree = outer / ".venv" / "site-packages" / "archstudy"
    tree.mkdir(parents=True)
    (tree / "pyproject.toml").write_text("[project]\nname = 'archstudy'\n")
    monkeypatch.setattr(p, "source_root", lambda: tree)
    p.source_commit.cache_clear()
    try:
        assert p.source_commit() == (None, None)
        subprocess.run(["git", "init", "-q", str(outer)], check=True)
        assert p.source_commit() == (None, None)
    finally:
        p.source_commit.cache_clear()


def test_metadata_round_trips_and_packs_merge_their_units_records():
    a, b = p.current(device="cpu"), {**p.current(device="cpu"), "torch": "9.9.9"}
    one = p.record_json([(a, 1)]).encode()
    assert p.entries({p.PROVENANCE_KEY.encode(): one}) == [(a, 1)]
    merged = p.merge([[(a, 1)], [(b, 1)], [(a, 1)], p.entries({p.PROVENANCE_KEY.encode(): one})])
    assert merged == [(a, 3), (b, 1)]
    assert p.entries(None) == [] and p.entries({p.PROVENANCE_KEY.encode(): b"not json"}) == []


def test_a_resume_says_which_versions_differ_and_counts_other_science_versions():
    mine = p.current()
    assert p.versions_line([(mine, 5)], mine) is None
    older = {**mine, "torch": "2.12.0", "commit": "0" * 40, "device": "NVIDIA H200", "cuda": "12.8"}
    line = p.versions_line([(older, 3), (mine, 2)], mine)
    assert line is not None and "torch 2.12.0 -> " in line and "3 finished architecture(s)" in line
    assert "cuda" not in line and "device" not in line  # the workers' devices are not the driver's
    assert p.other_science([(mine, 2)]) == (0, [])
    assert p.other_science([({**mine, "science_version": "0"}, 4), (mine, 1)]) == (4, ["0"])
    assert p.science_version({}) == "1"  # a record from before the key: science version 1

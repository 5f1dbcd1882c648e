"""Fixtures of the analysis tests: a synthetic finished study (``synthetic_study``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from synthetic_study import write_study


@pytest.fixture(scope="session")
def tiny_study_dir(tmp_path_factory) -> Path:
    """A small finished study with siblings, in the runner's layout (synthetic values)."""
    return write_study(tmp_path_factory.mktemp("tiny") / "study", n=8, with_siblings=True)

"""archstudy reproduce shows its progress on stderr: the reproduction, the counts of its loops with an ETA from
their rate, else the time left of the catalogue's cost at that scale (study.execution.progress.Ticker)."""

import io
from dataclasses import dataclass

import pytest

from archstudy.study.reproduce import REPRODUCTIONS
from archstudy.study.reproduce.reproduction import (
    SCALES,
    Measured,
    Reproduction,
    RunOptions,
    cost_seconds,
    run_reproduction,
)
from archstudy.study.reproduce.result import Row


def test_the_catalogues_costs_give_the_expected_seconds():
    assert cost_seconds("3.7 min measured") == pytest.approx(222.0)
    assert cost_seconds("42 s measured") == 42.0
    assert cost_seconds("2.5 h (estimated: 5 depths)") == 9000.0
    assert cost_seconds("hours (estimated)") is None and cost_seconds("not run: 165 nets") is None
    # every reproduction's quick scale was measured: its line counts down from it
    assert all(cost_seconds(r.cost["quick"]) for r in REPRODUCTIONS.values())
    assert set(SCALES) == {"tiny", "quick", "paper"}


def _counting(ctx) -> Measured:
    """Three units, each said and counted, as the reproductions' loops do (``Context.say``, ``Context.count``)."""
    for i in range(3):
        ctx.count(i, 3, "nets trained")
        ctx.say(f"counting: net {i}")
    ctx.count(3, 3, "nets trained")
    return Measured(rows=[Row("x", 1.0, 1.0, "equal", True)])


@dataclass(frozen=True)
class Units:
    units: int = 3


COUNTING = Reproduction(
    name="counting",
    paper="none",
    source="none",
    summary="three units counted",
    scales={s: Units() for s in SCALES},
    cost={"tiny": "2 s measured", "quick": "1 min measured", "paper": "hours (estimated)"},
    reproduce=_counting,
)


def test_a_reproduction_says_what_runs_and_counts_its_units(tmp_path):
    log = io.StringIO()
    run_reproduction(COUNTING, tmp_path, RunOptions(scale="tiny", progress=log))
    lines = log.getvalue().splitlines()
    assert lines[0] == "archstudy: reproduce counting (tiny): 0s, about 2s left"  # at once, before any work
    assert lines[1:4] == ["counting: net 0", "counting: net 1", "counting: net 2"]
    assert lines[-1].startswith("archstudy: reproduce counting (tiny): 3/3 nets trained, ")
    assert lines[-1].endswith("ETA 0s")
    # nlc-figure1 counts its architectures the same way
    assert "ctx.count(" in open(REPRODUCTIONS["nlc-figure1"].reproduce.__code__.co_filename).read()

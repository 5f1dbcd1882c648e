"""``archstudy reproduce --list`` opens with a table: a row per reproduction, in the order ``reproduce all`` runs
them, with its paper's short title and its cost at each scale; the entries in prose follow."""

from __future__ import annotations

import pytest

from archstudy.study.cli import main
from archstudy.study.cli.reproduce import short_cost
from archstudy.study.reproduce import REPRODUCTIONS
from archstudy.study.reproduce.reproduction import SCALES


@pytest.mark.parametrize(
    ("declared", "cell"),
    [
        ("3.7 min measured", "3.7 min"),
        ("42 s", "42 s"),
        ("2.5 h (estimated)", "2.5 h est."),
        ("days on 2 cores (estimated): a GPU job", "days est."),
        ("(estimated) hours: 7 runs of the full protocol", "hours est."),
        ("not measured at an idle machine (about 2 min at load 12)", "not measured"),
        ("not run: 165 nets x 100 runs, GPU hours (estimated)", "not run"),
    ],
)
def test_a_declared_cost_is_cut_to_its_time(declared, cell):
    assert short_cost(declared) == cell


def test_the_list_opens_with_a_table_of_every_reproduction(capsys):
    assert main(["reproduce", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "PAPER", "TINY", "QUICK", "PAPER-SCALE"]
    rows = lines[1 : 1 + len(REPRODUCTIONS)]
    assert [row.split()[0] for row in rows] == list(REPRODUCTIONS)
    assert lines[1 + len(REPRODUCTIONS)] == ""  # the prose entries follow the table
    for row, r in zip(rows, REPRODUCTIONS.values()):
        assert row.rstrip().endswith(short_cost(r.cost[SCALES[-1]]))
        assert all(short_cost(r.cost[s]) in row for s in SCALES)
    assert max(len(line) for line in lines) <= 100

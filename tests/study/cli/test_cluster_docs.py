"""docs/cluster.md's sample of `archstudy cluster rehearse` names the node types cluster.yaml has, and no other."""

import re
from pathlib import Path

from archstudy.study.execution.cluster import Scale, describe, read_cluster_file

ROOT = Path(__file__).resolve().parents[3]


def test_the_sample_table_is_the_cluster_files():
    page = (ROOT / "docs" / "cluster.md").read_text()
    table = describe(read_cluster_file(ROOT / "cluster.yaml"), Scale())
    lines = page.splitlines()
    start = lines.index(table[0])
    assert lines[start : start + len(table)] == table
    types = {line.split()[0] for line in table[1:]}
    named = set(re.findall(r"\b(gpu\.[a-z0-9]+|head\.[a-z0-9]+)\b", page))
    assert named <= types, named - types

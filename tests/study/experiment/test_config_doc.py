"""docs/config.md: every study key, resource, protocol field, metric option, space field and spec field, its tables
generated from the declarations (``study.experiment.config.update_doc``)."""

from pathlib import Path

import pytest

from archstudy.sampling import ArchSpec, Space
from archstudy.study.experiment import config
from archstudy.study.experiment.config import REGENERATE, Resources, StudyConfig, doc_tables, update_doc
from archstudy.study.experiment.metric_options import MetricOptions
from archstudy.study.experiment.protocol import Protocol

DOC = Path(__file__).resolve().parents[3] / "docs" / "config.md"


def test_docs_config_md_holds_the_generated_tables():
    text = DOC.read_text(encoding="utf-8")
    assert update_doc(text) == text, f"docs/config.md is out of date with the declarations: run `{REGENERATE}`"
    for cls in (StudyConfig, Resources, Protocol, MetricOptions, Space, ArchSpec):
        table = doc_tables()[cls.__name__]
        assert table in text
        for name, declared in cls.declarations().items():
            assert f"| `{name}` | " in table and declared.doc.replace("|", "\\|") in table, (cls.__name__, name)


def test_a_stale_table_is_rewritten_by_the_command_the_failure_names(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    stale = text.replace("| `max_retries` | an integer >= 0 | `2` |", "| `max_retries` | an integer >= 1 | `3` |")
    assert stale != text and update_doc(stale) == text
    path = tmp_path / "config.md"
    path.write_text(stale, encoding="utf-8")
    assert config.main([str(path)]) == 0 and path.read_text(encoding="utf-8") == text
    assert config.main([]) == 2


def test_a_doc_without_a_generated_table_is_refused():
    text = DOC.read_text(encoding="utf-8")
    start = text.index("<!-- fields of Protocol")
    shortened = text[:start] + text[text.index("<!-- end -->", start) + len("<!-- end -->") :]
    with pytest.raises(ValueError, match="expected one of each of StudyConfig, Resources, Protocol"):
        update_doc(shortened)

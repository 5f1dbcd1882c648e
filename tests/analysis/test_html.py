"""The HTML pieces every page shares (analysis.html): long values fold, a paper's *short title* is set in italics."""

from __future__ import annotations

from archstudy.analysis.html import emphasised, folded, plain


def test_a_papers_short_title_is_in_italics_and_its_asterisks_gone():
    text = "Philipp and Carbonell, *The Nonlinearity Coefficient* & <b>"
    assert emphasised(text) == "Philipp and Carbonell, <i>The Nonlinearity Coefficient</i> &amp; &lt;b&gt;"
    assert plain(text) == "Philipp and Carbonell, The Nonlinearity Coefficient & <b>"
    assert emphasised("2 * 3 = 6") == "2 * 3 = 6"  # a lone asterisk stays


def test_a_long_value_folds_into_details_holding_all_of_it():
    assert folded("short <x>") == "short &lt;x&gt;"
    long = '{"protocol": "' + "x" * 800 + '"}'
    html = folded(long, limit=90)
    assert html.startswith('<details class="fold"><summary>') and f"({len(long):,} characters)" in html
    summary = html.split("<summary>")[1].split("</summary>")[0]
    assert len(summary) < 120 and long.replace('"', "&quot;") in html


def test_row_classes_mark_their_rows_and_leave_the_tables_own_class():
    """The row's class was written into the table's own (``<table class=" class="best"">``), the loop variable
    shadowing the ``cls`` argument."""
    from archstudy.analysis.html import table

    out = table(["a"], [["1"], ["2"]], row_classes=["", "best"])
    assert (
        out == '<table><thead><tr><th class="l">a</th></tr></thead><tbody><tr><td class="l">1</td></tr>'
        '<tr class="best"><td class="l">2</td></tr></tbody></table>'
    )
    assert table(["a"], [["1"]], row_classes=["best"], cls="wide").startswith('<table class="wide">')

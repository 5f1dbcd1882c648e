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

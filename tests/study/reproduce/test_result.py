"""The one rule for printed numbers (``study/reproduce/result.py``), by hand."""

import math

import numpy as np
import pytest

from archstudy.study.reproduce import nlc_table1
from archstudy.study.reproduce.result import (
    ROW_KEYS,
    Result,
    Row,
    format_table,
    mean_spread,
    median_spread,
    median_standard_error,
    printed_precision,
    printed_tolerance,
    printed_unit,
)


def test_printed_unit_and_precision_are_the_last_printed_digit():
    assert printed_unit("0.0024") == pytest.approx(1e-4) and printed_precision("0.0024") == pytest.approx(5e-5)
    assert printed_unit("95.8") == pytest.approx(0.1) and printed_precision("1.22") == pytest.approx(0.005)
    assert printed_unit("9952") == pytest.approx(1.0) and printed_precision("4.90e17") == pytest.approx(5e14)


def test_an_estimated_print_gets_one_unit_an_exact_one_half_plus_the_spread():
    assert printed_tolerance("1.22")[0] == pytest.approx(0.005)
    tol, why = printed_tolerance("0.0024", estimated=True)
    assert tol == pytest.approx(1e-4) and "estimate" in why
    tol, why = printed_tolerance("85.27", estimated=True, spread=(0.7, "2 SE"))
    assert tol == pytest.approx(0.71) and why.endswith("+ 2 SE")
    # line E's sigmoid: the exact 0.0023465 lies within one unit of the printed estimate 0.0024, not within half
    assert Row.printed("q", "0.0024", 0.0023465, estimated=True).ok
    assert not Row.printed("q", "0.0024", 0.0023465).ok
    assert not Row.printed("q", "0.0024", 0.00229, estimated=True).ok
    assert not Row.printed("q", "1.0", float("nan"), estimated=True).ok


def test_mean_spread_is_two_standard_errors_of_a_difference_of_means():
    amount, why = mean_spread([85.0, 86.0], 5, 0.35)
    assert amount == pytest.approx(2 * 0.35 * math.sqrt(1 / 5 + 1 / 2)) and "sd 0.35" in why
    amount, why = mean_spread([70.0, 74.0, 78.0], 5)
    assert amount == pytest.approx(2 * 4.0 * math.sqrt(1 / 5 + 1 / 3)) and "our sd 4" in why
    assert mean_spread([70.0], 5)[0] == 0.0  # one run and no printed spread: the print's unit alone


def test_median_spread_uses_the_bootstrap_standard_error_of_ours():
    values = [1.0, 1.1, 1.2, 1.3, 1.25]
    se = median_standard_error(values)
    assert se == median_standard_error(values)  # seeded
    v = np.asarray(values)  # an independent bootstrap, many more resamples: the same standard error within 10%
    idx = np.random.default_rng(7).integers(0, 5, size=(20000, 5))
    assert se == pytest.approx(np.std(np.median(v[idx], axis=1)), rel=0.1)
    amount, _ = median_spread(values, 10)
    assert amount == pytest.approx(2 * se * math.sqrt(1 + 5 / 10))
    assert median_spread([1.0, 1.0, 1.0])[0] == 0.0  # no spread in ours: none assumed for the paper's


def test_derived_rows_carry_the_source_tolerance_through_the_derivative():
    # line C relu: 1.211^48 with 1.211 known to one unit (0.001): 48 * 1.211^47 * 0.001 + 0.5 (9793's rounding)
    a = 1.211
    row = Row.derived("q", "9793", 1.2112**48, "1.211", 48 * a**47, "line A^48", estimated=True)
    tol = 48 * a**47 * 0.001 + 0.5
    assert row.tolerance.startswith(f"±{tol:.3g}") and row.ok == (abs(1.2112**48 - 9793) <= tol)
    assert not Row.derived("q", "9793", 9793 + 1.01 * tol, "1.211", 48 * a**47, "line A^48", estimated=True).ok


def test_table1_line_c_is_the_printed_line_a_to_the_48th_power():
    """Each printed line C value is the printed line A value to the 48th power, to C's printed precision (E.4:
    "simply the exponentiated value"): what makes ``Row.derived`` the right comparison."""
    for act, a in nlc_table1.LINE_A.items():
        c = nlc_table1.LINE_C[act]
        assert abs(float(a) ** nlc_table1.POWER - float(c)) <= printed_precision(c), act


# -- the verdict: agrees, differs, cannot tell; the claim a row checks ---------------------------------------------


def test_a_row_that_cannot_test_its_claim_says_so_and_keeps_its_comparison():
    agrees = Row.printed("nlc:depth=2", "1.22", 1.224).checking("Table 2, depth 2")
    assert (agrees.verdict, agrees.ok, agrees.checks) == ("agrees", True, "Table 2, depth 2")
    assert Row.printed("q", "1.22", 1.3).verdict == "differs"
    unsure = agrees.cannot_tell("no net left the best constant")
    assert unsure.verdict == "cannot tell" and unsure.ok and unsure.tolerance == agrees.tolerance
    assert not unsure.agrees and unsure.checks == "Table 2, depth 2"
    with pytest.raises(ValueError, match="reason"):
        agrees.cannot_tell(" ")
    d = unsure.to_dict()
    assert tuple(d) == ROW_KEYS and d["verdict"] == "cannot tell" and d["cannot_tell"] == unsure.why_cannot_tell
    assert d["ok"] is False  # "ok" in the JSON is "agrees": an old reader never counts this row as agreeing
    assert Row.from_dict(agrees.to_dict()) == agrees
    back = Row.from_dict(d)
    assert back.verdict == "cannot tell" and back.why_cannot_tell == unsure.why_cannot_tell
    assert back.checks == d["claim"]
    # a row without a named claim is its own claim, and reads back without one
    lone = Row.printed("q", "1.22", 1.3)
    assert lone.checks == "q" and lone.to_dict()["claim"] == "q" and Row.from_dict(lone.to_dict()) == lone


def test_rows_written_before_the_verdict_read_with_the_verdict_of_ok():
    old = {"quantity": "q", "paper": 1.22, "measured": 1.3, "tolerance": "±0.005", "ok": False}
    row = Row.from_dict(old)
    assert row.verdict == "differs" and row.checks == "q" and row.why_cannot_tell is None
    assert Row.from_dict({**old, "ok": True}).verdict == "agrees"
    with pytest.raises(ValueError, match="contradicts"):
        Row.from_dict({**old, "verdict": "agrees"})
    with pytest.raises(ValueError, match="none of"):
        Row.from_dict({**old, "verdict": "maybe"})


def test_a_result_counts_rows_by_verdict_and_claims_with_their_rows():
    rows = [
        Row.printed("b:relu", "1.22", 1.22).checking("line B"),
        Row.printed("b:tanh", "1.09", 1.5).checking("line B"),
        Row.printed("a:relu", "1.211", 1.211),
        Row.claim("c", 0.1, True, "claim").cannot_tell("every run ties"),
    ]
    result = Result("x", "p", "quick", 1.0, rows)
    assert (result.passed, result.count("differs"), result.count("cannot tell")) == (2, 1, 1)
    assert list(result.claims) == ["line B", "a:relu", "c"] and [r.quantity for r in result.claims["line B"]] == [
        "b:relu",
        "b:tanh",
    ]
    table = format_table(result)
    assert "2 of 4 rows agree with the paper, 1 differ, 1 cannot tell; 3 claims checked" in " ".join(table.split())
    assert "cannot tell, c: every run ties" in table


def test_the_table_fits_100_columns_with_the_verdict_first_and_whole_when_wide():
    long = "x" * 150
    rows = [Row.claim(f"quantity:{long}", 1.0, False, f"a claim worded at length {long}").cannot_tell(long)]
    result = Result("x", "p", "quick", 1.0, [*rows, Row.printed("q", "1.22", 1.22)])
    narrow = format_table(result).splitlines()
    assert max(len(line) for line in narrow) <= 100
    assert narrow[1].startswith("cannot tell") and narrow[2].startswith("agrees")
    wide = format_table(result, wide=True)
    assert f"quantity:{long}" in wide and f"a claim worded at length {long}" in wide


def test_the_page_shows_each_rows_claim_and_verdict_with_the_reason_it_cannot_tell():
    from archstudy.study.reproduce.page import render

    rows = [Row.printed("q", "1.22", 1.22).checking("Table 1, line B"), Row.claim("c", 0.3, True, "x").cannot_tell("r")]
    page = render(Result("x", "Chen and Ge, *T*", "quick", 1.0, rows), [])
    assert '<tr class="agrees"><td class="l">Table 1, line B</td><td class="l">q</td>' in page
    assert '<tr class="cannot-tell">' in page and "cannot tell: r</td>" in page
    assert "1 of 2 rows agree with the paper, 1 cannot tell; 2 claims checked" in page

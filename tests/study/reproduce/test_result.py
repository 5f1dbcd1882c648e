"""The rows of a reproduction (``study/reproduce/result.py``): the printed number's band, by hand; a row's verdict,
its claim and its JSON with the comparison (replicates, interval, test, p); the table and the page."""

import json
import math

import numpy as np
import pytest

from archstudy.study.reproduce import nlc_table1
from archstudy.study.reproduce.result import (
    ROW_KEYS,
    Result,
    Row,
    format_table,
    printed_band,
    printed_precision,
    printed_unit,
)
from archstudy.study.reproduce.verdict import exact, log_mean, mean


def test_printed_unit_and_precision_are_the_last_printed_digit():
    assert printed_unit("0.0024") == pytest.approx(1e-4) and printed_precision("0.0024") == pytest.approx(5e-5)
    assert printed_unit("95.8") == pytest.approx(0.1) and printed_precision("1.22") == pytest.approx(0.005)
    assert printed_unit("9952") == pytest.approx(1.0) and printed_precision("4.90e17") == pytest.approx(5e14)


def test_an_estimated_print_gets_one_unit_an_exact_one_half():
    (lo, hi), _ = printed_band("1.22", exact(1.22))
    assert (lo, hi) == pytest.approx((1.215, 1.225))
    (lo, hi), why = printed_band("0.0024", exact(0.0023465), estimated=True)
    assert (lo, hi) == pytest.approx((0.0023, 0.0025)) and "estimate" in why
    # line E's sigmoid: the exact 0.0023465 lies within one unit of the printed estimate 0.0024, not within half
    assert Row.printed("q", "0.0024", exact(0.0023465), estimated=True).verdict == "agrees"
    assert Row.printed("q", "0.0024", exact(0.0023465)).verdict == "differs"
    assert Row.printed("q", "1.0", exact(float("nan")), estimated=True).verdict == "cannot tell"


def test_the_band_of_a_statistic_adds_two_standard_errors_of_the_papers_runs():
    ours = mean([85.0, 86.0, 87.0])
    (lo, hi), why = printed_band("85.27", ours, estimated=True, paper_runs=5, paper_sd=0.35)
    assert hi - 85.27 == pytest.approx(0.01 + 2 * 0.35 / math.sqrt(5)) and "the paper's sd 0.35" in why
    (lo, hi), why = printed_band("85.27", ours, estimated=True, paper_runs=1)  # one run: spread as ours (sd 1)
    assert hi - 85.27 == pytest.approx(0.01 + 2 * 1.0) and "our sd 1" in why
    # a median of the paper's 10 runs, ours on the logs: a factor exp(2 sqrt(pi / 2) sd(log) / sqrt(10))
    nlc = log_mean([7.0, 7.2, 6.9])
    (lo, hi), _ = printed_band("7.06", nlc, estimated=True, paper_runs=10, median=True)
    factor = math.exp(2 * math.sqrt(math.pi / 2) * np.std(np.log([7.0, 7.2, 6.9]), ddof=1) / math.sqrt(10))
    assert (lo, hi) == pytest.approx(((7.06 - 0.01) / factor, (7.06 + 0.01) * factor))


def test_derived_rows_carry_the_source_tolerance_through_the_derivative():
    # line C relu: 1.211^48 with 1.211 known to one unit (0.001): 48 * 1.211^47 * 0.001 + 0.5 (9793's rounding)
    a = 1.211
    row = Row.derived("q", "9793", exact(1.2112**48), "1.211", 48 * a**47, "line A^48", estimated=True)
    tol = 48 * a**47 * 0.001 + 0.5
    assert row.tolerance.startswith(f"±{tol:.3g} (") and row.agrees == (abs(1.2112**48 - 9793) <= tol)
    beyond = exact(9793 + 1.01 * tol)
    assert Row.derived("q", "9793", beyond, "1.211", 48 * a**47, "line A^48", estimated=True).verdict == "differs"


def test_table1_line_c_is_the_printed_line_a_to_the_48th_power():
    """Each printed line C value is the printed line A value to the 48th power, to C's printed precision (E.4:
    "simply the exponentiated value"): what makes ``Row.derived`` the right comparison."""
    for act, a in nlc_table1.LINE_A.items():
        c = nlc_table1.LINE_C[act]
        assert abs(float(a) ** nlc_table1.POWER - float(c)) <= printed_precision(c), act


# -- the verdict: agrees, differs, cannot tell; the claim a row checks ---------------------------------------------


def test_a_row_that_cannot_test_its_claim_says_so_and_its_json_carries_the_comparison():
    agrees = Row.printed("nlc:depth=2", "1.22", exact(1.2204)).checking("Table 2, depth 2")
    assert (agrees.verdict, agrees.ok, agrees.checks) == ("agrees", True, "Table 2, depth 2")
    unsure = agrees.cannot_tell("no net left the best constant")
    assert unsure.verdict == "cannot tell" and unsure.tolerance == agrees.tolerance and not unsure.agrees
    with pytest.raises(ValueError, match="reason"):
        agrees.cannot_tell(" ")
    d = unsure.to_dict()
    assert tuple(d) == ROW_KEYS and d["verdict"] == "cannot tell" and d["cannot_tell"] == unsure.why_cannot_tell
    assert d["ok"] is False  # "ok" in the JSON is "agrees": an old reader never counts this row as agreeing
    assert d["exact"] is True and d["replicates"] == 1 and d["p"] is None and d["test"].startswith("exact")
    sampled = Row.claim("c", mean([1.0, 1.2, 1.1]), (0.5, math.inf), "above 0.5").to_dict()
    assert sampled["replicates"] == 3 and sampled["values"] == [1.0, 1.2, 1.1] and sampled["region"] == [0.5, None]
    assert sampled["interval"][0] < 1.1 < sampled["interval"][1] and sampled["p"] == 1.0 and sampled["test"] == "t"
    assert json.loads(json.dumps(sampled)) == sampled
    lone = Row.printed("q", "1.22", exact(1.3))
    assert lone.checks == "q" and lone.to_dict()["claim"] == "q" and lone.verdict == "differs"


def test_a_result_counts_rows_by_verdict_and_claims_with_their_rows():
    rows = [
        Row.printed("b:relu", "1.22", exact(1.22)).checking("line B"),
        Row.printed("b:tanh", "1.09", exact(1.5)).checking("line B"),
        Row.printed("a:relu", "1.211", exact(1.211)),
        Row.claim("c", mean([0.1, 0.2, 0.15]), (0.0, 1.0), "claim").cannot_tell("every run ties"),
    ]
    result = Result("x", "p", "quick", 1.0, rows)
    assert (result.passed, result.count("differs"), result.count("cannot tell")) == (2, 1, 1)
    assert list(result.claims) == ["line B", "a:relu", "c"] and [r.quantity for r in result.claims["line B"]] == [
        "b:relu",
        "b:tanh",
    ]
    table = format_table(result)
    assert (
        "2 of 4 rows agree with the paper, 1 differ, 1 cannot tell; 3 claims checked; 3 replicates a row, 3 exact"
        in (" ".join(table.split()))
    )
    assert "cannot tell, c: every run ties" in table and "n=3" in table


def test_the_table_fits_100_columns_with_the_verdict_first_and_whole_when_wide():
    long = "x" * 150
    rows = [Row.claim(f"quantity:{long}", mean([1.0, 2.0, 3.0]), (0.0, 1.0), f"a claim {long}").cannot_tell(long)]
    result = Result("x", "p", "quick", 1.0, [*rows, Row.printed("q", "1.22", exact(1.22))])
    narrow = format_table(result).splitlines()
    assert max(len(line) for line in narrow) <= 100
    assert narrow[1].startswith("cannot tell") and narrow[2].startswith("agrees")
    wide = format_table(result, wide=True)
    assert f"quantity:{long}" in wide and f"a claim {long}" in wide


def test_the_page_shows_each_rows_claim_and_verdict_with_the_reason_it_cannot_tell():
    from archstudy.study.reproduce.page import render

    rows = [
        Row.printed("q", "1.22", exact(1.22)).checking("Table 1, line B"),
        Row.claim("c", mean([0.3, 0.2, 0.4]), (0.0, 1.0), "x").cannot_tell("r"),
    ]
    page = render(Result("x", "Chen and Ge, *T*", "quick", 1.0, rows), [])
    assert '<tr class="agrees"><td class="l">Table 1, line B</td><td class="l">q</td>' in page
    assert '<tr class="cannot-tell">' in page and "cannot tell: r</td>" in page
    assert "1 of 2 rows agree with the paper, 1 cannot tell; 2 claims checked" in page

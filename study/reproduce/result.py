"""What a reproduction produces: rows (quantity, the paper's value, ours with its replicates and interval, the
region where ours agrees, the verdict), the JSON file, and the table printed on the terminal.

Every row is judged by one rule (``verdict``): it holds its replicates and the interval they give
(``verdict.Evidence``: t, t on logs, Welch, Mann-Whitney, bootstrap, each replicate, or an
exact value), and a region where ours agrees; it agrees when the interval lies within the region, differs when
the page-adjusted p-value of "the quantity lies in the region" is below 5% (Holm over the page's rows, applied
by ``Result``), and cannot tell otherwise, or on fewer than 3 replicates unless exact. The region comes in one of
four ways:

* ``Row.printed``: the paper prints a number P (``printed_band``): P within half a unit of its last printed
  digit, or one unit where the paper's value was itself estimated (a numerical integral, a sampled estimate: its
  last digit may be off by one), widened by the paper's own sampling error where its number is a statistic over
  random runs: two standard errors of that statistic over the paper's runs, each run spread by the paper's
  stated standard deviation where it states one, else by ours (the same experiment's); on the logs (a factor)
  for a quantity spread by a factor. A value the paper computed from another printed one (Table 1's line C is
  line A to the 48th power) carries that one's tolerance through the derivative (``Row.derived``); ``Row.close``
  takes a tolerance computed elsewhere.
* ``Row.ratio``: the paper's value within a factor, for a claim of that strength ("constant within 1.5x").
* ``Row.claim``: the paper shows only a figure (``paper`` is null); the region is the claim's half-line or
  interval, stated in ``tolerance``.

A failing row is a finding, never a reason to widen its tolerance. Besides the rule, a reproduction may say
that a row "cannot tell" for a reason of its own (``Row.cannot_tell(why)``): the run at this scale cannot test
the claim, e.g. no net left the best constant; a row that would agree only because nothing trained is "cannot
tell". Each row names the claim it checks (``Row.checking``: the paper's table cell or the figure's stated
claim; read as ``Row.checks``), so a summary counts claims as well as rows.

The JSON shape: ``{"name", "paper", "scale", "seconds", "rows": [{"quantity", "paper", "measured",
"tolerance", "region", "ok", "verdict", "claim", "cannot_tell", "replicates", "interval", "test", "p",
"p_page", "exact", "values", "against"}], ...}`` with further top-level keys per reproduction (``source``,
``data``, ``settings``, ``note``, ...): ``measured`` the estimate, ``region`` [lo, hi] where it agrees (null for
an open end), ``interval`` its interval, ``values`` the per-replicate values (``against``: a comparison's other
group), ``p`` the p-value of "the quantity lies in the region" and ``p_page`` that after Holm over the page,
``ok`` whether the row agrees (so a reader of ``ok`` alone never counts a row that cannot tell as agreeing).
"""

from __future__ import annotations

import json
import math
import os
import textwrap
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, cast

from pathlib import Path

import numpy as np

from archstudy.sampling.constraints import plain

from . import verdict as rule
from .verdict import AGREES, CANNOT_TELL, DIFFERS, Evidence

ROW_KEYS = (
    "quantity",
    "paper",
    "measured",
    "tolerance",
    "region",
    "ok",
    "verdict",
    "claim",
    "cannot_tell",
    "replicates",
    "interval",
    "test",
    "p",
    "p_page",
    "exact",
    "values",
    "against",
)
VERDICTS = (AGREES, DIFFERS, CANNOT_TELL)
MEDIAN_SE = math.sqrt(math.pi / 2)  # a median's standard error over a mean's, normal runs (the paper's medians)


@dataclass(frozen=True)
class Row:
    quantity: str
    paper: float | None
    evidence: Evidence
    region: tuple[float, float]  # where ours agrees: the paper's tolerance band, or the claim's region
    tolerance: str  # the region in words
    claim_name: str = ""  # the paper's claim this row checks (a table cell, a figure's stated claim); "" = quantity
    scale_reason: str | None = None  # why this run cannot test the claim (``cannot_tell``); None when it can
    p_page: float | None = None  # the p-value after Holm over the page's rows (``Result``); None: the row's own

    @property
    def measured(self) -> float | None:
        """The estimate (None, null in JSON, when nothing finite was measured)."""
        return _finite_or_none(self.evidence.estimate)

    @property
    def p(self) -> float | None:
        """The p-value of "the quantity lies in the region" (``verdict.Evidence.p``), None without a test."""
        return self.evidence.p(*self.region)

    def _judged(self) -> tuple[str, str | None]:
        if self.scale_reason is not None:
            return CANNOT_TELL, self.scale_reason
        return rule.judge(self.evidence, *self.region, self.p_page)

    @property
    def verdict(self) -> str:
        """ "agrees", "differs" or "cannot tell", by ``verdict.judge`` (or the row's own reason it cannot tell)."""
        return self._judged()[0]

    @property
    def why_cannot_tell(self) -> str | None:
        """Why the row cannot tell (its scale's reason, or the rule's), None when it agrees or differs."""
        return self._judged()[1]

    @property
    def agrees(self) -> bool:
        return self.verdict == AGREES

    ok = agrees  # the JSON's "ok" and older callers: whether the row agrees

    @property
    def checks(self) -> str:
        """The claim this row checks: ``claim_name``, or the quantity when none was named (its own claim)."""
        return self.claim_name or self.quantity

    def cannot_tell(self, why: str) -> "Row":
        """This row with the verdict "cannot tell": ``why`` says why the run cannot test the claim (e.g. "no net
        left the best constant"); its evidence and region are kept."""
        if not why.strip():
            raise ValueError("a 'cannot tell' verdict needs its reason")
        return replace(self, scale_reason=why)

    def checking(self, claim: str) -> "Row":
        """This row, named as checking ``claim`` (the paper's table cell or figure's stated claim)."""
        return replace(self, claim_name=claim)

    @classmethod
    def close(cls, quantity: str, paper: float, evidence: Evidence, tolerance: float, why: str) -> "Row":
        """The paper's number against ours: the region paper +- ``tolerance`` (absolute), ``why`` its source."""
        region = (float(paper) - tolerance, float(paper) + tolerance)
        return cls(quantity, float(paper), evidence, region, f"±{tolerance:.3g} ({why})")

    @classmethod
    def printed(
        cls,
        quantity: str,
        paper_text: str,
        evidence: Evidence,
        *,
        estimated: bool = False,
        paper_runs: int | None = None,
        paper_sd: float | None = None,
        median: bool = False,
        extra: tuple[float, str] = (0.0, ""),
    ) -> "Row":
        """The paper's printed number (``paper_text`` as printed, e.g. "0.0024") against ours, in the band of
        ``printed_band`` (module docstring)."""
        region, words = printed_band(
            paper_text,
            evidence,
            estimated=estimated,
            paper_runs=paper_runs,
            paper_sd=paper_sd,
            median=median,
            extra=extra,
        )
        return cls(quantity, float(paper_text), evidence, region, words)

    @classmethod
    def derived(
        cls,
        quantity: str,
        paper_text: str,
        evidence: Evidence,
        source_text: str,
        derivative: float,
        source: str,
        *,
        estimated: bool = False,
    ) -> "Row":
        """The paper's printed number ``paper_text``, which it computed as f(a) from its printed ``source_text`` a
        (``source`` names it, e.g. "line A^48"), against ours: a's tolerance (one unit of its last digit when
        ``estimated``, else half) times |f'(a)| = |``derivative``|, plus half a unit of the print of
        ``paper_text`` (its own rounding)."""
        tol_a = printed_unit(source_text) * (1.0 if estimated else 0.5)
        tol = abs(derivative) * tol_a + printed_unit(paper_text) / 2
        what = "one unit" if estimated else "half a unit"
        return cls.close(
            quantity,
            float(paper_text),
            evidence,
            tol,
            f"the paper's {source} from its printed {source_text}: {what} of that, through the "
            f"derivative ({abs(derivative) * tol_a:.3g}), + the rounding of the printed {paper_text}",
        )

    @classmethod
    def ratio(cls, quantity: str, paper: float, evidence: Evidence, factor: float, why: str) -> "Row":
        """The paper's number against ours: the region paper / factor .. paper * factor."""
        region = (float(paper) / factor, float(paper) * factor)
        return cls(quantity, float(paper), evidence, region, f"within {factor:g}x ({why})")

    @classmethod
    def claim(cls, quantity: str, evidence: Evidence, region: tuple[float, float], claim: str) -> "Row":
        """A quantity the paper shows only in a figure: ``region`` where the claim holds (an end may be
        infinite), ``claim`` what it says."""
        return cls(quantity, None, evidence, (float(region[0]), float(region[1])), claim)

    def to_dict(self) -> dict[str, Any]:
        e = self.evidence
        test = e.test + (f"; {e.left_out} replicate(s) not finite, left out" if e.left_out else "")
        return {
            "quantity": self.quantity,
            "paper": self.paper,
            "measured": self.measured,
            "tolerance": self.tolerance,
            "region": [_finite_or_none(x) for x in self.region],
            "ok": self.agrees,
            "verdict": self.verdict,
            "claim": self.checks,
            "cannot_tell": self.why_cannot_tell,
            "replicates": e.replicates,
            "interval": [_finite_or_none(x) for x in e.interval],
            "test": test,
            "p": self.p,
            "p_page": self.p_page,
            "exact": e.exact,
            "values": _plain_values(e.values),
            "against": _plain_values(e.against),
        }


def with_page_p(rows: list[Row]) -> list[Row]:
    """The rows with ``p_page``: each testable row's p-value adjusted by Holm over the page's testable rows (those
    a verdict may rest on: no reason of their own to cannot tell, enough replicates, not exact)."""
    testable = [r.p if r.scale_reason is None and r.evidence.replicates >= rule.MIN_REPLICATES else None for r in rows]
    adjusted = rule.holm(testable)
    return [replace(r, p_page=a) for r, a in zip(rows, adjusted)]


def _plain_values(values) -> list:
    def one(v):
        if isinstance(v, (tuple, list)):
            return [one(x) for x in v]
        return _finite_or_none(v) if isinstance(v, (float, int, np.floating, np.integer)) else v

    return [one(v) for v in values]


def _finite_or_none(x: float | np.floating | np.integer) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def printed_precision(value: str) -> float:
    """Half a unit in the last printed digit of a number as the paper prints it ("1.22" -> 0.005,
    "95.8" -> 0.05, "9952" -> 0.5, "4.90e17" -> 5e14): how far the true value may lie from the print."""
    exponent = cast(int, Decimal(value).as_tuple().exponent)  # a number's ("n", "N", "F": NaN, infinity)
    return 0.5 * 10.0**exponent


def printed_unit(value: str) -> float:
    """One unit of the last printed digit of a number as the paper prints it ("0.0024" -> 0.0001, "95.8" -> 0.1)."""
    return 10.0 ** cast(int, Decimal(value).as_tuple().exponent)  # a number's (as ``printed_precision``)


def printed_band(
    paper_text: str,
    evidence: Evidence,
    *,
    estimated: bool = False,
    paper_runs: int | None = None,
    paper_sd: float | None = None,
    median: bool = False,
    extra: tuple[float, str] = (0.0, ""),
) -> tuple[tuple[float, float], str]:
    """((lo, hi), in words): where a printed number ``paper_text`` may lie from the value it reports: half a unit
    of its last printed digit (one unit where ``estimated``), plus ``extra`` = (amount, what it is), and, for a
    statistic over ``paper_runs`` random runs, two of its standard errors: sd / sqrt(paper_runs) for a mean,
    sqrt(pi / 2) times that for a ``median`` of normal runs, sd the paper's stated ``paper_sd`` or else the
    standard deviation of our replicates. Where our interval was made on the logs (``evidence.log``) that term is
    a factor: the standard deviation of our log values."""
    unit = printed_unit(paper_text)
    paper = float(paper_text)
    base, words = (
        (unit, f"one unit of the printed {paper_text} (the paper's value is an estimate)")
        if estimated
        else (unit / 2, f"half a unit of the printed {paper_text}")
    )
    amount, extra_words = extra
    if amount:
        base, words = base + amount, f"{words} + {extra_words}"
    if paper_runs is None:
        return (paper - base, paper + base), f"±{base:.3g} ({words})"
    factor, what = (MEDIAN_SE, "median") if median else (1.0, "mean")
    values = np.asarray([v for v in evidence.values if math.isfinite(v) and (v > 0 or not evidence.log)])
    if paper_sd is not None:
        sd, whose = float(paper_sd), f"the paper's sd {paper_sd:g}"
    elif len(values) >= 2:
        sd = float(np.std(np.log(values) if evidence.log else values, ddof=1))
        whose = f"our sd {sd:.2g}" + (" of the logs" if evidence.log else "") + " (the paper states none)"
    else:
        sd, whose = 0.0, "no spread known (none stated, fewer than 2 runs here)"
    sampling = 2.0 * factor * sd / math.sqrt(paper_runs)
    words += f" + 2 SE of the paper's {what} of {paper_runs} run{'s' if paper_runs > 1 else ''}, runs spread by {whose}"
    if evidence.log and paper_sd is None:
        lo, hi = (paper - base) * math.exp(-sampling), (paper + base) * math.exp(sampling)
        return (lo, hi), f"[{lo:.4g}, {hi:.4g}] ({words}: a factor {math.exp(sampling):.3g})"
    return (paper - base - sampling, paper + base + sampling), f"±{base + sampling:.3g} ({words})"


@dataclass
class Result:
    """One reproduction's outcome, as written to ``NAME.json``."""

    name: str
    paper: str  # the paper cited by authors and title
    scale: str
    seconds: float
    rows: list[Row]
    extra: dict[str, Any] = field(default_factory=dict)  # source, data, settings, note, ...

    def __post_init__(self) -> None:
        self.rows = with_page_p(list(self.rows))  # the page's rows judged together (Holm)

    @property
    def passed(self) -> int:
        """The rows that agree (a "cannot tell" row is not one of them)."""
        return self.count(AGREES)

    def count(self, verdict: str) -> int:
        """The rows whose verdict is ``verdict`` (one of ``VERDICTS``)."""
        return sum(r.verdict == verdict for r in self.rows)

    @property
    def claims(self) -> dict[str, list[Row]]:
        """The claims checked, in the order first met, each with its rows."""
        out: dict[str, list[Row]] = {}
        for r in self.rows:
            out.setdefault(r.checks, []).append(r)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "paper": self.paper,
            "scale": self.scale,
            "seconds": round(self.seconds, 3),
            "rows": [r.to_dict() for r in self.rows],
            **_null_nonfinite(plain(self.extra)),
        }

    def write_json(self, directory: Path) -> Path:
        """``directory/NAME.json``, written whole (temporary name, then renamed)."""
        path = Path(directory) / f"{self.name}.json"
        write_text(path, json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n")
        return path


def _null_nonfinite(value: Any) -> Any:
    """JSON has no NaN: a non-finite float becomes null (``value`` already plain, ``study.experiment.config.plain``)."""
    if isinstance(value, (dict, list)):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        out = {k: _null_nonfinite(v) for k, v in items}
        return out if isinstance(value, dict) else list(out.values())
    return None if isinstance(value, float) and not math.isfinite(value) else value


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def number(x: float | None) -> str:
    """A value for the terminal table: 4 significant digits, scientific when huge or tiny, "–" for none."""
    if x is None or not math.isfinite(x):
        return "–"
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-3):
        return f"{x:.3e}"
    return f"{x:.4g}"


TABLE_WIDTH = 100  # the terminal table's width by default (``format_table``); ``wide`` prints every character
VERDICT_WORD = {AGREES: "agrees", DIFFERS: "DIFFERS", CANNOT_TELL: "cannot tell"}


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: cut, ending in "…", when longer."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def interval_text(row: Row) -> str:
    """ "[lo, hi] n" for the table: the row's interval and replicates, "exact" for an exact value."""
    e = row.evidence
    if e.exact:
        return "exact"
    if e.replicates == 0:
        return "–"
    lo, hi = e.interval
    return f"[{number(lo)}, {number(hi)}] n={e.replicates}"


def format_table(result: Result, *, wide: bool = False) -> str:
    """The rows as a plain-text table (verdict, quantity, paper, here, its interval and replicates, tolerance),
    then why each "cannot tell" row cannot tell, then a summary line: rows and claims by verdict. The verdict
    comes first, so it is in view on any terminal; the table fits ``TABLE_WIDTH`` columns, the quantity and the
    tolerance cut ("…") where longer, unless ``wide`` (every character)."""
    header = ("verdict", "quantity", "paper", "here", "interval, replicates", "tolerance")
    lines = [
        (VERDICT_WORD[r.verdict], r.quantity, number(r.paper), number(r.measured), interval_text(r), r.tolerance)
        for r in result.rows
    ]
    widths = [max(len(x[i]) for x in [header, *lines]) for i in range(6)]
    if not wide:
        room = TABLE_WIDTH - widths[0] - widths[2] - widths[3] - widths[4] - 5 * 2  # the quantity and tolerance
        widths[1] = min(widths[1], max(len(header[1]), room - min(widths[5], max(12, room // 3))))
        widths[5] = min(widths[5], max(0, room - widths[1]))
    out = []
    for row in [header, *lines]:
        cells = [cut(c, w) for c, w in zip(row, widths)]
        out.append(
            "  ".join(
                c.ljust(w) if i in (0, 1, 4, 5) else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
            ).rstrip()
        )
    said = [f"cannot tell, {r.quantity}: {r.why_cannot_tell}" for r in result.rows if r.why_cannot_tell is not None]
    said.append(f"{result.name} ({result.scale}): {verdict_counts(result)}, {result.seconds:.1f} s")
    out += said if wide else [textwrap.fill(s, TABLE_WIDTH, subsequent_indent="  ") for s in said]
    return "\n".join(out)


def verdict_counts(result: Result) -> str:
    """ "34 of 40 rows agree with the paper, 5 differ, 1 cannot tell; 9 claims checked; 3 to 5 replicates a row,
    24 exact" (each verdict named only when some row has it)."""
    n, agree = len(result.rows), result.passed
    parts = [f"{agree} of {n} rows agree with the paper"]
    if result.count(DIFFERS):
        parts.append(f"{result.count(DIFFERS)} differ")
    if result.count(CANNOT_TELL):
        parts.append(f"{result.count(CANNOT_TELL)} cannot tell")
    claims = len(result.claims)
    return ", ".join(parts) + f"; {claims} claim{'s' if claims != 1 else ''} checked; " + replicates_text(result.rows)


def replicates_text(rows: list[Row]) -> str:
    """ "3 to 5 replicates a row, 24 exact": the range of the sampled rows' replicates and the exact rows."""
    sampled = [r.evidence.replicates for r in rows if not r.evidence.exact]
    exact = len(rows) - len(sampled)
    parts = []
    if sampled:
        lo, hi = min(sampled), max(sampled)
        parts.append(f"{lo} replicate{'s' if hi != 1 else ''} a row" if lo == hi else f"{lo} to {hi} replicates a row")
    if exact:
        parts.append(f"{exact} exact")
    return ", ".join(parts) or "no rows"

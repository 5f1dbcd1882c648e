"""What a reproduction produces: rows (quantity, the paper's value, ours, the tolerance, the verdict), the
JSON file, and the table printed on the terminal.

A row compares one quantity with the paper in one of three ways:

* ``Row.printed``: the paper prints a number. THE rule for every printed number of every reproduction
  (``printed_tolerance``): ours agrees when ``|ours - paper| <= u / 2 + spread``, u one unit of the last printed
  digit, or ``<= u + spread`` where the paper's value was itself estimated (a numerical integral, a sampled or
  Monte-Carlo estimate: its last digit may be off by one). ``spread`` is 0 for a deterministic quantity, and
  for a statistic over random seeds (a mean, a median) two standard errors of the difference of the paper's
  statistic and ours (``mean_spread``, ``median_spread``). A value the paper computed from another printed
  value (Table 1's line C is the printed line A to the 48th power) carries that value's tolerance through the
  derivative, plus the rounding of its own print (``Row.derived``). ``Row.close`` is the same comparison with a
  tolerance computed elsewhere. Each reproduction's docstring says which of its paper values are estimates.
* ``Row.ratio``: the paper's value (a printed number, or a formula of the paper evaluated on our data) against
  ours within a factor, for a claim of that strength ("constant within 1.5x").
* ``Row.claim``: the paper shows only a figure (``paper`` is null); ``tolerance`` states the qualitative
  claim checked and ``ok`` whether our numbers bear it out.

A failing row is a finding, never a reason to widen its tolerance.

Each row's verdict (``Row.verdict``) is one of three: "agrees" (ours within the tolerance), "differs", or
"cannot tell" (``Row.cannot_tell(why)``): the run at this scale cannot test the claim, e.g. no net left the best
constant, or every run ties within the data's noise; a row that would agree only because nothing trained is
"cannot tell", not "agrees". ``Row.ok`` keeps the comparison itself (ours within the tolerance), the verdict
decides; in the JSON, "ok" is whether the row agrees (false for "cannot tell"), so a reader of "ok" alone never
counts a row that cannot tell as agreeing.
Each row names the claim it checks (``Row.checking``: the paper's table cell or the figure's stated claim, e.g.
"Table 1, line D"; read as ``Row.checks``), so a summary counts claims as well as rows (several rows may
check one claim).

The JSON shape is fixed (the issue's): ``{"name", "paper", "scale", "seconds", "rows": [{"quantity", "paper",
"measured", "tolerance", "ok", "verdict", "claim", "cannot_tell"}], ...}`` with further top-level keys per
reproduction (``source``, ``data``, ``settings``, ``note``, ...), so results of different versions compare key
by key. ``Row.from_dict`` reads rows written before the verdict, the claim and the reason were keys (the verdict
then follows ``ok``, the claim is the quantity).
"""

from __future__ import annotations

import json
import math
import os
import textwrap
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import numpy as np

from archstudy.sampling.constraints import plain

ROW_KEYS = ("quantity", "paper", "measured", "tolerance", "ok", "verdict", "claim", "cannot_tell")
AGREES, DIFFERS, CANNOT_TELL = "agrees", "differs", "cannot tell"
VERDICTS = (AGREES, DIFFERS, CANNOT_TELL)


@dataclass(frozen=True)
class Row:
    quantity: str
    paper: float | None
    measured: float | None  # None (null in JSON) when nothing could be measured: the row then fails
    tolerance: str
    ok: bool  # ours within the tolerance (the comparison); the verdict is ``verdict``
    claim_name: str = ""  # the paper's claim this row checks (a table cell, a figure's stated claim); "" = quantity
    why_cannot_tell: str | None = None  # why this run cannot test the claim; None when it can

    @property
    def verdict(self) -> str:
        """ "cannot tell" when the run cannot test the claim (``cannot_tell``), else "agrees" or "differs"."""
        if self.why_cannot_tell is not None:
            return CANNOT_TELL
        return AGREES if self.ok else DIFFERS

    @property
    def agrees(self) -> bool:
        return self.verdict == AGREES

    @property
    def checks(self) -> str:
        """The claim this row checks: ``claim_name``, or the quantity when none was named (its own claim)."""
        return self.claim_name or self.quantity

    def cannot_tell(self, why: str) -> "Row":
        """This row with the verdict "cannot tell": ``why`` says why the run cannot test the claim (e.g. "no net
        left the best constant"); the comparison (``ok``) and the tolerance are kept."""
        if not why.strip():
            raise ValueError("a 'cannot tell' verdict needs its reason")
        return replace(self, why_cannot_tell=why)

    def checking(self, claim: str) -> "Row":
        """This row, named as checking ``claim`` (the paper's table cell or figure's stated claim)."""
        return replace(self, claim_name=claim)

    @classmethod
    def close(cls, quantity: str, paper: float, measured: float, tolerance: float, why: str) -> "Row":
        """The paper's number against ours: agreement within ``tolerance`` (absolute), ``why`` names its source."""
        ok = bool(math.isfinite(measured) and abs(measured - paper) <= tolerance)
        return cls(quantity, float(paper), _finite_or_none(measured), f"±{tolerance:.3g} ({why})", ok)

    @classmethod
    def printed(
        cls,
        quantity: str,
        paper_text: str,
        measured: float,
        *,
        estimated: bool = False,
        spread: tuple[float, str] = (0.0, ""),
    ) -> "Row":
        """The paper's printed number (``paper_text`` as printed, e.g. "0.0024") against ours, by the one rule of
        the module docstring (``printed_tolerance``)."""
        tol, why = printed_tolerance(paper_text, estimated=estimated, spread=spread)
        return cls.close(quantity, float(paper_text), measured, tol, why)

    @classmethod
    def derived(
        cls,
        quantity: str,
        paper_text: str,
        measured: float,
        source_text: str,
        derivative: float,
        source: str,
        *,
        estimated: bool = False,
    ) -> "Row":
        """The paper's printed number ``paper_text``, which it computed as f(a) from its printed ``source_text`` a
        (``source`` names it, e.g. "line A^48"), against ours: the one rule's tolerance of a (one unit of its
        last digit when ``estimated``, else half) times |f'(a)| = |``derivative``|, plus half a unit of the
        print of ``paper_text`` (its own rounding)."""
        tol_a, _ = printed_tolerance(source_text, estimated=estimated)
        rounding = printed_unit(paper_text) / 2
        tol = abs(derivative) * tol_a + rounding
        what = "one unit" if estimated else "half a unit"
        return cls.close(
            quantity,
            float(paper_text),
            measured,
            tol,
            f"the paper's {source} from its printed {source_text}: {what} of that, through the "
            f"derivative ({abs(derivative) * tol_a:.3g}), + the rounding of the printed {paper_text}",
        )

    @classmethod
    def ratio(cls, quantity: str, paper: float, measured: float, factor: float, why: str) -> "Row":
        """The paper's number against ours: agreement within a factor (``paper / factor <= ours <= paper * factor``)."""
        ok = bool(math.isfinite(measured) and paper / factor <= measured <= paper * factor)
        return cls(quantity, float(paper), _finite_or_none(measured), f"within {factor:g}x ({why})", ok)

    @classmethod
    def claim(cls, quantity: str, measured: float | None, ok: bool, claim: str) -> "Row":
        """A quantity the paper shows only in a figure: ``claim`` says what was checked, ``ok`` whether it holds."""
        measured = None if measured is None else _finite_or_none(measured)
        return cls(quantity, None, measured, claim, bool(ok) and measured is not None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "quantity": self.quantity,
            "paper": self.paper,
            "measured": self.measured,
            "tolerance": self.tolerance,
            "ok": self.agrees,
            "verdict": self.verdict,
            "claim": self.checks,
            "cannot_tell": self.why_cannot_tell,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Row":
        """A row as ``to_dict`` writes it, or as written before "verdict", "claim" and "cannot_tell" were keys
        (the verdict then follows "ok"). A "cannot tell" row reads with ``ok`` false (the JSON keeps its verdict,
        not its comparison)."""
        claim = d.get("claim") or ""
        row = cls(
            str(d["quantity"]),
            d["paper"],
            d["measured"],
            str(d["tolerance"]),
            bool(d["ok"]),
            "" if claim == d["quantity"] else str(claim),
        )
        verdict = d.get("verdict", AGREES if row.ok else DIFFERS)
        if verdict not in VERDICTS:
            raise ValueError(f"row {row.quantity!r}: verdict {verdict!r} is none of {', '.join(VERDICTS)}")
        if verdict == CANNOT_TELL:
            return row.cannot_tell(str(d.get("cannot_tell") or "not given"))
        if (verdict == AGREES) != row.ok:
            raise ValueError(f"row {row.quantity!r}: verdict {verdict!r} contradicts ok={row.ok}")
        return row


def _finite_or_none(x: float) -> float | None:
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


def printed_tolerance(
    paper_text: str, *, estimated: bool = False, spread: tuple[float, str] = (0.0, "")
) -> tuple[float, str]:
    """(tolerance, why) of the one rule (module docstring): half a unit of the last printed digit (the print's
    rounding) or, for a value the paper itself estimated, one unit; plus ``spread`` = (amount, what it is) for a
    statistic over random seeds."""
    unit = printed_unit(paper_text)
    base, what = (
        (unit, f"one unit of the printed {paper_text} (the paper's value is an estimate)")
        if estimated
        else (unit / 2, f"half a unit of the printed {paper_text}")
    )
    amount, spread_why = spread
    if amount:
        return base + amount, f"{what} + {spread_why}"
    return base, what


def mean_spread(ours, paper_n: int, paper_sd: float | None = None) -> tuple[float, str]:
    """Two standard errors of (paper's mean over ``paper_n`` seeds) - (our mean over ours), every run spread by the
    paper's printed standard deviation where it prints one, else by ours (zero with one run of ours and none
    printed)."""
    n = len(ours)
    if paper_sd is not None:
        sigma, whose = float(paper_sd), f"the paper's sd {paper_sd:g}"
    elif n >= 2:
        sigma = float(np.std(ours, ddof=1))
        whose = f"our sd {sigma:.2g} (none printed)"
    else:
        return 0.0, "no spread (none printed, one run here)"
    return 2.0 * sigma * math.sqrt(1.0 / paper_n + 1.0 / n), (
        f"2 SE of mean({paper_n}) - mean({n}), runs spread by {whose}"
    )


def median_spread(ours, paper_n: int | None = None) -> tuple[float, str]:
    """Two standard errors of the difference of the paper's median over ``paper_n`` seeds (default: as many as
    ours) and ours, the paper's spread taken to be ours (it prints none) and a median's standard error
    shrinking as 1/sqrt(n): 2 SE sqrt(1 + n / paper_n), SE the bootstrap standard error of our median over our
    n seeds (2 sqrt(2) SE for equal counts)."""
    n = len(ours)
    paper_n = n if paper_n is None else paper_n
    se = median_standard_error(ours)
    return 2.0 * se * math.sqrt(1.0 + n / paper_n), (
        f"2 SE of median({paper_n}) - median({n}), SE = {se:.2g} (bootstrap, ours)"
    )


def median_standard_error(values, n_boot: int = 2000, seed: int = 0) -> float:
    """Bootstrap standard error of the median of ``values`` (seeded: the same values give the same number)."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) < 2:
        return math.inf
    idx = np.random.default_rng(seed).integers(0, len(v), size=(n_boot, len(v)))
    return float(np.std(np.median(v[idx], axis=1), ddof=1))


@dataclass
class Result:
    """One reproduction's outcome, as written to ``NAME.json``."""

    name: str
    paper: str  # the paper cited by authors and title
    scale: str
    seconds: float
    rows: list[Row]
    extra: dict[str, Any] = field(default_factory=dict)  # source, data, settings, note, ...

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


def format_table(result: Result, *, wide: bool = False) -> str:
    """The rows as a plain-text table (verdict, quantity, paper, here, tolerance), then why each "cannot tell"
    row cannot tell, then a summary line: rows and claims by verdict. The verdict comes first, so it is in view
    on any terminal; the table fits ``TABLE_WIDTH`` columns, the quantity and the tolerance cut ("…") where
    longer, unless ``wide`` (every character)."""
    header = ("verdict", "quantity", "paper", "here", "tolerance")
    lines = [
        (VERDICT_WORD[r.verdict], r.quantity, number(r.paper), number(r.measured), r.tolerance) for r in result.rows
    ]
    widths = [max(len(x[i]) for x in [header, *lines]) for i in range(5)]
    if not wide:
        room = TABLE_WIDTH - widths[0] - widths[2] - widths[3] - 4 * 2  # for the quantity and the tolerance
        widths[1] = min(widths[1], max(len(header[1]), room - min(widths[4], max(20, room // 3))))
        widths[4] = min(widths[4], room - widths[1])
    out = []
    for row in [header, *lines]:
        cells = [cut(c, w) for c, w in zip(row, widths)]
        out.append(
            "  ".join(
                c.ljust(w) if i in (0, 1, 4) else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
            ).rstrip()
        )
    said = [f"cannot tell, {r.quantity}: {r.why_cannot_tell}" for r in result.rows if r.why_cannot_tell is not None]
    said.append(f"{result.name} ({result.scale}): {verdict_counts(result)}, {result.seconds:.1f} s")
    out += said if wide else [textwrap.fill(s, TABLE_WIDTH, subsequent_indent="  ") for s in said]
    return "\n".join(out)


def verdict_counts(result: Result) -> str:
    """ "34 of 40 rows agree, 5 differ, 1 cannot tell; 9 claims" (each verdict named only when some row has it)."""
    n, agree = len(result.rows), result.passed
    parts = [f"{agree} of {n} rows agree with the paper"]
    if result.count(DIFFERS):
        parts.append(f"{result.count(DIFFERS)} differ")
    if result.count(CANNOT_TELL):
        parts.append(f"{result.count(CANNOT_TELL)} cannot tell")
    claims = len(result.claims)
    return ", ".join(parts) + f"; {claims} claim{'s' if claims != 1 else ''} checked"

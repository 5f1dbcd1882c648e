"""`archstudy top` and `archstudy status` for a terminal: at most 100 columns by default, everything with
``--wide``, the columns explained in ``--help``; `top` cautions about a small study; a study that measures only
is called so, not "pruned"."""

import io
import itertools
import math
import re
from contextlib import redirect_stdout

import pytest

from archstudy.sampling import EXTENDED
from archstudy.study.cli import build_parser, main
from archstudy.study.cli import flags
from archstudy.study.cli.flags import KEEP, WIDTH, fit
from archstudy.study.cli.top import caution

# A study that measures only, as `archstudy rank` makes one: 2 tiny architectures, cheap metric settings.
MEASURED = {
    "dataset": "waveform-noise",
    "architectures": 2,
    "param_budget": 2000,
    "seed": 5,
    "space": {**EXTENDED.to_dict(), "name": "extended-shallow", "depths": [3, 5]},
    "measure_only": True,
    "metrics": {"nlc_batches": 4, "gradient_batches": 2, "variability_grid": 8, "variability_planes": 1},
}


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


@pytest.fixture
def terminal(monkeypatch):
    """Standard output as a terminal (pytest's capture is none): the commands keep to ``WIDTH`` there."""
    monkeypatch.setattr(flags, "stdout_is_terminal", lambda: True)


def test_top_fits_100_columns_and_wide_shows_every_column(real_study_dir, capsys, terminal):
    assert main(["top", str(real_study_dir)]) == 0
    narrow = _lines(capsys)
    assert max(len(line) for line in narrow) <= WIDTH, max(narrow, key=len)
    assert main(["top", str(real_study_dir), "--wide"]) == 0
    wide = _lines(capsys)
    header = next(line for line in wide if line.lstrip().startswith("#"))
    # every spec field the leaderboard shows is there with --wide; the narrow table says which it left out
    assert all(f" {c} " in f"{header} " for c in ("weights", "param", "skip", "norm", "val", "train"))
    dropped = next(line for line in narrow if line.strip().startswith("(--wide: also "))
    narrow_header = next(line for line in narrow if line.lstrip().startswith("#"))
    for column in dropped.strip()[len("(--wide: also ") : -1].split(", "):
        assert f" {column} " not in f"{narrow_header} " and f" {column}" in f"{header} ", column


def test_status_fits_100_columns(real_study_dir, capsys, terminal):
    assert main(["status", str(real_study_dir)]) == 0
    narrow = _lines(capsys)
    assert max(len(line) for line in narrow) <= WIDTH
    assert main(["status", str(real_study_dir), "--wide"]) == 0
    wide = _lines(capsys)
    words = lambda lines: re.sub(r"heartbeat \d+s ago", "", " ".join(" ".join(lines).split()))  # noqa: E731
    assert words(narrow) == words(wide)  # the same words, wrapped (the heartbeat's age aside)
    assert max(len(line) for line in wide) > WIDTH  # this study's first line is longer: wrapped above


@pytest.mark.parametrize("command", ["top", "status"])
def test_help_fits_and_explains_the_columns(command, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    assert "--wide" in text
    if command == "top":  # the columns named, the metric ones from their declarations
        flat = " ".join(text.split())
        assert "gvcs (gradient vector component size): gradient vector component size of the loss' input" in flat
        for header in ("# rank", "index:", "variant:", "test, val, train:", "params:", "p adjusted:", "lift:"):
            assert header in flat, header


def _taus(n: int) -> list[float]:
    """Kendall's tau of every order of n untied points against 0..n-1 (by counting pairs)."""
    out = []
    for perm in itertools.permutations(range(n)):
        s = sum((1 if perm[j] > perm[i] else -1) for i in range(n) for j in range(i + 1, n))
        out.append(s / (n * (n - 1) / 2))
    return out


@pytest.mark.parametrize("n", [3, 4, 5])
def test_caution_against_an_enumeration_of_every_order(n):
    taus = _taus(n)
    distinct = sorted({round(t, 12) for t in taus})
    text = caution(n, 10)
    assert text is not None and f"only {n} trained architectures" in text
    assert f"one of {len(distinct)} values" in text
    assert f"steps of {distinct[1] - distinct[0]:.3g}" in text
    # the exact two-sided p of a perfect order: the share of orders with |tau| = 1
    p_min = sum(abs(t) == 1.0 for t in taus) / math.factorial(n)
    assert f"= {p_min:.2g}," in text
    assert caution(10, 10) is None and caution(30, 10) is None


def test_top_cautions_a_small_study_and_its_p_values_agree(real_study_dir, capsys):
    assert main(["top", str(real_study_dir), "--wide"]) == 0
    out = capsys.readouterr().out
    heading = next(line for line in out.splitlines() if line.startswith("top predictors of test error"))
    n = int(heading.split(" over ")[1].split()[0])  # the trained architectures of the random sample
    assert n < 10
    warning = " ".join(line for line in out.splitlines() if line.startswith("caution") or line.startswith("    "))
    assert f"caution: only {n} trained architectures" in warning
    # a tau of +-1.000 (n untied points in a perfect order) has the exact p the caution names: 2 / n!
    lines = out.splitlines()
    start = lines.index(heading) + 2  # the heading, then the table's header
    rows = [line.split() for line in lines[start:] if line.startswith("  ") and line.split()[0].isdigit()]
    assert rows
    perfect = 0
    for row in rows:
        tau_at = next(i for i, cell in enumerate(row) if re.fullmatch(r"[+-]\d\.\d{3}", cell))
        tau, p = float(row[tau_at]), float(row[tau_at + 1])
        if abs(tau) == 1.0:
            assert p == pytest.approx(2 / math.factorial(n), abs=0.005)
            perfect += 1
    assert perfect  # this study has predictors in a perfect order (tau +-1.000 over its 3 architectures)


def test_fit_breaks_at_spaces_and_keeps_every_word():
    line = "  " + " ".join(f"word{i}" for i in range(60))
    parts = fit(line, 40)
    assert all(len(p) <= 40 for p in parts) and parts[0].startswith("  word0")
    assert all(p.startswith("      ") for p in parts[1:])  # its indent plus 4
    assert " ".join(" ".join(parts).split()) == line.strip()
    assert fit(line, None) == [line]


def test_fit_never_breaks_words_kept_together():
    """status's header ended "...; archstudy" with the version on the next line: the two are joined by ``KEEP``."""
    line = "x" * 30 + f" budget 3,000 parameters; archstudy{KEEP}0.1.0"
    for width in range(len("archstudy 0.1.0") + 4, len(line)):  # + 4: a continuation's indent
        parts = fit(line, width)
        assert KEEP not in "".join(parts) and any("archstudy 0.1.0" in p for p in parts), (width, parts)
    assert fit(line, None) == [line.replace(KEEP, " ")]


@pytest.fixture(scope="module")
def measured_study(tmp_path_factory):
    """A study that measures only (as `archstudy rank` makes): 2 architectures, metrics at initialization."""
    from archstudy.study.execution.driver import run_study

    out = tmp_path_factory.mktemp("measured") / "study"
    assert run_study(MEASURED, out, progress=io.StringIO()).complete
    return out


def test_a_measure_only_study_is_called_so(measured_study, capsys, terminal):
    assert main(["status", str(measured_study)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "untrained 2 (measured only (no training asked)" in out
    assert "pruned" not in out and "no longer holds" not in out
    assert main(["top", str(measured_study)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "2 finished architectures have no test_error: measured only (no training asked)" in out and "--by nlc" in out
    assert "pruned at launch" not in out and "yet" not in out


def test_a_result_file_outside_the_plan_is_named_so_not_another_fingerprint(measured_study, tmp_path, capsys):
    """A finished unit's file copied under a name the plan does not hold: the same science record, so status says
    it is no architecture of this config's plan (as the driver's refusal does), not "another fingerprint"."""
    import shutil

    study = tmp_path / "study"
    shutil.copytree(measured_study, study)
    first = sorted((study / "architectures").glob("000000-*.parquet"))[0]
    shutil.copy(first, study / "architectures" / "000500-ffffffffffffffff.parquet")
    assert main(["status", str(study)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "not this study's" in out and "no architecture of this config's plan" in out
    assert "another fingerprint" not in out


def test_a_study_yaml_without_d_in_is_one_line_not_a_traceback(measured_study, tmp_path, capsys):
    import shutil

    study = tmp_path / "study"
    shutil.copytree(measured_study, study)
    yaml_path = study / "study.yaml"
    yaml_path.write_text(
        "".join(line for line in yaml_path.read_text().splitlines(True) if not line.startswith("d_in:"))
    )
    assert main(["status", str(study)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "study.yaml.d_in = None: missing" in err[0] and "Traceback" not in err[0]

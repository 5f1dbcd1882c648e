"""No command's log is silent for 10 s: each long command, started as a process whose standard output and error go
to a pipe (a log: plain lines), on a small study, has every line stamped as it arrives; the longest silence, from
the start to the first line, between lines, and from the last line to the exit, stays under ``SILENCE_S``.

Before: ``resume`` said nothing for 18 s before its first line, ``run`` 18 s in the middle and a 250-architecture
dry run 30 s (at a load of 6 to 12 on 2 cores); a study's line came at least every 60 s. Now a study's line comes at
least every ``LOG_EVERY_S`` (8 s), and a blocking phase (planning, starting Ray, ``rank``'s fitting) says its
elapsed time as often (``study.experiment.terminal.phase``)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from study_commands import cli, tiny_study

from archstudy.study.experiment.terminal import LOG_EVERY_S

pytestmark = pytest.mark.slow  # run and rank each start an embedded Ray (about 10 s on 2 cores)

SILENCE_S = 10.0  # the bar: no silence over 10 s, on a terminal, in a log or on a 0-column terminal


def stamped(argv: list[str], cwd: Path, timeout_s: float = 300.0) -> tuple[int, list[tuple[float, str]], float]:
    """(exit code, every line of ``archstudy ARGV``'s standard output and error with the seconds from the start at
    which it arrived, the seconds to its exit), read as a log reads them: through a pipe."""
    proc = cli(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    t0 = time.monotonic()
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            lines.append((time.monotonic() - t0, raw.decode(errors="replace").rstrip()))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
    end = time.monotonic() - t0
    reader.join(timeout=10)
    return code, lines, end


def longest_silence(lines: list[tuple[float, str]], end: float) -> tuple[float, str]:
    """(the longest time without a line, the start and the exit counted as lines; the line that ended it)."""
    stamps = [(0.0, "<start>"), *lines, (end, "<exit>")]
    return max(((b[0] - a[0], b[1]) for a, b in zip(stamps, stamps[1:])), key=lambda g: g[0])


def test_the_log_beat_is_under_the_bar():
    assert LOG_EVERY_S < SILENCE_S  # the beat itself, with room for a loaded machine's late wake-ups


def test_no_long_command_is_silent_for_10_s(tmp_path, real_study_dir):
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(tiny_study(2)))
    study, out = tmp_path / "s", tmp_path
    commands = [
        (["run", "--config", str(out / "tiny.yaml"), "--out", str(study), "--yes"], {0}),
        (["resume", str(study)], {0}),
        (["report", str(study), "--out", str(out / "r.html")], {0}),
        (["compact", str(study)], {0}),
        # the fitting, then two fresh architectures measured on Ray (real_study_dir: 8 or more trained)
        (
            ["rank", "--from", str(real_study_dir), "--architectures", "2", "--seed", "9", "--out", str(out / "k")]
            + ["--allow-weak-predictor"],
            {0},
        ),
        # its rows may differ from the paper's at the tiny scale (exit 1); silence is what is held here
        (["reproduce", "gmp-banana", "--scale", "tiny", "--out", str(out / "rep")], {0, 1}),
    ]
    try:
        import optuna  # noqa: F401  (the optional extra "export")

        commands.append((["export", str(study), "--to", "optuna", "--out", str(out / "exp")], {0}))
    except ImportError:
        pass
    said = []
    for argv, codes in commands:
        code, lines, end = stamped(argv, tmp_path)
        text = "\n".join(f"{t:6.1f} {line}" for t, line in lines)
        assert code in codes, f"archstudy {' '.join(argv)}: exit {code}\n{text[-3000:]}"
        assert "Traceback" not in text, text[-3000:]
        gap, before = longest_silence(lines, end)
        said.append(f"{argv[0]}: {gap:.1f} s before {before[:80]!r} ({end:.1f} s in all)")
        assert gap < SILENCE_S, f"archstudy {' '.join(argv)}: silent {gap:.1f} s before {before!r}\n{text[-3000:]}"
    print("\n".join(said), file=sys.stderr)

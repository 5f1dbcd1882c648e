"""The README's tour, as pasted, in order, in one fresh shell after the set-up command: ``. .venv/bin/activate`` (the
tour's first line) puts the environment's ``archstudy``, ``python`` and ``pip`` first on the PATH, then every
command of the tour's ``bash`` blocks runs with its own rule (``RULES``): a command that would start minutes or
hours of training runs with ``--dry-run`` or is checked to be refused without ``--yes``; the commands that read a
study read a small real one standing in for ``studies/wave`` (the tour's 250 architectures are days of work); the
ones that need a cluster, or render for minutes, are skipped with the reason (and where else they are tested). A
command the tour gains and this table does not know fails the first test."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_KEYS = "dataset: waveform-noise\narchitectures: 2\nparam_budget: 3000\nprotocol: quick\n"

# (pattern of a tour command, how it runs: "dry-run" | "as pasted" | "skip: why", exit code, text its output holds)
RULES: list[tuple[str, str, int | None, str]] = [
    (r"^archstudy run$", "dry-run", 0, "--dry-run: nothing was run or written"),
    (r"^archstudy run .*--architectures 250 --out studies/wave$", "as pasted", 2, "pass --yes to start it"),
    (r"^archstudy run --dataset digits .*--report$", "dry-run", 0, "--dry-run: nothing was run or written"),
    (r"^archstudy run --config my-study\.yaml", "dry-run", 0, "--dry-run: nothing was run or written"),
    (r"^archstudy status studies/wave$", "as pasted", 0, "finished"),
    (r"^archstudy resume studies/wave$", "as pasted", 0, "architectures are finished in studies/wave"),
    (
        r"^archstudy run .*--architectures 500 --out studies/wave$",
        "skip: it extends the tour's 250-architecture study, days of work here "
        "(extending a study: tests/study/execution/test_driver_study.py)",
        None,
        "",
    ),
    (
        r"^archstudy report ",
        "skip: rendering takes minutes on 2 cores (the report of a real study: tests/analysis/test_report.py)",
        None,
        "",
    ),
    (r"^archstudy top studies/wave$", "as pasted", 0, "architectures finished"),
    (
        r"^archstudy serve studies/wave$",
        "skip: it serves until Ctrl-C (the live view of a study: tests/analysis/test_live_view.py)",
        None,
        "",
    ),
    (r"^archstudy lookup studies/wave --where ", "as pasted", 0, "with depth > 2"),
    (
        r"^archstudy export studies/wave ",
        "skip: it needs the optional extra export (each target round-trips in tests/analysis/test_exports.py)",
        None,
        "",
    ),
    # the small study standing in for studies/wave: its predictors do not beat chance held out, and rank says so in
    # the one line the README shows (a ranking that is printed: tests/study/cli/test_rank.py)
    (r"^archstudy rank --from studies/wave ", "as pasted", 2, "no predictor beats chance held out"),
    (r"^ray up ", "skip: it starts an AWS cluster (docs/cluster.md; `archstudy cluster rehearse`)", None, ""),
    (r"^archstudy (run|resume) .*--address auto", "skip: it runs on the cluster's head node", None, ""),
]


def tour_commands(readme: str | None = None) -> list[str]:
    """The commands of the tour's ``bash`` blocks (README, "A five-minute tour"), in order: continuation lines
    joined, comments dropped."""
    text = readme if readme is not None else (ROOT / "README.md").read_text(encoding="utf-8")
    tour = text.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", tour, flags=re.S):
        joined = re.sub(r"\\\n\s*", "", block)
        for line in joined.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


def rule_of(command: str) -> tuple[str, int | None, str]:
    for pattern, how, code, text in RULES:
        if re.search(pattern, command):
            return how, code, text
    raise AssertionError(f"the README tour's command {command!r} has no rule in tests/test_readme_tour.py")


def test_every_tour_command_has_its_rule():
    commands = tour_commands()
    assert commands[0] == "archstudy run" and any(c.startswith("archstudy status ") for c in commands)
    for command in commands:
        rule_of(command)
    assert "First `. .venv/bin/activate`" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_tour_runs_as_pasted_in_a_fresh_shell(tmp_path, real_study_dir):
    if not (ROOT / ".venv" / "bin" / "activate").is_file():
        pytest.skip("no .venv in the checkout: the tour follows the README's set-up command")
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")  # the clone's environment, made by the set-up command
    (tmp_path / "my-study.yaml").write_text(EXAMPLE_KEYS)  # the tour's own config file: the reader writes it
    script = [
        "set -u",
        ". .venv/bin/activate",  # the tour's first line
        'echo "::which $(command -v archstudy) $(command -v pip) $(command -v python)"',
    ]
    expected: dict[int, tuple[str, int, str]] = {}
    for i, command in enumerate(tour_commands()):
        how, code, text = rule_of(command)
        if how.startswith("skip"):
            continue
        if command.startswith("archstudy status studies/wave"):  # a small real study stands in for the tour's
            script.append(f"mkdir -p studies && cp -r {real_study_dir} studies/wave")
        shown = command + (" --dry-run" if how == "dry-run" else "")
        script.append(f'echo "::cmd {i} $(date +%s.%N)"; {shown} </dev/null 2>&1; echo "::rc {i} $? $(date +%s.%N)"')
        expected[i] = (shown, code or 0, text)
    run = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"},  # a fresh shell: no venv on it
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = run.stdout + run.stderr
    venv = ROOT / ".venv" / "bin"  # .venv/bin/activate names the environment where it was made
    which = next(line for line in out.splitlines() if line.startswith("::which "))
    assert which.split()[1:] == [str(venv / "archstudy"), str(venv / "pip"), str(venv / "python")]
    for i, (shown, code, text) in expected.items():
        part = out.split(f"::cmd {i} ", 1)[1].split("\n", 1)[1].split(f"::rc {i} ", 1)
        said, rc = part[0], int(part[1].split()[0])
        assert rc == code, f"{shown}: exit {rc}, not {code}:\n{said[-2000:]}"
        assert text in said, f"{shown}: {text!r} not in its output:\n{said[-2000:]}"
        assert "Traceback" not in said, f"{shown}:\n{said[-2000:]}"
    # nothing started by surprise: the dry runs and the refused study wrote nothing
    assert sorted(p.name for p in (tmp_path / "studies").iterdir()) == ["wave"]
    shutil.rmtree(tmp_path / "studies")

"""The README is the user's door: its commands must be the ones CI and the code actually use."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_ci_runs_the_readme_test_command_verbatim():
    blocks = _bash_blocks((ROOT / "README.md").read_text())
    test_cmd = next(b for b in blocks if "pytest" in b)
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_cmd in ci.splitlines()


def test_install_commands_pin_torch_exactly():
    text = (ROOT / "README.md").read_text() + (ROOT / ".ci" / "run").read_text()
    for m in re.finditer(r"torch[=<>~!]*[\d.]*", text):
        assert m.group(0) in ("torch==2.13.0", "torch"), m.group(0)
    assert '"torch==2.13.0"' in (ROOT / "pyproject.toml").read_text()
    assert "torchvision" not in (ROOT / "pyproject.toml").read_text()

"""The README is the user's door: its commands must be the ones CI and the code actually use."""

import os
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
    for m in re.finditer(r"torch *[=<>~!]+ *[\d.]+", text):
        assert m.group(0) == "torch==2.13.0", m.group(0)
    assert '"torch==2.13.0"' in (ROOT / "pyproject.toml").read_text()
    assert "torchvision" not in (ROOT / "pyproject.toml").read_text()


def test_the_python_api_block_runs_as_written(tmp_path, monkeypatch, capsys):
    """The README's Python API block, executed as written (in a scratch directory)."""
    block = next(
        b for b in re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S) if "run_study" in b
    )
    monkeypatch.chdir(tmp_path)
    # Ray's workers import the packages like any user's would: installed, or from PYTHONPATH
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["study"].complete
    assert len(namespace["results"].architectures) == 2
    assert (tmp_path / "studies" / "api-example" / "report.html").stat().st_size > 10_000
    assert len(namespace["outcome"].runs) == 8 and namespace["twins"][0].weights == "householder"

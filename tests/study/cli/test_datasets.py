"""``archstudy datasets``: the table names the data's directory as the command line takes it (``--root DIR``),
and so does every command's error line."""

from archstudy.study.cli import main
from archstudy.study.cli.datasets import on_the_command_line, rows


def test_the_table_says_the_flag_not_the_python_keyword():
    where = {r[0]: r[-1] for r in rows(None)}
    assert where["mnist"].endswith("(no directory given: pass --root DIR)")
    assert not any("root=DIR" in w for w in where.values())
    assert on_the_command_line("x (no directory given: pass root=DIR)") == "x (no directory given: pass --root DIR)"


def test_a_commands_error_line_says_the_flag(tmp_path, capsys):
    assert main(["run", "--dataset", "mnist", "--architectures", "1", "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("archstudy run: error: mnist: expected ")
    assert err.endswith("(no directory given: pass --root DIR)")

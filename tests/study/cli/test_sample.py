"""``archstudy sample``: JSON lines that are exactly the sampler's specs; one-line errors."""

import json

import pytest

from archstudy.sampling import ArchSpec, SPEC_FIELDS, sample_spec, siblings
from archstudy.study.cli import main


def test_sample_prints_the_sampler_specs_as_json_lines(capsys):
    assert (
        main(
            ["sample", "--n", "3", "--start", "5", "--seed", "2", "--preset", "paper", "--d-in", "334", "--d-out", "10"]
        )
        == 0
    )
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["index"] for r in lines] == [5, 6, 7]
    for r in lines:
        spec = ArchSpec.from_dict({k: r[k] for k in SPEC_FIELDS})
        assert spec == sample_spec(2, r["index"], 334, 10, "paper")
        assert r["arch_id"] == spec.content_id and r["num_params"] == spec.num_params


def test_sample_with_siblings(capsys):
    assert main(["sample", "--n", "1", "--siblings", "--param-budget", "5000"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    base = sample_spec(0, 0, 40, 3, "extended", 5000)
    expected = 1 + sum(len(siblings(base, a, 5000)) for a in ("weights", "param", "norm", "skip", "width"))
    assert len(lines) == expected and lines[0]["variant"] == "base"
    (wide,) = [line for line in lines if line["variant"] == "width"]  # beyond the budget by design, not refused
    assert wide["num_params"] > 1.5 * 5000


def test_bad_input_is_one_line_and_exit_2(capsys):
    assert main(["sample", "--d-in", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "archstudy sample: error: sample.d_in = 0: must be an integer >= 1"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seed", "-1"], "sample.seed = -1: must be an integer in [0, 9223372036854775807]"),
        (["--start", "-1"], "sample.start = -1: must be an integer in [0, 999999]"),
        (["--n", "-2"], "sample.n = -2: must be an integer in [0, 1000000]"),
        (["--param-budget", "0"], "sample.param_budget = 0: must be an integer >= 1"),
    ],
)
def test_flags_are_named_as_the_user_typed_them(argv, message, capsys):
    assert main(["sample", *argv]) == 2
    assert capsys.readouterr().err == f"archstudy sample: error: {message}\n"


@pytest.mark.parametrize(
    "argv, message",
    [
        # what `archstudy run` refuses for a study is refused here too (sampling.width.check_budget)
        (
            ["--param-budget", "1"],
            "sample.param_budget = 1: is too small for d_in 40, d_out 3: 5 of 5 architectures "
            "need more than 1.5 times it even at the smallest width",
        ),
        # names the dimension, not param_budget
        (["--d-out", "1000000000"], "sample.d_out = 1000000000: must be at most param_budget (1,000,000)"),
        (
            ["--seed", str(10**40)],
            "sample.seed = 10000000000000000000000000000000000000000: must be an integer in [0, 9223372036854775807]",
        ),
        (["--start", "999999", "--n", "2"], "sample.n = 2: must be an integer in [0, 1]"),
    ],
)
def test_sample_refuses_what_a_study_refuses_and_prints_nothing(argv, message, capsys):
    assert main(["sample", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"archstudy sample: error: {message}") and err.count("\n") == 1, err

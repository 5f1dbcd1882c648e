"""``archstudy sample``: JSON lines that are exactly the sampler's specs; one-line errors."""

import json

import pytest

from sampling import ArchSpec, SPEC_FIELDS, sample_spec, siblings
from study.cli import main


def test_sample_prints_the_sampler_specs_as_json_lines(capsys):
    assert main(["sample", "--n", "3", "--start", "5", "--seed", "2", "--preset", "paper", "--d-in", "334",
                 "--d-out", "10"]) == 0
    lines = [json.loads(l) for l in capsys.readouterr().out.splitlines()]
    assert [l["index"] for l in lines] == [5, 6, 7]
    for l in lines:
        spec = ArchSpec.from_dict({k: l[k] for k in SPEC_FIELDS})
        assert spec == sample_spec(2, l["index"], 334, 10, "paper")
        assert l["arch_id"] == spec.content_id and l["num_params"] == spec.num_params


def test_sample_with_siblings(capsys):
    assert main(["sample", "--n", "1", "--siblings", "--param-budget", "5000"]) == 0
    lines = [json.loads(l) for l in capsys.readouterr().out.splitlines()]
    base = sample_spec(0, 0, 40, 3, "extended", 5000)
    expected = 1 + sum(len(siblings(base, a, 5000)) for a in ("weights", "param", "norm", "skip"))
    assert len(lines) == expected and lines[0]["variant"] == "base"


def test_bad_input_is_one_line_and_exit_2(capsys):
    assert main(["sample", "--d-in", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "archstudy sample: error: sample.d_in = 0: must be an integer >= 1"


@pytest.mark.parametrize("argv, message", [
    (["--seed", "-1"], "sample.seed = -1: must be an integer >= 0"),
    (["--start", "-1"], "sample.start = -1: must be an integer >= 0"),
    (["--n", "-2"], "sample.n = -2: must be an integer >= 0"),
    (["--param-budget", "0"], "sample.param_budget = 0: must be an integer >= 1"),
])
def test_flags_are_named_as_the_user_typed_them(argv, message, capsys):
    assert main(["sample", *argv]) == 2
    assert capsys.readouterr().err == f"archstudy sample: error: {message}\n"

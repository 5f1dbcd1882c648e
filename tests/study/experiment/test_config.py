"""StudyConfig: self-describing (full space, protocol, metric options), exact YAML round trip, one-line errors from
the declared constraints, science vs execution keys."""

import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from archstudy.sampling import PRESETS, SIBLING_AXES, SpecError, config_yaml
from archstudy.study import MetricOptions, Protocol
from archstudy.study.experiment.config import EXECUTION_KEYS, SCIENCE_KEYS, Resources, StudyConfig

BASE = {"dataset": "waveform-noise", "architectures": 3}


def test_a_config_holds_the_full_space_protocol_and_metric_options_and_round_trips_exactly():
    c = StudyConfig(**BASE, preset="paper", protocol="quick", siblings="norm,skip", param_budget=5000, seed=4)
    assert c.space == yaml.safe_load(yaml.safe_dump(PRESETS["paper"].to_dict()))
    assert c.protocol == Protocol.of("quick").to_dict() or c.protocol == yaml.safe_load(
        yaml.safe_dump(Protocol.of("quick").to_dict())
    )
    assert MetricOptions.from_dict(c.metrics) == MetricOptions()
    assert c.siblings == ("norm", "skip") and c.resources == Resources(1.0, 0.0)
    assert c.package_version and c.created.endswith("Z")
    text = c.to_yaml()
    back = StudyConfig.from_yaml(text)
    assert back == c and back.to_yaml() == text
    # The space is stored in full: a study written with a changed space reads back with that space.
    custom = PRESETS["paper"].replace(name="mine", p_debias=0.25)
    c2 = StudyConfig(**BASE, space=custom.to_dict())
    assert c2.preset == "mine" and StudyConfig.from_yaml(c2.to_yaml()).space_obj == custom


def _invalid_cases():
    for f in fields(StudyConfig):
        constraint = f.metadata["constraint"]
        if constraint is None:
            continue
        for bad in constraint.invalid_examples():
            yield pytest.param(f.name, bad, id=f"{f.name}={bad!r}")


@pytest.mark.parametrize("name,bad", list(_invalid_cases()))
def test_every_declared_constraint_gives_a_one_line_error(name, bad):
    with pytest.raises(SpecError) as e:
        StudyConfig(**{**BASE, name: bad})
    msg = str(e.value)
    assert msg.startswith(f"study.{name} = {bad!r}: ") and "\n" not in msg


@pytest.mark.parametrize(
    "change,message",
    [
        ({"dataset": "no-such-data"}, "study.dataset = 'no-such-data': must be one of 'waveform-noise'"),
        ({"architectures": -3}, "study.architectures = -3: must be an integer in [1, 1000000]"),
        ({"param_budget": 0}, "study.param_budget = 0: must be an integer >= 1"),
        ({"preset": "huge"}, "study.preset = 'huge': must be one of 'paper', 'extended'"),
        ({"siblings": ["colour"]}, "study.siblings = ['colour']: must be a list of distinct sibling axes"),
        ({"resources": {"gpus_per_arch": 1.5}}, "study.resources.gpus_per_arch = 1.5: must be 0, a fraction"),
        (
            {"resources": {"cpus_per_arch": 0}},
            "study.resources.cpus_per_arch = 0: must be a finite number in (0.0, inf)",
        ),
        ({"resources": {"tpus": 1}}, "study.resources.tpus = 1: is not a resource"),
        ({"max_retries": -1}, "study.max_retries = -1: must be an integer >= 0"),
        ({"nlc_window": [3, 1]}, "study.nlc_window = [3, 1]: must be null, 'auto', or two finite numbers 0 <= lo < hi"),
        ({"nlc_window": "1,3", "nlc_pilot": 20}, "study.nlc_pilot = 20: must stay 100 unless nlc_window = 'auto'"),
        ({"metrics": {"nlc_trajectory": [5, 2]}}, "MetricOptions.nlc_trajectory = [5, 2]: must be a strictly"),
        ({"colour": "red"}, "study.colour = 'red': is not a study key; allowed: dataset, architectures"),
        (
            {"preset": "paper", "space": {"name": "extended"}},
            "study.preset = 'paper': contradicts space.name = 'extended': give the preset's name or the space's",
        ),
    ],
)
def test_named_mistakes(change, message):
    with pytest.raises(SpecError) as e:
        StudyConfig.from_dict({**BASE, **change})
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_required_keys_and_bad_yaml_are_one_line_errors():
    with pytest.raises(SpecError, match=r"^study.architectures = None: is required$"):
        StudyConfig.from_dict({"dataset": "digits"})
    with pytest.raises(SpecError, match=r"^study.config = 'x.yaml': is not valid YAML at line 3$"):
        StudyConfig.from_yaml("dataset: digits\narchitectures: [1,\n", where="x.yaml")
    with pytest.raises(SpecError, match="must be a YAML mapping"):
        StudyConfig.from_yaml("- 1\n- 2\n")
    with pytest.raises(SpecError, match="MetricOptions.nlc_batches = 0"):
        StudyConfig(**BASE, metrics={"nlc_batches": 0})


def test_siblings_forms_and_resources():
    # "all": every axis that keeps the budget, as before width siblings existed (a study's plan does not change)
    assert (
        StudyConfig(**BASE, siblings="all").siblings == SIBLING_AXES[:5] == ("weights", "param", "norm", "skip", "imn")
    )
    assert StudyConfig(**BASE, siblings=True).siblings == SIBLING_AXES[:5]
    assert StudyConfig(**BASE, siblings="width,param").siblings == ("param", "width")
    assert StudyConfig(**BASE, siblings=["skip", "weights"]).siblings == ("weights", "skip")  # canonical order
    assert StudyConfig(**BASE, siblings=[]).siblings == () == StudyConfig(**BASE, siblings="none").siblings
    assert Resources(2.5, 0.25).threads == 2 and Resources(0.5, 0).threads == 1
    assert Resources.of({"gpus_per_arch": 2}).gpus_per_arch == 2.0


def test_science_keys_decide_a_resume_execution_keys_do_not():
    a = StudyConfig(**BASE, protocol="quick")
    assert set(SCIENCE_KEYS) | set(EXECUTION_KEYS) | {"package_version", "created"} == {f.name for f in fields(a)}
    assert (
        a.differences(
            a.with_execution(
                root="/data/elsewhere", cpus_per_arch=2, gpus_per_arch=0.5, max_retries=5, checkpoint_every_s=10
            )
        )
        == []
    )
    assert a.differences(a.replace(package_version="9.9", created="2000-01-01T00:00:00Z")) == []
    assert a.differences(StudyConfig(**{**BASE, "architectures": 4}, protocol="quick")) == ["architectures"]
    assert a.differences(StudyConfig(**BASE, protocol="paper", seed=1)) == ["seed", "protocol"]


def test_a_study_yaml_from_before_the_pruning_keys_and_the_added_options_is_the_same_study():
    """study.yaml written before ``nlc_window``, ``nlc_pilot``, ``metrics.nlc_trajectory`` and the space's ``imns``
    and ``gmp_inits`` existed: read now, it has their defaults and no science key differs from the same study
    asked now (a resume goes on); the windows normalize from both of their forms."""
    new = StudyConfig(**BASE, preset="extended", protocol="quick")
    old = new.to_dict()
    for key in ("nlc_window", "nlc_pilot"):
        del old[key]
    del old["metrics"]["nlc_trajectory"], old["space"]["imns"], old["space"]["gmp_inits"]
    read = StudyConfig.from_dict(old)
    assert read.differences(new) == [] and (read.nlc_window, read.nlc_pilot) == (None, 100)
    assert (
        StudyConfig(**BASE, nlc_window="0.5,2").nlc_window
        == (0.5, 2.0)
        == StudyConfig(**BASE, nlc_window=[0.5, 2]).nlc_window
    )
    auto = new.replace(nlc_window="auto", nlc_pilot=20)
    assert StudyConfig.from_yaml(auto.to_yaml()) == auto and new.differences(auto) == ["nlc_window", "nlc_pilot"]


def test_declared_defaults_and_constraints_read_as_a_config_does():
    """``StudyConfig.default``/``normalize``: what a study.yaml key means when absent or as written (the
    analysis reads a study.yaml through them)."""
    c = StudyConfig(**BASE)
    for key in ("seed", "preset", "param_budget", "siblings", "max_retries", "metrics"):
        value = StudyConfig.default(key)
        assert value == (getattr(c, key) if key != "metrics" else {}), key
    assert StudyConfig.normalize("siblings", "skip,norm") == ("norm", "skip")
    assert StudyConfig.normalize("param_budget", 5000) == 5000
    with pytest.raises(SpecError, match=r"^study\.param_budget = 0: "):
        StudyConfig.normalize("param_budget", 0)
    with pytest.raises(KeyError, match="'colour' is not a study key"):
        StudyConfig.default("colour")


def test_a_config_is_built_and_read_without_torch():
    """study.experiment.config, the analysis and the sampler never import torch: building a StudyConfig (its protocol,
    metric options and dataset name checked) and loading the analysis leave torch out of sys.modules."""
    code = (
        "import sys; from archstudy.study.experiment.config import StudyConfig; "
        "c = StudyConfig(dataset='digits', architectures=2, protocol='quick', metrics={'lar': True}); "
        "StudyConfig.from_yaml(c.to_yaml()); "
        "import archstudy.analysis, archstudy.sampling, archstudy.study.experiment.schema; "
        "from archstudy.study import MetricOptions; MetricOptions(); "
        "print(sorted(m for m in ('torch', 'ray') if m in sys.modules))"
    )
    root = Path(__file__).resolve().parents[3]
    res = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stderr[-2000:]


HEAD = "dataset: waveform-noise\narchitectures: 3\n"


def _hostile(case: str, alias_bomb) -> str:
    if case.startswith("bomb "):
        levels, under = case.split()[1:]
        return alias_bomb(int(levels), None if under == "-" else under, head=HEAD)
    if case == "larger than 1 MiB":
        return HEAD + "# " + "x" * (1 << 20) + "\n"
    if case == "nested 100000 deep":
        return HEAD + "dataset_options: {x: " + "[" * 100_000 + "]" * 100_000 + "}\n"
    if case == "a long value":
        return HEAD + "seed: '" + "9" * 100_000 + "'\n"
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case, message",
    [
        ("bomb 6 seed", "uses a YAML alias (*a) at line 5; an archstudy config takes none"),  # the echo was 3 MB
        ("bomb 9 seed", "uses a YAML alias"),
        ("bomb 9 dataset_options", "uses a YAML alias"),
        ("bomb 9 space", "uses a YAML alias"),
        ("bomb 9 -", "uses a YAML alias"),
        ("larger than 1 MiB", "is larger than 1 MiB (1048576 bytes); a config is small"),
        ("nested 100000 deep", "nests deeper than"),
        ("a long value", "study.seed = '99999999"),
    ],
)
def test_a_hostile_study_yaml_is_refused_at_once_in_one_short_line(case, message, alias_bomb, monkeypatch):
    """Refused before the work grows with what the file stands for (the 9-level bomb stands for 9^9 values, and
    took 37 s and 3.7 GB before aliases were refused): the reader consumes no YAML event past the first alias or
    the first level deeper than ``MAX_DEPTH`` (counted by PyYAML's own event stream of the text, independently),
    none of a file over the size bound, and says why in one short line. The work is counted, not timed: a reader
    that went on would fail here at its first event too many, before any expansion."""
    text = _hostile(case, alias_bomb)
    allowed = 0 if case == "larger than 1 MiB" else _events_until_refused(text) + 1  # + the parser's lookahead
    consumed = []
    get_event = config_yaml._BoundedLoader.get_event

    def counted(loader):
        consumed.append(1)
        assert len(consumed) <= allowed, f"the reader went on past event {allowed}"
        return get_event(loader)

    monkeypatch.setattr(config_yaml._BoundedLoader, "get_event", counted)
    with pytest.raises(SpecError) as e:
        StudyConfig.from_yaml(text, where="x/study.yaml")
    msg = str(e.value)
    assert message in msg and "\n" not in msg and len(msg) <= 400, msg[:1000]
    assert len(consumed) <= allowed


def _events_until_refused(text: str) -> int:
    """The YAML events of ``text`` up to its first alias or its first node deeper than ``config_yaml.MAX_DEPTH``
    (all of them where there is neither): what a bounded reader may consume."""
    depth = 0
    for n, event in enumerate(yaml.parse(text), 1):
        if isinstance(event, yaml.AliasEvent):
            return n
        if isinstance(event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if depth + 1 > config_yaml.MAX_DEPTH:
                return n
            depth += not isinstance(event, yaml.ScalarEvent)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    return n


def test_study_yaml_is_written_without_aliases_so_it_reads_back():
    shared = [1.0, 2.0]
    c = StudyConfig(**BASE, dataset_options={"a": {"w": shared}, "b": {"w": shared}})
    assert "&" not in c.to_yaml() and StudyConfig.from_yaml(c.to_yaml()) == c


@pytest.mark.parametrize("key", ["seed", "dataset_seed"])
def test_a_seed_is_what_numpy_and_the_parquet_int64_column_both_take(key):
    """The largest seed a config allows seeds numpy's SeedSequence and fits the results' int64 study_seed
    column; one more is refused up front, not after training every architecture, when its row is written."""
    import numpy as np
    import pyarrow as pa

    top = 2**63 - 1
    assert StudyConfig(**BASE, **{key: top}).to_dict()[key] == top
    np.random.SeedSequence([top, 0]).generate_state(1)
    assert pa.array([top], pa.int64()).to_pylist() == [top]
    with pytest.raises(OverflowError):
        pa.array([top + 1], pa.int64())
    with pytest.raises(SpecError, match=rf"^study\.{key} = {top + 1}: must be an integer in \[0, {top}\]$"):
        StudyConfig(**BASE, **{key: top + 1})


@pytest.mark.parametrize(
    "text, message",
    [
        (HEAD + "architectures: 5\n", "gives the key 'architectures' twice, at lines 2 and 3; each key once"),
        (HEAD + "protocol: {num_lrs: 2, num_lrs: 3}\n", "gives the key 'num_lrs' twice, at line 3 (columns 12 and 24)"),
    ],
)
def test_a_key_given_twice_is_refused_not_the_last_one_taken(text, message):
    """PyYAML keeps the last of two equal keys: `architectures: 2` then `5` ran 5 without a word."""
    with pytest.raises(SpecError) as e:
        StudyConfig.from_yaml(text, where="x/study.yaml")
    assert str(e.value).startswith("study.config = 'x/study.yaml': ") and message in str(e.value)
    assert config_yaml.parse("a: {b: 1}\nc: [{b: 2}, {b: 3}]\n", "w", "f", "s") == {
        "a": {"b": 1},
        "c": [{"b": 2}, {"b": 3}],
    }


@pytest.mark.parametrize(
    "protocol, message",
    [
        ({"num_lrs": 2, "lrs": [0.1, 0.2, 0.3]}, "Protocol.num_lrs = 2: must be len(lrs) = 3"),
        ({"preset": "nosuch", "num_lrs": 2}, "Protocol.preset = 'nosuch': must be one of 'paper', 'adam'"),
    ],
)
def test_a_study_protocol_that_contradicts_itself_or_names_no_preset_is_refused(protocol, message):
    with pytest.raises(SpecError) as e:
        StudyConfig(**BASE, protocol=protocol)
    assert str(e.value).startswith(message)


@pytest.mark.parametrize("text", ["1e-8", "1E-8", "+1e-8", "1.0e-8", "10e-9", ".1e-7", "0.00000001"])
def test_a_number_in_any_of_yaml_s_forms_is_a_number(text):
    """YAML 1.2 reads ``1e-8`` as a float (YAML 1.2.2, 10.3.2); PyYAML's YAML 1.1 rules would give the string."""
    config = StudyConfig.from_yaml(f"dataset: waveform-noise\narchitectures: 3\nprotocol: {{lr_min_scale: {text}}}\n")
    assert config.protocol["lr_min_scale"] == pytest.approx(1e-8, rel=1e-15)
    assert config_yaml.parse("a: 1.5e8\nb: 3E5\nc: 12e45x\nd: 0x1e5", "w", "f", "s") == {
        "a": 1.5e8,
        "b": 3e5,
        "c": "12e45x",
        "d": 0x1E5,
    }
    assert config_yaml.parse(config_yaml.dump({"id": "12e45"}), "w", "f", "s") == {"id": "12e45"}  # a string stays

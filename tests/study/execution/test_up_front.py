"""What a study asks for is bounded and checked against its data before the study starts: the variability lattice
against the machine's memory, ``region_k_max`` against a declared ceiling, the keys archstudy derives from the data
(``d_in``, ``d_out``, ``data_fingerprint``) against the data. Before, each was accepted and then failed in every
unit (a lattice of 10^12 points, an ``OverflowError``), or a new study's wrong ``d_in`` was refused with words for
an old study ("the study was created with d_in = 7")."""

import io
import os

import pytest
import torch

from archstudy.sampling import ArchSpec, SpecError, UserError
from archstudy.study.execution import memory
from archstudy.study.execution.driver import run_study
from archstudy.study.experiment.metric_options import K_CEILING, MetricOptions
from archstudy.study.experiment.protocol import PROTOCOLS
from archstudy.study.metrics.regions import lar_diameter
from archstudy.study.nn.network import build_network

KEYS = {"dataset": "waveform-noise", "architectures": 2, "param_budget": 3000, "protocol": "quick", "seed": 5}


def test_the_variability_lattice_is_a_term_of_the_memory_estimate():
    """L = g^2 (d_in + 2 w) elements; the peak is 8 max(training, L) + D (study.execution.memory)."""
    spec = ArchSpec(depth=3, width=50, d_in=40, d_out=3)
    protocol = PROTOCOLS["quick"]
    kwargs = {"n_train": 3000, "n_largest": 3000, "data": 1000}
    without = memory.estimate(spec, protocol, **kwargs)
    paper = memory.estimate(spec, protocol, **kwargs, grid=65)
    huge = memory.estimate(spec, protocol, **kwargs, grid=10**6)
    assert without.lattice == 0 and paper.lattice == 65**2 * (40 + 2 * 50) and huge.lattice == 10**12 * 140
    assert paper.bytes == 8 * max(paper.training, paper.lattice) + 1000
    assert huge.bytes == 8 * 10**12 * 140 + 1000 and "variability lattice 1,120 TB, the peak" in huge.terms()
    one_input = ArchSpec(depth=3, width=50, d_in=1, d_out=3)  # no plane through 1-D data: V is not measured
    assert memory.estimate(one_input, protocol, **kwargs, grid=10**6).lattice == 0


def test_a_variability_grid_beyond_the_machines_memory_is_refused_before_the_study_starts(tmp_path):
    out = tmp_path / "s"
    with pytest.raises(UserError) as e:
        run_study({**KEYS, "metrics": {"variability_grid": 1_000_000}}, out, progress=io.StringIO())
    assert "variability lattice" in str(e.value) and "lower metrics.variability_grid" in str(e.value), e.value
    assert not out.exists()


def test_region_k_max_is_bounded_by_a_ceiling_where_the_ladder_still_measures_the_data():
    with pytest.raises(SpecError, match="region_k_max = 1e[+]308: must be a finite number in"):
        MetricOptions.from_dict({"lar": True, "region_k_max": 1.0e308})
    assert MetricOptions.from_dict({"region_k_max": K_CEILING}).region_k_max == K_CEILING
    # a linear network's region is unbounded: E.1 is k_max itself, finite at the ceiling
    spec = ArchSpec(depth=3, width=8, d_in=4, d_out=3, activation="linear", bias_init="gaussian")
    x = torch.randn(60, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    got = lar_diameter(build_network(spec, seed=0), x, batches=1, directions=2, k_max=K_CEILING)
    assert got == pytest.approx(K_CEILING, rel=1e-12)


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("d_in", 7, "study.d_in = 7: is not the data's (waveform-noise has d_in = 40)"),
        ("d_out", 10, "study.d_out = 10: is not the data's (waveform-noise has d_out = 3)"),
        ("data_fingerprint", "0123456789abcdef", "study.data_fingerprint = '0123456789abcdef': is not the data's"),
    ],
)
def test_a_derived_key_of_a_new_study_is_checked_against_the_data(key, value, expected, tmp_path):
    out = tmp_path / "s"
    with pytest.raises(UserError) as e:
        run_study({**KEYS, key: value}, out, progress=io.StringIO())
    assert expected in str(e.value) and "leave it out of the config" in str(e.value), e.value
    assert not out.exists()


@pytest.mark.parametrize("created", [False, True])
def test_a_stop_on_a_write_error_advises_resume_only_where_a_study_was_created(created, tmp_path):
    """A full disk on a new study (before its study.yaml) advised `archstudy resume`, which then said "not a study"."""
    from archstudy.study.execution.driver import StudyStopped, _stops_on_write_errors
    from archstudy.study.execution.store import Store, StoreWriteError
    from archstudy.study.experiment.config import StudyConfig

    study = tmp_path / "s"
    study.mkdir()
    if created:
        Store(study).write_config(StudyConfig(**KEYS).replace(d_in=40, d_out=3))

    @_stops_on_write_errors
    def drive(store):
        raise StoreWriteError("study.yaml" if not created else "runs/x.parquet", "No space left on device")

    with pytest.raises(StudyStopped) as e:
        drive(Store(study))
    if created:
        assert f"`archstudy resume {study}` continues it once the location accepts writes again" in str(e.value)
    else:
        assert str(e.value) == (
            f"{study}: the study stopped before it was created: cannot write study.yaml (No space left on device); "
            "nothing stored was damaged: run the same `archstudy run` again once the location accepts writes"
        )


def test_address_auto_finds_the_users_own_cluster_or_says_none_was_found(tmp_path, monkeypatch):
    """`run --address auto` with no cluster of the user's own joined another job's Ray session on the machine (Ray's
    legacy `auto` takes any Ray process it finds): now `auto` is RAY_ADDRESS or what this user's `ray start --head`
    recorded, else one line."""
    import ray._private.services as services
    import ray._private.utils as ray_utils

    from archstudy.study.execution.ray_session import check_address, own_cluster

    record = tmp_path / "ray_current_cluster"
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray_utils, "get_ray_address_file", lambda temp_dir=None: str(record))
    monkeypatch.setattr(services, "find_gcs_addresses", lambda: {"127.0.0.1:6379"})  # another job's session
    with pytest.raises(UserError) as e:
        check_address("auto", timeout_s=5)
    assert str(e.value).startswith(
        f"--address auto: no Ray cluster of yours was found on this node (RAY_ADDRESS is unset and no `ray start "
        f"--head` recorded one in {record})"
    ), e.value
    monkeypatch.setenv("RAY_ADDRESS", "auto")  # Ray's own spelling of "find it": described as what it is
    with pytest.raises(UserError) as e:
        own_cluster("auto")
    assert str(e.value).startswith(
        "RAY_ADDRESS=auto: no Ray cluster of yours was found on this node (RAY_ADDRESS is auto and no `ray start "
    ), e.value
    monkeypatch.delenv("RAY_ADDRESS")
    record.write_text("10.1.2.3:6380")
    assert own_cluster("auto") == "10.1.2.3:6380" and own_cluster("h:1") == "h:1" and own_cluster(None) is None
    monkeypatch.setenv("RAY_ADDRESS", "10.9.9.9:6379")
    assert own_cluster("auto") == "10.9.9.9:6379"
    monkeypatch.delenv("RAY_ADDRESS")
    if os.geteuid() == 0:  # a record another user's `ray start` wrote is not this user's cluster
        os.chown(record, 4321, -1)
        with pytest.raises(UserError, match=r"was started by another user \(uid 4321\)"):
            own_cluster("auto")

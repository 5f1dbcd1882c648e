"""study.execution.ray_session leaves the process's SIGTERM handler as it found it (ray.init installs its own),
keeping the caller's Python handler during the session (the CLI's SIGTERM-as-Ctrl-C)."""

import signal

import pytest
import ray

from archstudy.study.execution.ray_session import ray_session


def test_the_callers_sigterm_handler_is_kept_during_and_after_the_session():
    if ray.is_initialized():
        pytest.skip("a Ray session of another test is up: ray_session would not start its own")

    def mine(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        with ray_session() as embedded:
            assert embedded and ray.is_initialized()
            assert signal.getsignal(signal.SIGTERM) is mine
        assert not ray.is_initialized() and signal.getsignal(signal.SIGTERM) is mine
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        with ray_session():
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # Ray's own, which exits
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize(
    "asked, env, expected",
    [
        (None, None, "local"),  # never the cluster a `ray start` on this machine recorded in /tmp/ray
        (None, "10.0.0.1:6379", "10.0.0.1:6379"),  # a Ray job's driver: the cluster it was submitted to
        ("auto", "10.0.0.1:6379", "10.0.0.1:6379"),  # auto: the user's own cluster, RAY_ADDRESS first (as Ray's)
        ("10.0.0.2:6379", "10.0.0.1:6379", "10.0.0.2:6379"),  # an address given wins
    ],
)
def test_the_embedded_ray_is_a_new_local_one_unless_an_address_is_given(monkeypatch, asked, env, expected):
    if ray.is_initialized():
        pytest.skip("a Ray session of another test is up: ray_session would not start its own")
    seen = {}

    class Stop(Exception):
        pass

    def init(**kwargs):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(ray, "init", init)
    if env is None:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
    else:
        monkeypatch.setenv("RAY_ADDRESS", env)
    with pytest.raises(Stop):
        with ray_session(asked):
            pass
    assert seen["address"] == expected

"""study.runner.ray_session leaves the process's SIGTERM handler as it found it (ray.init installs its own),
keeping the caller's Python handler during the session (the CLI's SIGTERM-as-Ctrl-C)."""

import signal

import pytest
import ray

from study.runner import ray_session


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

"""The smoke test's signal handling: inside interrupt_handlers() SIGTERM and SIGINT raise Interrupted
(and a second one is ignored, so it cannot cut the cleanup short); on leaving, also on an exception,
the handlers from before are back."""

from __future__ import annotations

import signal

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke._interrupt import Interrupted, interrupt_handlers


def _before_term(signum, frame):
    raise AssertionError("the handler from before ran inside interrupt_handlers()")


def _before_int(signum, frame):
    raise AssertionError("the handler from before ran inside interrupt_handlers()")


@pytest.fixture
def before():
    """Handlers of our own installed before the test, the process's own restored after it."""
    saved = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGTERM, _before_term)
    signal.signal(signal.SIGINT, _before_int)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, saved[0])
        signal.signal(signal.SIGINT, saved[1])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_inside_raises_interrupted_once_and_the_handlers_are_restored_after(before, signum):
    with interrupt_handlers():
        assert signal.getsignal(signal.SIGTERM) not in (_before_term, signal.SIG_DFL, signal.SIG_IGN)
        assert signal.getsignal(signal.SIGINT) is signal.getsignal(signal.SIGTERM)
        with pytest.raises(Interrupted) as e:
            signal.raise_signal(signum)
        assert e.value.msg.startswith(f"Interrupted by {signum.name}: the smoke test stopped"), e.value.msg
        # a second signal must not cut the cleanup short
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGTERM) is _before_term
    assert signal.getsignal(signal.SIGINT) is _before_int


def test_the_handlers_are_restored_on_an_exception(before):
    with pytest.raises(RuntimeError, match="boom"), interrupt_handlers():
        assert signal.getsignal(signal.SIGTERM) is not _before_term
        raise RuntimeError("boom")
    assert signal.getsignal(signal.SIGTERM) is _before_term
    assert signal.getsignal(signal.SIGINT) is _before_int
    with pytest.raises(Interrupted), interrupt_handlers():
        signal.raise_signal(signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is _before_term
    assert signal.getsignal(signal.SIGINT) is _before_int

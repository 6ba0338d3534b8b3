# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: how a smoke test learns it must stop — SIGTERM or SIGINT while its
objects exist, or the ansible process that started it gone. Not a public API."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import stat
import sys

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError


class Interrupted(GangError):
    pass


def _on_term(signum, frame):
    # a second signal must not cut the cleanup short
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise Interrupted(
        f"Interrupted by {signal.Signals(signum).name}: the smoke test stopped and removed its objects "
        "(any it could not are removed by the next run, or by state=absent)"
    )


@contextlib.contextmanager
def interrupt_handlers():
    """Inside, SIGTERM and SIGINT raise Interrupted (once: a second signal is ignored); on leaving, also
    on an exception, the handlers from before are back."""
    old = signal.signal(signal.SIGTERM, _on_term)
    old_int = signal.signal(signal.SIGINT, _on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)


def controller_gone(fd: int | None = None) -> bool:
    """True when our output is a pipe nobody reads any more: the ansible process that started the
    module was killed (an interrupted ansible-playbook leaves its module running otherwise)."""
    try:
        fd = sys.stdout.fileno() if fd is None else fd
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        poller = select.poll()
        poller.register(fd, select.POLLERR | select.POLLHUP)
        return any(ev & (select.POLLERR | select.POLLHUP) for _fd, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False

# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: independent API calls sent together, on threads, each as bounded by the module's
``api_timeout`` as before: on a cluster a round trip away, N calls take about N / 8 round trips instead of N.

- ``each(client, ask, items)`` is ``[ask(item) for item in items]``, asked ``WORKERS`` at a time. The answers come in
  the items' order; the first failure in that order is raised, as one at a time would raise it, and the items not
  asked yet when it comes are not asked. Once one finds the API server unreachable, the items not started are not
  asked either: an unreachable cluster costs one ``api_timeout``, not one per round of eight.
- ``ahead(client, reads)``, a context manager: the reads (path, what, query) a runner is about to make are asked for at
  once, while it goes on; the client's ``get`` of the same path, what and query then hands over the answer (or raises
  the failure) of the read asked ahead, once, instead of asking again. A read asked ahead that the runner never makes
  is dropped; ``unused`` names them once the block ends. Once one of them finds the API server unreachable, or the
  block ends, those not started yet are not sent: the runner asks them itself if it still makes them, so that an
  unreachable cluster costs the runner one ``api_timeout``, as one read after another did, not one per round of reads.

Not a public API."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError

# calls at once; fewer where the kubernetes client keeps fewer connections
WORKERS = 8
# the answer of a read asked ahead that was not sent (see ``ahead``): the client's get asks it itself
NOT_SENT = object()


def pool_size(client) -> int:
    """How many connections the kubernetes client keeps (its configuration's ``connection_pool_maxsize``, five per CPU
    by default): no more calls are sent at once, or urllib3 would open and drop connections, warning each time."""
    config = getattr(getattr(getattr(client, "api", None), "client", None), "configuration", None)
    size = getattr(config, "connection_pool_maxsize", None)
    return size if isinstance(size, int) and size > 0 else WORKERS


def each(client, ask, items) -> list:
    """``ask(item)`` for each of ``items``, several at a time; the answers in the items' order."""
    items = list(items)
    if len(items) < 2:
        return [ask(item) for item in items]
    stop: list = []

    def one(item):
        # an item not started once the cluster was found unreachable comes after the one that found it: that one's
        # failure is raised first, and this answer is never read
        if stop:
            return NOT_SENT
        try:
            return ask(item)
        except ApiError as e:
            if not e.status:
                stop.append(e)
            raise

    pool = ThreadPoolExecutor(max_workers=min(WORKERS, len(items), pool_size(client)))
    try:
        return [f.result() for f in [pool.submit(one, item) for item in items]]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def read_key(path: str, what: str, query: dict | None) -> tuple:
    """What makes two reads the same read: the path, the name messages give it, and the query."""
    return (path, what, tuple(sorted((query or {}).items())))


class ahead:  # noqa: N801  (used as a function: ``with ahead(client, reads):``)
    """The ``reads`` (path, what, query), asked for on threads as the block starts; see the module's text. A client
    without ``early`` (a stand-in of a unit test) asks each read when the runner makes it, as before."""

    def __init__(self, client, reads):
        self.client, self.reads, self.unused = client, list(reads), []
        self._pool, self._keys, self._stop = None, [], False

    def __enter__(self):
        early = getattr(self.client, "early", None)
        if not isinstance(early, dict) or not self.reads:
            return self
        # the runner's own calls take a connection of the pool too
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(WORKERS, len(self.reads), pool_size(self.client) - 1)))
        for path, what, query in self.reads:
            key = read_key(path, what, query)
            if key not in early:
                early[key] = self._pool.submit(self._ask, path, what, query)
                self._keys.append(key)
        return self

    def _ask(self, path: str, what: str, query: dict | None):
        if self._stop:
            return NOT_SENT
        try:
            return self.client.request("GET", path, query=query, what=what)
        except ApiError as e:
            if not e.status:  # not answered: the reads after it would wait as long
                self._stop = True
            raise

    def __exit__(self, *exc):
        if self._pool is None:
            return False
        self._stop = True
        early = self.client.early
        self.unused = [key for key in self._keys if early.pop(key, None) is not None]
        self._pool.shutdown(wait=True, cancel_futures=True)
        return False

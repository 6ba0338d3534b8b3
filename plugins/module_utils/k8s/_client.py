# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the API client. Requests go through the public ``request()`` of the ``kubernetes``
client's DynamicClient with ``serialize=False`` (the raw HTTP response, on every client version from 24 to 37) and
come back as plain dicts. Every call is bounded by the module's ``api_timeout``; only transport and API errors become
ApiError (``_errors``) — anything else is a bug and is raised as it is. The connection is ``_connect``'s, the reading
of a streamed body ``_stream``'s. Not a public API."""

from __future__ import annotations

import json
import time

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _api
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError, NotFound
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _connect, _errors, _stream, _together

_VERBS = {"GET": "read", "POST": "create", "PUT": "replace", "PATCH": "patch", "DELETE": "delete"}


class Client:
    """The collection's API client: JSON in, dicts out, errors as ApiError, every call bounded in time.

    Requests go through the public ``request()`` of the ``kubernetes`` client's DynamicClient (the one
    kubernetes.core's ``get_api_client()`` builds) with ``serialize=False``, which hands back the raw
    HTTP response on every client version kubernetes.core supports; nothing here relies on the
    argument shape of generated code."""

    def __init__(self, api, server: str = "", timeout: float = _connect.DEFAULT_TIMEOUT, context: str = ""):
        self.api = _connect.dynamic(api)  # a generated-code client (the lab's tests): its public dynamic layer
        self.server = _connect.public_url(server or getattr(getattr(api, "configuration", None), "host", ""))
        self.context = context
        self.timeout = float(timeout)
        self.retry_for = float(timeout)
        # reads asked for ahead (``_together.ahead``), by ``_together.read_key``: a get of one takes its answer
        self.early: dict = {}

    @classmethod
    def from_params(cls, params: dict) -> Client:
        """The client for a module's parameters (kubernetes.core's auth options, ``api_timeout``)."""
        return cls(*_connect.connect(params))

    def request(
        self,
        method: str,
        path: str,
        body=None,
        query: dict | None = None,
        content_type: str = "application/json",
        what: str = "",
        timeout: float | None = None,
        retry_for: float | None = None,
        decode=None,
    ) -> dict:
        """One API call. ``what`` names the object for messages, e.g. 'Deployment kubeflow/x'.

        Each attempt is bounded by ``timeout`` (default: the client's, i.e. the module's api_timeout)
        for connect and read. While the API server cannot be reached (a restart), the call is retried
        for ``retry_for`` seconds (default: the same timeout): any call whose connection was refused
        (it never reached the server), and reads also on a broken connection or 429/5xx. ``decode``
        reads the response instead of the default (the whole body as one JSON document)."""
        per_try = self.timeout if timeout is None else float(timeout)
        window = self.retry_for if retry_for is None else retry_for
        deadline = time.monotonic() + window
        delay = 0.2
        while True:
            left = deadline - time.monotonic()
            bound = per_try if window <= 0 else max(1.0, min(per_try, left))
            try:
                return self._request_once(method, path, body, query, content_type, what, bound, decode)
            except ApiError as e:
                if not _errors.transient(method, e) or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(2.0, delay * 2)

    def _call(self, method, path, query, headers, body, content_type, timeout, obj=""):
        """The raw response (urllib3), or the API's or the transport's error as ApiError. Anything else
        (a bug) is not caught here: it fails the module as an internal error, never retried."""
        verb = _VERBS.get(method, method.lower())
        if not isinstance(timeout, tuple):
            # (connect, read): the client's REST layer bounds a call by an int or a pair only, and ignores a float
            timeout = (timeout, timeout)
        try:
            return self.api.request(
                method,
                path,
                body=body,
                serialize=False,
                query_params=list((query or {}).items()),
                header_params=headers,
                content_type=content_type if body is not None else None,
                _request_timeout=timeout,
            )
        except _errors.api_exception() as e:
            status = getattr(e, "status", 0) or 0
            if not status:  # the client wraps TLS errors as status 0
                raise self._unreachable(method, path, e, timeout) from e
            raise _errors.http_error(status, getattr(e, "body", ""), verb, obj or path, self.server) from e
        except _errors.transport_errors() as e:
            raise self._unreachable(method, path, e, timeout) from e

    def _unreachable(self, method, path, e, timeout) -> ApiError:
        t = timeout[1] if isinstance(timeout, tuple) else timeout
        why = _errors.why_unreachable(e, t)
        err = ApiError(
            f"Failed to reach {_connect.api_named(self.server, self.context)} for {method} {path}: {why}", 0, why
        )
        err.refused = _errors.refused(e)
        err.lasting = _errors.lasting(why)
        return err

    def _request_once(self, method, path, body, query, content_type, what, timeout, decode=None) -> dict:
        resp = self._call(method, path, query, {"Accept": "application/json"}, body, content_type, timeout, what)
        try:
            if decode is None:
                data = resp.data
                return json.loads(data) if data else {}
            return decode(resp)
        except _errors.transport_errors() as e:  # the body broke off (API server restart, read timeout)
            why = _errors.why_unreachable(e, timeout[1] if isinstance(timeout, tuple) else timeout)
            raise ApiError(
                f"Failed to read {what or path} from {_connect.api_named(self.server, self.context)}: {why}", 0, why
            ) from e
        except ValueError as e:  # not JSON, or the list ended inside its items
            why = "the answer is not a whole JSON document"
            raise ApiError(
                f"Failed to read {what or path} from {_connect.api_named(self.server, self.context)}: {why}", 0, why
            ) from e
        finally:
            resp.release_conn()

    def apply(self, path: str, obj: dict, field_manager: str, what: str = "", dry_run: bool = False) -> dict:
        """A server-side apply of ``obj`` at ``path`` (conflicts forced), or its dry run."""
        query = {"fieldManager": field_manager, "force": "true"}
        if dry_run:
            query["dryRun"] = "All"
        body = obj if _connect.client_major() >= 25 else json.dumps(obj).encode()
        return self.request(
            "PATCH", path, body=body, query=query, content_type="application/apply-patch+yaml", what=what
        )

    def get(self, path: str, what: str = "", query: dict | None = None, retry_for: float | None = None) -> dict:
        early = self.early.pop(_together.read_key(path, what, query), None) if self.early else None
        if early is not None:
            answer = early.result()
            if answer is not _together.NOT_SENT:
                return answer
        return self.request("GET", path, query=query, what=what, retry_for=retry_for)

    def get_or_none(self, path: str, what: str = "") -> dict | None:
        try:
            return self.get(path, what)
        except NotFound:
            return None

    def list(self, path: str, what: str = "", **query) -> list[dict]:
        """All items of a list call, following continue tokens."""
        items: list[dict] = []
        q = _api.list_query(**query)
        while True:
            data = self.get(path, what, q)
            items.extend(data.get("items") or [])
            cont = (data.get("metadata") or {}).get("continue")
            if not cont:
                return items
            q["continue"] = cont

    def scan(self, path: str, what: str = "", keep=None, **query) -> list:
        """All items of a list call in one request, whatever the cluster's size (no pages, so the
        number of requests does not grow with it), each passed through ``keep`` as it is decoded (see
        ``_stream.stream_items``): a cluster-wide scan holds only what the caller keeps of each object. ``keep``
        may fold the items instead (an accumulator that returns None): one with a ``restart()`` has it
        called before each attempt, so that a body that broke off and is read again is not folded twice."""
        q = {k: v for k, v in query.items() if v is not None}

        def decode(resp):
            restart = getattr(keep, "restart", None)
            if restart is not None:
                restart()
            return _stream.stream_items(resp.stream(1 << 16), keep)

        return self.request("GET", path, query=q, what=what, decode=decode)

    def list_or_empty(self, path: str, what: str = "", **query) -> list[dict]:
        """Like list, but an API that is not served (CRD not installed) lists nothing."""
        try:
            return self.list(path, what, **query)
        except NotFound:
            return []

    def watch(self, path: str, timeout_seconds: int, what: str = "", **query):
        """Events of one watch call (ends when the server closes it after ``timeout_seconds``); the
        connection is bounded by the client's timeout, each read by the watch's length plus it."""
        q = {k: v for k, v in query.items() if v is not None}
        q.update(watch="true", timeoutSeconds=max(1, int(timeout_seconds)), allowWatchBookmarks="true")
        try:
            resp = self._call(
                "GET",
                path,
                q,
                {"Accept": "application/json"},
                None,
                None,
                (self.timeout, timeout_seconds + self.timeout),
            )
        except ApiError as e:
            e.msg = f"Failed to watch {what or path}: {e.reason or e.msg}" if e.status else e.msg
            e.args = (e.msg,)
            raise
        try:
            for line in _stream.lines(resp):
                yield json.loads(line)
        except (ValueError, *_errors.transport_errors()) as e:  # the stream broke (API server restart): caller re-lists
            why = (
                "an event is not JSON"
                if isinstance(e, ValueError)
                else _errors.why_unreachable(e, timeout_seconds + self.timeout)
            )
            raise ApiError(
                f"Watch of {what or path} on {_connect.api_named(self.server, self.context)} broke: {why}", 0, why
            ) from e
        finally:
            resp.release_conn()

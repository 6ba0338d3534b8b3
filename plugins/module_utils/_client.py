# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to this collection: the API client. Authentication is kubernetes.core's (the same
options, K8S_AUTH_* environment fallbacks, kubeconfig/context handling); requests go through the
``kubernetes`` Python client and come back as plain dicts. Not a public API."""

from __future__ import annotations

import codecs
import copy
import json
import os
import time
import traceback

from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import (
    ApiError,
    Conflict,
    Forbidden,
    GangError,
    NotFound,
)

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC as _K8S_AUTH
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

    HAS_K8S_CORE = True
    K8S_CORE_IMPORT_ERROR = None
except ImportError:
    _K8S_AUTH = {}
    HAS_K8S_CORE = False
    K8S_CORE_IMPORT_ERROR = traceback.format_exc()

try:
    import kubernetes

    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()

AUTH_ARG_SPEC = copy.deepcopy(_K8S_AUTH)

_VERBS = {"GET": "read", "POST": "create", "PUT": "replace", "PATCH": "patch", "DELETE": "delete"}


def check_requirements(module) -> None:
    """Fail the module (from main()) when a required library is missing."""
    from ansible.module_utils.basic import missing_required_lib

    if not HAS_K8S_CORE:
        module.fail_json(
            msg="This module needs the kubernetes.core collection: ansible-galaxy collection install kubernetes.core "
            "(or pip install ansible, which bundles it)",
            exception=K8S_CORE_IMPORT_ERROR,
        )
    if not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=KUBERNETES_IMPORT_ERROR)


def _message_of(body: str) -> str:
    try:
        return json.loads(body).get("message") or body
    except (ValueError, AttributeError):
        return body or ""


RETRY_SECONDS = 30.0
_RETRY_STATUS = (429, 500, 502, 503, 504)
_NOT_CONNECTED = ("NewConnectionError", "ConnectTimeoutError")


def _refused(exc: BaseException) -> bool:
    """True when the connection was never made (so the request never reached the server)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ConnectionRefusedError) or type(exc).__name__ in _NOT_CONNECTED:
            return True
        exc = getattr(exc, "reason", None) or exc.__cause__ or exc.__context__
    return False


def stream_items(chunks, keep=None) -> list:
    """The items of a JSON list response, decoded one at a time as its body arrives (``chunks``: an
    iterable of bytes) and each passed through ``keep``, so that only what ``keep`` returns stays in
    memory, never the whole body. The API server writes a list's ``items`` last, after its metadata."""
    keep = keep or (lambda o: o)
    dec = json.JSONDecoder()
    utf8 = codecs.getincrementaldecoder("utf-8")()
    chunks = iter(chunks)
    buf, pos, items = "", 0, []

    def read() -> bool:
        nonlocal buf, pos
        for data in chunks:
            buf, pos = buf[pos:] + utf8.decode(data), 0
            return True
        return False

    while buf.find('"items":[') < 0:
        if not read():
            return [keep(o) for o in json.loads(buf).get("items") or []]  # an empty list's items: null
    pos = buf.find('"items":[') + len('"items":[')
    while True:
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n,":
                pos += 1
            if pos < len(buf) or not read():
                break
        if pos >= len(buf):
            raise ValueError("the list ended inside its items")
        if buf[pos] == "]":
            return items
        try:
            obj, pos = dec.raw_decode(buf, pos)
        except json.JSONDecodeError:
            if not read():
                raise
            continue
        items.append(keep(obj))


def _transient(method: str, e: ApiError) -> bool:
    if getattr(e, "refused", False):
        return True
    return method == "GET" and (e.status == 0 or e.status in _RETRY_STATUS)


class Client:
    """A thin layer over kubernetes.client.ApiClient: JSON in, dicts out, errors as ApiError."""

    retry_for = RETRY_SECONDS

    def __init__(self, api_client, server: str = ""):
        self.api = api_client
        self.server = server or getattr(api_client.configuration, "host", "")

    @classmethod
    def from_params(cls, params: dict) -> Client:
        auth = {k: params.get(k) for k in AUTH_ARG_SPEC}
        kubeconfig = auth.get("kubeconfig") or os.environ.get("K8S_AUTH_KUBECONFIG")
        if kubeconfig and isinstance(kubeconfig, str) and not os.path.isfile(os.path.expanduser(kubeconfig)):
            raise GangError(
                f"kubeconfig {kubeconfig} not found or not a file; set kubeconfig (or K8S_AUTH_KUBECONFIG) "
                "to a readable kubeconfig, or give host and credentials"
            )
        try:
            k8s = get_api_client(**auth)
        except Exception as e:  # noqa: BLE001 - config, TLS and connection errors alike
            at = f" at {auth['host']}" if auth.get("host") else ""
            raise GangError(
                f"Failed to reach the Kubernetes API{at}: {e}. Check kubeconfig/context/host "
                "(or K8S_AUTH_KUBECONFIG) and that the API server is up"
            ) from e
        api_client = k8s.client.client
        return cls(api_client, api_client.configuration.host)

    def request(
        self,
        method: str,
        path: str,
        body=None,
        query: dict | None = None,
        content_type: str = "application/json",
        what: str = "",
        timeout: float = 30,
        retry_for: float | None = None,
        decode=None,
    ) -> dict:
        """One API call. ``what`` names the object for messages, e.g. 'Deployment kubeflow/x'.

        While the API server cannot be reached (a restart), the call is retried for ``retry_for``
        seconds (default ``RETRY_SECONDS``): any call whose connection was refused (it never reached
        the server), and reads also on a broken connection or 429/5xx. ``decode`` reads the
        response instead of the default (the whole body as one JSON document)."""
        deadline = time.monotonic() + (self.retry_for if retry_for is None else retry_for)
        delay = 0.2
        while True:
            try:
                return self._request_once(method, path, body, query, content_type, what, timeout, decode)
            except ApiError as e:
                if not _transient(method, e) or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(2.0, delay * 2)

    def _request_once(self, method, path, body, query, content_type, what, timeout, decode=None) -> dict:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            resp = self.api.call_api(
                path,
                method,
                query_params=list((query or {}).items()),
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=timeout,
            )
        except kubernetes.client.ApiException as e:
            msg = _message_of(e.body if isinstance(e.body, str) else (e.body or b"").decode(errors="replace"))
            verb = _VERBS.get(method, method.lower())
            obj = what or path
            if e.status == 404:
                raise NotFound(f"{obj} not found", 404, msg) from e
            if e.status == 403:
                raise Forbidden(f"Forbidden to {verb} {obj}: {msg}", 403, msg) from e
            if e.status == 409:
                raise Conflict(f"Conflict on {verb} {obj}: {msg}", 409, msg) from e
            raise ApiError(f"Failed to {verb} {obj}: {msg or e.reason}", e.status or 0, msg) from e
        except Exception as e:  # noqa: BLE001 - urllib3 connection errors and timeouts
            err = ApiError(f"Failed to reach the Kubernetes API at {self.server} ({method} {path}): {e}", 0, str(e))
            err.refused = _refused(e)
            raise err from e
        resp = resp[0] if isinstance(resp, tuple) else resp
        if decode is None:
            return json.loads(resp.data) if resp.data else {}
        try:
            return decode(resp)
        except Exception as e:  # noqa: BLE001 - the body broke off (API server restart) or is not JSON
            raise ApiError(f"Failed to read {what or path} from {self.server}: {e}", 0, str(e)) from e
        finally:
            resp.release_conn()

    def get(self, path: str, what: str = "", query: dict | None = None, retry_for: float | None = None) -> dict:
        return self.request("GET", path, query=query, what=what, retry_for=retry_for)

    def get_or_none(self, path: str, what: str = "") -> dict | None:
        try:
            return self.get(path, what)
        except NotFound:
            return None

    def list(self, path: str, what: str = "", **query) -> list[dict]:
        """All items of a list call, following continue tokens."""
        items: list[dict] = []
        q = {k: v for k, v in query.items() if v is not None}
        q.setdefault("limit", 500)
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
        ``stream_items``): a cluster-wide scan holds only what the caller keeps of each object."""
        q = {k: v for k, v in query.items() if v is not None}
        return self.request("GET", path, query=q, what=what, decode=lambda r: stream_items(r.stream(1 << 16), keep))

    def list_or_empty(self, path: str, what: str = "", **query) -> list[dict]:
        """Like list, but an API that is not served (CRD not installed) lists nothing."""
        try:
            return self.list(path, what, **query)
        except NotFound:
            return []

    def watch(self, path: str, timeout_seconds: int, what: str = "", **query):
        """Events of one watch call (ends when the server closes it after ``timeout_seconds``)."""
        from kubernetes.watch.watch import iter_resp_lines

        q = {k: v for k, v in query.items() if v is not None}
        q.update(watch="true", timeoutSeconds=max(1, int(timeout_seconds)), allowWatchBookmarks="true")
        try:
            resp = self.api.call_api(
                path,
                "GET",
                query_params=list(q.items()),
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=(10, timeout_seconds + 10),
            )
        except kubernetes.client.ApiException as e:
            raise ApiError(f"Failed to watch {what or path}: {e.reason}", e.status or 0, str(e.body)) from e
        except Exception as e:  # noqa: BLE001 - connection refused while the API server restarts
            raise ApiError(f"Failed to reach the Kubernetes API at {self.server} (watch {path}): {e}", 0, str(e)) from e
        resp = resp[0] if isinstance(resp, tuple) else resp
        try:
            for line in iter_resp_lines(resp):
                yield json.loads(line)
        except Exception as e:  # noqa: BLE001 - the stream broke (API server restart): caller re-lists
            raise ApiError(f"Watch of {what or path} broke: {e}", 0, str(e)) from e
        finally:
            resp.release_conn()

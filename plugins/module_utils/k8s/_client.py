# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the API client. Authentication is kubernetes.core's (the same
options, K8S_AUTH_* environment fallbacks, kubeconfig/context handling); requests go through the
public ``request()`` of the ``kubernetes`` client's DynamicClient with ``serialize=False`` (the raw
HTTP response, on every client version from 24 to 37) and come back as plain dicts. Every call is
bounded by the module's ``api_timeout``; only transport and API errors become ApiError — anything
else is a bug and is raised as it is. Not a public API."""

from __future__ import annotations

import codecs
import copy
import json
import os
import threading
import time
import traceback
from urllib.parse import urlsplit, urlunsplit

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
    from kubernetes.client import ApiClient, Configuration
    from kubernetes.dynamic import DynamicClient

    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()

AUTH_ARG_SPEC = copy.deepcopy(_K8S_AUTH)

_VERBS = {"GET": "read", "POST": "create", "PUT": "replace", "PATCH": "patch", "DELETE": "delete"}


def missing_requirement() -> dict | None:
    """None when the libraries a cluster module needs import; else the failed task's ``msg`` and ``exception``."""
    if not HAS_K8S_CORE:
        return dict(
            msg="This module needs the kubernetes.core collection: ansible-galaxy collection install kubernetes.core "
            "(or pip install ansible, which bundles it)",
            exception=K8S_CORE_IMPORT_ERROR,
        )
    if not HAS_KUBERNETES:
        from ansible.module_utils.basic import missing_required_lib

        return dict(msg=missing_required_lib("kubernetes"), exception=KUBERNETES_IMPORT_ERROR)
    return None


def _client_major() -> int:
    """The ``kubernetes`` client's major version. How its REST layer sends an apply patch's body differs: before 25
    it passes a text through and refuses a dict; from 25 it JSON-encodes what it is given (a text would go as one
    quoted string). kubernetes.core's server-side apply draws the same line."""
    try:
        import kubernetes

        return int(str(kubernetes.__version__).split(".", maxsplit=1)[0])
    except (ImportError, AttributeError, ValueError):  # pragma: no cover - missing_requirement stops the module first
        return 25


def _message_of(body) -> str:
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    body = body or ""
    try:
        return json.loads(body).get("message") or body
    except (ValueError, AttributeError):
        return body


DEFAULT_TIMEOUT = 30
_RETRY_STATUS = (429, 500, 502, 503, 504)
_NOT_CONNECTED = ("NewConnectionError", "ConnectTimeoutError", "NameResolutionError")


def _chain(exc: BaseException):
    """The exception and what caused it: urllib3's ``reason``, ``__cause__``, ``__context__``."""
    seen = set()
    while isinstance(exc, BaseException) and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        nxt = getattr(exc, "reason", None)
        exc = nxt if isinstance(nxt, BaseException) else (exc.__cause__ or exc.__context__)


def _refused(exc: BaseException) -> bool:
    """True when the connection was never made (so the request never reached the server)."""
    return any(isinstance(e, ConnectionRefusedError) or type(e).__name__ in _NOT_CONNECTED for e in _chain(exc))


def _transport_errors() -> tuple:
    """What a request raises when the network, TLS or the server's HTTP went wrong, as opposed to a bug."""
    import http.client

    errors = [OSError, http.client.HTTPException]
    try:
        import urllib3

        errors.append(urllib3.exceptions.HTTPError)
    except ImportError:
        pass
    return tuple(errors)


def why_unreachable(exc: BaseException, timeout: float) -> str:
    """A short reason, in words a user can act on, for a request that did not get an answer."""
    names = [type(e).__name__ for e in _chain(exc)]
    text = " ".join(str(e) for e in _chain(exc) if not isinstance(e, BaseException) or str(e))
    if any(n in ("ConnectTimeoutError",) for n in names):
        return f"no connection within {timeout:g}s"
    if any(n in ("ReadTimeoutError", "TimeoutError", "timeout") for n in names) or "timed out" in text:
        return f"no answer within {timeout:g}s"
    if _refused(exc) and ("refused" in text.lower() or any(isinstance(e, ConnectionRefusedError) for e in _chain(exc))):
        return "connection refused"
    if any(n in ("NameResolutionError", "gaierror") for n in names) or "Name or service not known" in text:
        return "the host name does not resolve"
    if any("SSL" in n for n in names) or "SSL" in text:
        if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
            return (
                "the server's TLS certificate could not be verified; set ca_cert to the cluster's CA "
                "(or validate_certs=false for a test cluster)"
            )
        if "WRONG_VERSION_NUMBER" in text or "wrong version number" in text:
            return "the server did not answer TLS; check the scheme and port in host"
        return "the TLS handshake failed; check host, ca_cert, client_cert and client_key"
    if any(n in ("ProtocolError", "RemoteDisconnected", "ConnectionResetError", "BrokenPipeError") for n in names):
        return "the server closed the connection"
    if any(n == "ProxyError" for n in names):
        return "the proxy refused the connection; check proxy and no_proxy"
    if any(isinstance(e, ConnectionRefusedError) for e in _chain(exc)) or _refused(exc):
        return "no connection could be made"
    return f"the connection failed ({names[-1] if names else 'unknown'})"


_IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def _option(auth: dict, name: str, alias: str = ""):
    """An authentication option as kubernetes.core reads it: the option, else its K8S_AUTH_* variable."""
    value = auth.get(name)
    if value is None:
        value = os.environ.get(f"K8S_AUTH_{name.upper()}") or (alias and os.environ.get(f"K8S_AUTH_{alias.upper()}"))
    return value or None


def _public_url(url) -> str:
    """``url`` without a trailing slash and without user information (user:password@ is a credential)."""
    text = str(url or "").strip().rstrip("/")
    if "@" not in text:
        return text
    try:
        parts = urlsplit(text)
    except ValueError:
        return ""
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _kubeconfig_target(kubeconfig, context) -> tuple[str, str]:
    """The server and the name of the context the ``kubernetes`` client loads from ``kubeconfig`` (a path,
    several joined by ``:``, a dict, or None: $KUBECONFIG or ~/.kube/config) for ``context`` (None: the
    current one), read with the client's own merge rules and without its credentials."""
    from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION, ConfigNode, KubeConfigMerger

    if isinstance(kubeconfig, dict):
        config = ConfigNode("kube-config", kubeconfig)
    else:
        config = KubeConfigMerger(kubeconfig or KUBE_CONFIG_DEFAULT_LOCATION).config
    name = context or config.safe_get("current-context")
    cluster_name = config["contexts"].get_with_name(name)["context"]["cluster"]
    return config["clusters"].get_with_name(cluster_name)["cluster"].safe_get("server") or "", name


def api_target(auth: dict) -> tuple[str, str]:
    """The URL of the API server and the kubeconfig context that kubernetes.core's client for the options
    ``auth`` uses, decided as it decides (host with credentials: no kubeconfig; else the kubeconfig, or
    in a pod its service account, with host over the kubeconfig's server), for messages. Neither is a
    secret, unlike the kubeconfig's path, which Ansible masks in a task's output as the value of a no_log
    option. Empty where it cannot be told: loading the configuration then fails with its own message."""
    host = _option(auth, "host")
    credentials = (
        _option(auth, "api_key")
        or (_option(auth, "username") and _option(auth, "password"))
        or (_option(auth, "client_cert", "cert_file") and _option(auth, "client_key", "key_file"))
    )
    if host and credentials:
        return _public_url(host), ""
    kubeconfig, context = _option(auth, "kubeconfig"), _option(auth, "context")
    pod_host, pod_port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not kubeconfig and not context and pod_host and pod_port and os.path.isfile(_IN_CLUSTER_TOKEN):
        in_pod = f"https://[{pod_host}]:{pod_port}" if ":" in pod_host else f"https://{pod_host}:{pod_port}"
        return _public_url(host or in_pod), ""
    try:
        server, context = _kubeconfig_target(kubeconfig, context)
    except Exception:  # noqa: BLE001 - a kubeconfig the client cannot load either: its own error says why
        server = ""
    return _public_url(host or server), str(context or "")


def api_named(server: str, context: str = "") -> str:
    """'the Kubernetes API at https://10.0.0.1:6443 (context prod)', as much of it as is known."""
    text = "the Kubernetes API"
    if server:
        text += f" at {server}"
    if context:
        text += f" (context {context})"
    return text


def stream_items(chunks, keep=None) -> list:
    """The items of a JSON list response, decoded one at a time as its body arrives (``chunks``: an
    iterable of bytes) and each passed through ``keep``, so that only what ``keep`` returns stays in
    memory, never the whole body; an item for which it returns None is not kept at all. The API server
    writes a list's ``items`` last, after its metadata."""
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
            kept = (keep(o) for o in json.loads(buf).get("items") or [])  # an empty list's items: null
            return [k for k in kept if k is not None]
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
        kept = keep(obj)
        if kept is not None:
            items.append(kept)


def _transient(method: str, e: ApiError) -> bool:
    if getattr(e, "refused", False):
        return True
    return method == "GET" and (e.status == 0 or e.status in _RETRY_STATUS)


def _lines(resp):
    """The lines of a streamed response (a watch: one JSON event a line), as they arrive."""
    buf = b""
    for chunk in resp.stream(None, decode_content=False):
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.strip():
                yield line
    if buf.strip():
        yield buf


def _bounded(fn, timeout: float):
    """``fn()`` run on a helper thread and waited for ``timeout`` seconds at most: building kubernetes.core's
    client reads the server's version and API groups with no timeout of its own. ``None`` when it did
    not finish in time (the thread is left behind; it never holds the module's exit)."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread as it is
            box["error"] = e

    t = threading.Thread(target=target, name="gangsched-connect", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        return None
    if "error" in box:
        raise box["error"]
    return box["value"]


def _check_kubeconfig(kubeconfig) -> None:
    """A kubeconfig path that is missing or not a kubeconfig is refused before the client reads it."""
    if not kubeconfig or not isinstance(kubeconfig, str):
        return
    path = os.path.expanduser(kubeconfig)
    hint = "set kubeconfig (or K8S_AUTH_KUBECONFIG) to a readable kubeconfig, or give host and credentials"
    if not os.path.isfile(path):
        raise GangError(f"kubeconfig {kubeconfig} not found or not a file; {hint}")
    try:
        import yaml

        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (OSError, UnicodeDecodeError, ValueError, ImportError) as e:
        raise GangError(f"kubeconfig {kubeconfig} cannot be read ({type(e).__name__}); {hint}") from e
    except Exception as e:  # noqa: BLE001 - yaml.YAMLError and its kin: not YAML at all
        raise GangError(f"kubeconfig {kubeconfig} is not YAML; {hint}") from e
    if not isinstance(doc, dict) or not any(k in doc for k in ("clusters", "contexts", "users", "current-context")):
        raise GangError(f"kubeconfig {kubeconfig} is not a kubeconfig (no clusters, contexts or users in it); {hint}")


def _config_errors() -> tuple:
    errors = []
    try:
        from kubernetes.config import ConfigException

        errors.append(ConfigException)
    except ImportError:
        pass
    try:
        from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException

        errors.append(CoreException)
    except ImportError:
        pass
    return tuple(errors)


def _api_exception():
    try:
        from kubernetes.client import ApiException

        return ApiException
    except ImportError:  # pragma: no cover - missing_requirement stops the module first
        return ()


def _status_message(status: int, body, verb: str, obj: str, server: str) -> str:
    msg = _message_of(body)
    if status == 400 and "HTTP request to an HTTPS server" in msg:
        return f"Failed to {verb} {obj}: {server} speaks HTTPS; use https:// in host"
    if status == 401:
        return (
            f"Failed to {verb} {obj}: the API server at {server} refused the credentials (401 Unauthorized); "
            "check api_key, the kubeconfig user or client_cert/client_key"
        )
    return f"Failed to {verb} {obj}: {msg or status}"


class Client:
    """The collection's API client: JSON in, dicts out, errors as ApiError, every call bounded in time.

    Requests go through the public ``request()`` of the ``kubernetes`` client's DynamicClient (the one
    kubernetes.core's ``get_api_client()`` builds) with ``serialize=False``, which hands back the raw
    HTTP response on every client version kubernetes.core supports; nothing here relies on the
    argument shape of generated code."""

    def __init__(self, api, server: str = "", timeout: float = DEFAULT_TIMEOUT, context: str = ""):
        if isinstance(api, ApiClient):  # a generated-code client (the lab's tests): its public dynamic layer
            api = DynamicClient(api)
        self.api = api
        self.server = _public_url(server or getattr(getattr(api, "configuration", None), "host", ""))
        self.context = context
        self.timeout = float(timeout)
        self.retry_for = float(timeout)

    @classmethod
    def from_params(cls, params: dict) -> Client:
        """The client for a module's parameters (kubernetes.core's auth options, ``api_timeout``)."""
        # an empty option is an unset one: ansible-core 2.16 renders a role default of none inside
        # module_defaults as "", and the kubernetes client reads context="" as a context named ""
        auth = {k: (None if params.get(k) == "" else params.get(k)) for k in AUTH_ARG_SPEC}
        timeout = float(params.get("api_timeout") or DEFAULT_TIMEOUT)
        kubeconfig = auth.get("kubeconfig") or os.environ.get("K8S_AUTH_KUBECONFIG")
        _check_kubeconfig(kubeconfig)
        for option in ("ca_cert", "client_cert", "client_key"):
            value = auth.get(option)
            if value and not os.path.isfile(os.path.expanduser(str(value))):
                raise GangError(f"{option} {value} not found or not a file; set {option} to a readable PEM file")
        # named by its server and context: the kubeconfig's path is a no_log option's value, masked in the output
        server, context = api_target(auth)
        api = api_named(server, context)
        fix = "check kubeconfig/context/host (or K8S_AUTH_*) and that the API server is up, or raise api_timeout"
        # from a clean slate, as in a module's own process: loading a kubeconfig makes it the kubernetes client's
        # process-wide default, with a token's refresh hook that rewrites host and credentials on each call, and
        # the next client made in this process (a loop's next item in Ansible's worker) would start from it
        Configuration.set_default(None)
        try:
            k8s = _bounded(lambda: get_api_client(**auth), timeout)
        except _config_errors() as e:
            text = str(e).replace("Could not create API client: ", "").strip().splitlines()[0] if str(e) else ""
            raise GangError(
                f"Could not load the Kubernetes client configuration: {text or type(e).__name__}; "
                "set kubeconfig (or K8S_AUTH_KUBECONFIG) and context, or host with api_key or client_cert"
            ) from e
        except _api_exception() as e:
            status = getattr(e, "status", 0) or 0
            if status:
                body = getattr(e, "body", "")
                raise GangError(
                    _status_message(status, body, "read", "the API's version", server or "the API server")
                ) from e
            raise GangError(f"Failed to reach {api}: {why_unreachable(e, timeout)}; {fix}") from e
        except _transport_errors() as e:
            raise GangError(f"Failed to reach {api}: {why_unreachable(e, timeout)}; {fix}") from e
        if k8s is None:
            raise GangError(f"{api[0].upper()}{api[1:]} did not answer within {timeout:g}s (api_timeout); {fix}")
        return cls(k8s.client, k8s.configuration.host, timeout, context)

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
                if not _transient(method, e) or time.monotonic() + delay > deadline:
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
        except _api_exception() as e:
            status = getattr(e, "status", 0) or 0
            if not status:  # the client wraps TLS errors as status 0
                raise self._unreachable(method, path, e, timeout) from e
            raise self._http_error(status, getattr(e, "body", ""), verb, obj or path) from e
        except _transport_errors() as e:
            raise self._unreachable(method, path, e, timeout) from e

    def _unreachable(self, method, path, e, timeout) -> ApiError:
        t = timeout[1] if isinstance(timeout, tuple) else timeout
        why = why_unreachable(e, t)
        err = ApiError(f"Failed to reach {api_named(self.server, self.context)} for {method} {path}: {why}", 0, why)
        err.refused = _refused(e)
        return err

    def _http_error(self, status, body, verb, obj) -> ApiError:
        msg = _message_of(body)
        if status == 404:
            return NotFound(f"{obj} not found", 404, msg)
        if status == 403:
            return Forbidden(f"Forbidden to {verb} {obj}: {msg}", 403, msg)
        if status == 409:
            return Conflict(f"Conflict on {verb} {obj}: {msg}", 409, msg)
        return ApiError(_status_message(status, body, verb, obj, self.server), status, msg)

    def _request_once(self, method, path, body, query, content_type, what, timeout, decode=None) -> dict:
        resp = self._call(method, path, query, {"Accept": "application/json"}, body, content_type, timeout, what)
        try:
            if decode is None:
                data = resp.data
                return json.loads(data) if data else {}
            return decode(resp)
        except _transport_errors() as e:  # the body broke off (API server restart, read timeout)
            why = why_unreachable(e, timeout[1] if isinstance(timeout, tuple) else timeout)
            raise ApiError(
                f"Failed to read {what or path} from {api_named(self.server, self.context)}: {why}", 0, why
            ) from e
        except ValueError as e:  # not JSON, or the list ended inside its items
            why = "the answer is not a whole JSON document"
            raise ApiError(
                f"Failed to read {what or path} from {api_named(self.server, self.context)}: {why}", 0, why
            ) from e
        finally:
            resp.release_conn()

    def apply(self, path: str, obj: dict, field_manager: str, what: str = "", dry_run: bool = False) -> dict:
        """A server-side apply of ``obj`` at ``path`` (conflicts forced), or its dry run."""
        query = {"fieldManager": field_manager, "force": "true"}
        if dry_run:
            query["dryRun"] = "All"
        body = obj if _client_major() >= 25 else json.dumps(obj).encode()
        return self.request(
            "PATCH", path, body=body, query=query, content_type="application/apply-patch+yaml", what=what
        )

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
        ``stream_items``): a cluster-wide scan holds only what the caller keeps of each object. ``keep``
        may fold the items instead (an accumulator that returns None): one with a ``restart()`` has it
        called before each attempt, so that a body that broke off and is read again is not folded twice."""
        q = {k: v for k, v in query.items() if v is not None}

        def decode(resp):
            restart = getattr(keep, "restart", None)
            if restart is not None:
                restart()
            return stream_items(resp.stream(1 << 16), keep)

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
            for line in _lines(resp):
                yield json.loads(line)
        except (ValueError, *_transport_errors()) as e:  # the stream broke (API server restart): caller re-lists
            why = (
                "an event is not JSON"
                if isinstance(e, ValueError)
                else why_unreachable(e, timeout_seconds + self.timeout)
            )
            raise ApiError(
                f"Watch of {what or path} on {api_named(self.server, self.context)} broke: {why}", 0, why
            ) from e
        finally:
            resp.release_conn()

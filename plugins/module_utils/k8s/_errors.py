# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what a failed API request means — the transport errors as opposed to a bug, a
reason in words a user can act on for a request that got no answer, the API's message for an HTTP error, which
failures are worth another try. Not a public API."""

from __future__ import annotations

import json

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import (
    ApiError,
    Conflict,
    Forbidden,
    NotFound,
)


def message_of(body) -> str:
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    body = body or ""
    try:
        return json.loads(body).get("message") or body
    except (ValueError, AttributeError):
        return body


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


def refused(exc: BaseException) -> bool:
    """True when the connection was never made (so the request never reached the server)."""
    return any(isinstance(e, ConnectionRefusedError) or type(e).__name__ in _NOT_CONNECTED for e in _chain(exc))


def transport_errors() -> tuple:
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
    if refused(exc) and ("refused" in text.lower() or any(isinstance(e, ConnectionRefusedError) for e in _chain(exc))):
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
    if any(isinstance(e, ConnectionRefusedError) for e in _chain(exc)) or refused(exc):
        return "no connection could be made"
    return f"the connection failed ({names[-1] if names else 'unknown'})"


def config_errors() -> tuple:
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


def api_exception():
    try:
        from kubernetes.client import ApiException

        return ApiException
    except ImportError:  # pragma: no cover - missing_requirement stops the module first
        return ()


def status_message(status: int, body, verb: str, obj: str, server: str) -> str:
    msg = message_of(body)
    if status == 400 and "HTTP request to an HTTPS server" in msg:
        return f"Failed to {verb} {obj}: {server} speaks HTTPS; use https:// in host"
    if status == 401:
        return (
            f"Failed to {verb} {obj}: the API server at {server} refused the credentials (401 Unauthorized); "
            "check api_key, the kubeconfig user or client_cert/client_key"
        )
    return f"Failed to {verb} {obj}: {msg or status}"


def lasting(why: str) -> bool:
    """True for a ``why_unreachable`` that asking again cannot change: the server's certificate not verified, or no
    TLS where TLS was asked for (the options are wrong, not the network)."""
    return why.startswith(("the server's TLS certificate could not be verified", "the server did not answer TLS"))


def transient(method: str, e: ApiError) -> bool:
    if getattr(e, "lasting", False):
        return False
    if getattr(e, "refused", False):
        return True
    return method == "GET" and (e.status == 0 or e.status in _RETRY_STATUS)


def http_error(status: int, body, verb: str, obj: str, server: str) -> ApiError:
    """The API's answer ``status`` to ``verb`` on ``obj`` as the error the callers tell apart."""
    msg = message_of(body)
    if status == 404:
        return NotFound(f"{obj} not found", 404, msg)
    if status == 403:
        return Forbidden(f"Forbidden to {verb} {obj}: {msg}", 403, msg)
    if status == 409:
        return Conflict(f"Conflict on {verb} {obj}: {msg}", 409, msg)
    return ApiError(status_message(status, body, verb, obj, server), status, msg)

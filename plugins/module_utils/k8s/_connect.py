# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the connection a cluster module makes — the libraries it needs, kubernetes.core's
authentication options (the same options, K8S_AUTH_* environment fallbacks, kubeconfig/context handling), the API
server and context they point at (named in messages, never the kubeconfig's path), and the client built from them
within ``api_timeout``. Not a public API."""

from __future__ import annotations

import copy
import os
import threading
import traceback
from urllib.parse import urlsplit, urlunsplit

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _errors

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

DEFAULT_TIMEOUT = 30


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


def client_major() -> int:
    """The ``kubernetes`` client's major version. How its REST layer sends an apply patch's body differs: before 25
    it passes a text through and refuses a dict; from 25 it JSON-encodes what it is given (a text would go as one
    quoted string). kubernetes.core's server-side apply draws the same line."""
    try:
        import kubernetes

        return int(str(kubernetes.__version__).split(".", maxsplit=1)[0])
    except (ImportError, AttributeError, ValueError):  # pragma: no cover - missing_requirement stops the module first
        return 25


_IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def _option(auth: dict, name: str, alias: str = ""):
    """An authentication option as kubernetes.core reads it: the option, else its K8S_AUTH_* variable."""
    value = auth.get(name)
    if value is None:
        value = os.environ.get(f"K8S_AUTH_{name.upper()}") or (alias and os.environ.get(f"K8S_AUTH_{alias.upper()}"))
    return value or None


def public_url(url) -> str:
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
        return public_url(host), ""
    kubeconfig, context = _option(auth, "kubeconfig"), _option(auth, "context")
    pod_host, pod_port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not kubeconfig and not context and pod_host and pod_port and os.path.isfile(_IN_CLUSTER_TOKEN):
        in_pod = f"https://[{pod_host}]:{pod_port}" if ":" in pod_host else f"https://{pod_host}:{pod_port}"
        return public_url(host or in_pod), ""
    try:
        server, context = _kubeconfig_target(kubeconfig, context)
    except Exception:  # noqa: BLE001 - a kubeconfig the client cannot load either: its own error says why
        server = ""
    return public_url(host or server), str(context or "")


def api_named(server: str, context: str = "") -> str:
    """'the Kubernetes API at https://10.0.0.1:6443 (context prod)', as much of it as is known."""
    text = "the Kubernetes API"
    if server:
        text += f" at {server}"
    if context:
        text += f" (context {context})"
    return text


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


def connect(params: dict) -> tuple:
    """kubernetes.core's API client for a module's parameters (its auth options, ``api_timeout``), built within
    ``api_timeout``: (the ``kubernetes`` ApiClient, the server's URL, the timeout, the kubeconfig context)."""
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
    except _errors.config_errors() as e:
        text = str(e).replace("Could not create API client: ", "").strip().splitlines()[0] if str(e) else ""
        raise GangError(
            f"Could not load the Kubernetes client configuration: {text or type(e).__name__}; "
            "set kubeconfig (or K8S_AUTH_KUBECONFIG) and context, or host with api_key or client_cert"
        ) from e
    except _errors.api_exception() as e:
        status = getattr(e, "status", 0) or 0
        if status:
            body = getattr(e, "body", "")
            raise GangError(
                _errors.status_message(status, body, "read", "the API's version", server or "the API server")
            ) from e
        raise GangError(f"Failed to reach {api}: {_errors.why_unreachable(e, timeout)}; {fix}") from e
    except _errors.transport_errors() as e:
        raise GangError(f"Failed to reach {api}: {_errors.why_unreachable(e, timeout)}; {fix}") from e
    if k8s is None:
        raise GangError(f"{api[0].upper()}{api[1:]} did not answer within {timeout:g}s (api_timeout); {fix}")
    return k8s.client, k8s.configuration.host, timeout, context


def dynamic(api):
    """The public dynamic layer over a generated-code client (the lab's tests build one); ``api`` itself else."""
    return DynamicClient(api) if isinstance(api, ApiClient) else api

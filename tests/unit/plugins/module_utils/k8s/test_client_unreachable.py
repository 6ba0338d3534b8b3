# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An API server that cannot be reached is named by its URL and the kubeconfig context, never by the
kubeconfig's path (the value of a no_log option, which Ansible masks) and never with a credential: real
faults on this machine, no mocks — a closed port, a listener that never answers, a TLS server the
kubeconfig's CA did not sign, a plain HTTP server on an https URL, a host name that does not resolve,
and an API server that goes away (or stops answering) after the first contact."""

from __future__ import annotations

import base64
import datetime
import http.server
import ipaddress
import json
import re
import socket
import ssl
import tempfile
import threading
import time

import kubernetes
import pytest
import yaml
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _client, _connect
from ansible_run import run_module
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from lab.pki import CA

CONTEXT = "gangsched-unreachable"
OTHER = "gangsched-other"
TOKEN = "gangsched-fake-token-6c1f9e2a"
PASSWORD = "gangsched-fake-password-b73d"
NO_SUCH_HOST = "https://gangsched-no-such-host.invalid:6443"
# what a Python error or traceback leaves in a text: a class name, errno, a repr
PYTHON_TEXT = re.compile(r"Traceback|Errno|\b\w*(Error|Exception)\b|object at 0x|urllib3|HTTPSConnection")


@pytest.fixture(autouse=True)
def own_state(tmp_path, monkeypatch):
    """The client's discovery cache (one file per server) in the test's own directory, no K8S_AUTH_* from the
    environment, and the ``kubernetes`` client's process-wide default configuration put back afterwards: loading a
    kubeconfig sets it, and a token's refresh hook in it would send a later test's calls to this test's server."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for name in ("K8S_AUTH_HOST", "K8S_AUTH_KUBECONFIG", "K8S_AUTH_CONTEXT", "K8S_AUTH_API_KEY", "KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)
    default = kubernetes.client.Configuration._default
    yield
    kubernetes.client.Configuration._default = default


@pytest.fixture
def ca(tmp_path):
    return CA(tmp_path / "pki")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig(tmp_path, ca: CA, server: str, other: str = "https://127.0.0.1:1") -> tuple:
    """A kubeconfig whose current context points at ``server`` (and context OTHER at ``other``), with a
    recognisable token, password and client key; returns its path and the secrets."""
    crt, key = ca.issue("user", "gangsched-user")
    ca_data = _b64(ca.cert_path.read_bytes())
    user = {
        "token": TOKEN,
        "username": "admin",
        "password": PASSWORD,
        "client-certificate-data": _b64(crt.read_bytes()),
        "client-key-data": _b64(key.read_bytes()),
    }
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": CONTEXT,
        "clusters": [
            {"name": "target", "cluster": {"server": server, "certificate-authority-data": ca_data}},
            {"name": "other", "cluster": {"server": other, "certificate-authority-data": ca_data}},
        ],
        "contexts": [
            {"name": CONTEXT, "context": {"cluster": "target", "user": "u"}},
            {"name": OTHER, "context": {"cluster": "other", "user": "u"}},
        ],
        "users": [{"name": "u", "user": user}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    key_pem = key.read_text()
    secrets = [TOKEN, PASSWORD, user["client-key-data"][:40], *[ln for ln in key_pem.splitlines() if "-" not in ln]]
    return path, secrets


def assert_named(msg: str, server: str, context: str, secrets: list) -> None:
    assert f"Kubernetes API at {server} (context {context})" in msg, msg
    assert not [s for s in secrets if s in msg], msg
    assert "BEGIN" not in msg and "users:" not in msg, msg  # nothing of the kubeconfig's contents
    assert not PYTHON_TEXT.search(msg), msg


def fail(params: dict) -> tuple[str, float]:
    """The message of the first failed call (the client's first contact, else a read) and the seconds it took."""
    t0 = time.monotonic()
    with pytest.raises(GangError) as e:
        _client.Client.from_params(params).get("/api/v1/namespaces", "Namespaces", retry_for=0)
    return e.value.msg, time.monotonic() - t0


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def self_signed(tmp_path) -> tuple:
    """A server certificate for 127.0.0.1 that signs itself (no CA of the kubeconfig's)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    crt, keyp = tmp_path / "self.crt", tmp_path / "self.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyp.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return crt, keyp


class Api(http.server.BaseHTTPRequestHandler):
    """Just enough of an API server for the client's first contact; /slow never answers in time."""

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path.startswith("/slow"):
            time.sleep(10)
        answers = {
            "/version": {"major": "1", "minor": "33", "gitVersion": "v1.33.5"},
            "/api": {"kind": "APIVersions", "versions": ["v1"]},
            "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
        }
        body = json.dumps(answers.get(self.path.split("?")[0], {"kind": "Status", "code": 404})).encode()
        self.send_response(200 if self.path.split("?")[0] in answers else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.do_GET()

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, tls: tuple | None):
        super().__init__(("127.0.0.1", 0), Api)
        self.tls = tls
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.server_address[1]}"
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    def get_request(self):
        conn, addr = super().get_request()
        if self.tls:  # the handshake in the request's own thread (finish_request), not the accepting one
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*self.tls)
            conn = ctx.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        return conn, addr

    def finish_request(self, request, client_address):
        try:
            if self.tls:
                request.do_handshake()
            super().finish_request(request, client_address)
        except (OSError, ssl.SSLError):
            pass  # the client gave up on this server: what the test is about

    def handle_error(self, request, client_address):
        pass

    def stop(self):
        self.shutdown()
        self.server_close()


@pytest.fixture
def servers():
    started = []

    def start(tls=None) -> Server:
        started.append(Server(tls))
        return started[-1]

    yield start
    for s in started:
        s.stop()


def test_a_refused_connection_names_the_server_and_the_current_context(tmp_path, ca):
    server = f"https://127.0.0.1:{closed_port()}"
    path, secrets = kubeconfig(tmp_path, ca, server)
    msg, _ = fail({"kubeconfig": str(path), "api_timeout": 5})
    assert_named(msg, server, CONTEXT, secrets)
    assert "connection refused" in msg and "check kubeconfig/context/host" in msg, msg
    assert str(path) not in msg  # masked in a task's output: the server and context say where instead


def test_the_context_option_is_the_one_named(tmp_path, ca, monkeypatch):
    other = f"https://127.0.0.1:{closed_port()}"
    path, secrets = kubeconfig(tmp_path, ca, "https://127.0.0.1:1", other=other)
    msg, _ = fail({"kubeconfig": str(path), "context": OTHER, "api_timeout": 5})
    assert_named(msg, other, OTHER, secrets)
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", str(path))  # the environment's kubeconfig and context alike
    monkeypatch.setenv("K8S_AUTH_CONTEXT", OTHER)
    msg, _ = fail({"api_timeout": 5})
    assert_named(msg, other, OTHER, secrets)


def test_a_listener_that_never_answers_fails_within_api_timeout(tmp_path, ca):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)  # the kernel completes the connections; nothing ever reads or writes
    try:
        server = f"https://127.0.0.1:{srv.getsockname()[1]}"
        path, secrets = kubeconfig(tmp_path, ca, server)
        msg, took = fail({"kubeconfig": str(path), "api_timeout": 2})
    finally:
        srv.close()
    assert_named(msg, server, CONTEXT, secrets)
    assert "within 2s (api_timeout)" in msg, msg
    assert took < 2 + 3, took  # api_timeout and the kubeconfig's loading, not the default 30 s


def test_a_certificate_the_kubeconfigs_ca_did_not_sign_is_named(tmp_path, ca, servers):
    srv = servers(tls=self_signed(tmp_path))
    path, secrets = kubeconfig(tmp_path, ca, srv.url)
    msg, _ = fail({"kubeconfig": str(path), "api_timeout": 5})
    assert_named(msg, srv.url, CONTEXT, secrets)
    assert "TLS certificate could not be verified" in msg, msg


def test_plain_http_on_an_https_url_is_named(tmp_path, ca, servers):
    srv = servers(tls=None)
    server = srv.url.replace("http://", "https://")
    path, secrets = kubeconfig(tmp_path, ca, server)
    msg, _ = fail({"kubeconfig": str(path), "api_timeout": 5})
    assert_named(msg, server, CONTEXT, secrets)
    assert "TLS" in msg, msg


def test_a_host_name_that_does_not_resolve_is_named(tmp_path, ca):
    path, secrets = kubeconfig(tmp_path, ca, NO_SUCH_HOST)
    msg, _ = fail({"kubeconfig": str(path), "api_timeout": 5})
    assert_named(msg, NO_SUCH_HOST, CONTEXT, secrets)
    assert "does not resolve" in msg, msg


def test_later_calls_name_the_server_and_context_as_the_first_contact_does(tmp_path, ca, servers):
    srv = servers(tls=ca.issue("apiserver", "kube-apiserver", server_names=("127.0.0.1",)))
    path, secrets = kubeconfig(tmp_path, ca, srv.url)
    client = _client.Client.from_params({"kubeconfig": str(path), "api_timeout": 2})
    assert client.server == srv.url and client.context == CONTEXT

    t0 = time.monotonic()
    with pytest.raises(GangError) as e:  # a create: one attempt (urllib3 retries a read's timeout on its own)
        client.request("POST", "/slow", body={}, what="Slowness", retry_for=0)
    took = time.monotonic() - t0
    assert_named(e.value.msg, srv.url, CONTEXT, secrets)
    assert "POST /slow: no answer within 2s" in e.value.msg and 1.5 < took < 2 + 3, (e.value.msg, took)

    srv.stop()
    with pytest.raises(GangError) as e:
        client.get("/api/v1/namespaces", "Namespaces", retry_for=0)
    assert_named(e.value.msg, srv.url, CONTEXT, secrets)
    assert "GET /api/v1/namespaces: connection refused" in e.value.msg, e.value.msg


def test_the_next_client_in_one_process_talks_to_its_own_server(tmp_path, ca, servers):
    """A loop's items run in one process (Ansible's worker): the server named is the one a client talks to, not
    the one a kubeconfig loaded for an item before it (the kubernetes client keeps that as its default)."""
    first = f"https://127.0.0.1:{closed_port()}"
    path, secrets = kubeconfig(tmp_path, ca, first)
    msg, _ = fail({"kubeconfig": str(path), "api_timeout": 5})
    assert_named(msg, first, CONTEXT, secrets)
    srv = servers(tls=ca.issue("apiserver", "kube-apiserver", server_names=("127.0.0.1",)))
    client = _client.Client.from_params({"host": srv.url, "api_key": "k", "ca_cert": str(ca.cert_path)})
    assert client.server == srv.url and client.context == ""
    assert client.get("/api", "API versions", retry_for=0)["kind"] == "APIVersions"


def test_the_server_and_context_are_those_kubernetes_core_uses(tmp_path, ca):
    path, _ = kubeconfig(tmp_path, ca, "https://10.0.0.1:6443/", other="https://10.0.0.2:6443")
    doc = yaml.safe_load(path.read_text())
    cases = [
        ({"kubeconfig": str(path)}, ("https://10.0.0.1:6443", CONTEXT)),
        ({"kubeconfig": str(path), "context": OTHER}, ("https://10.0.0.2:6443", OTHER)),
        ({"kubeconfig": doc, "context": OTHER}, ("https://10.0.0.2:6443", OTHER)),  # a kubeconfig given inline
        # host over the kubeconfig's server, whose context still gives the credentials
        ({"kubeconfig": str(path), "host": "https://10.0.0.3:6443"}, ("https://10.0.0.3:6443", CONTEXT)),
        # host with credentials: no kubeconfig read, no context
        ({"kubeconfig": str(path), "host": "https://u:p@10.0.0.3:6443", "api_key": "k"}, ("https://10.0.0.3:6443", "")),
        ({"kubeconfig": str(path), "context": "nope"}, ("", "nope")),  # loading fails with its own message
        ({"kubeconfig": str(tmp_path / "missing")}, ("", "")),
    ]
    for auth, named in cases:
        assert _connect.api_target(auth) == named, auth
    assert _connect.api_named("https://10.0.0.1:6443") == "the Kubernetes API at https://10.0.0.1:6443"
    assert _connect.api_named("", "") == "the Kubernetes API"


def test_a_module_run_by_ansible_names_the_server_unmasked(tmp_path, ca):
    """What the user sees: the task's msg through Ansible, where the kubeconfig option's value is masked."""
    server = f"https://127.0.0.1:{closed_port()}"
    path, secrets = kubeconfig(tmp_path, ca, server)
    res = run_module(None, "gang_info", {"kubeconfig": str(path), "api_timeout": 3}, diff=False)
    assert res.get("failed") is True, res
    assert_named(res["msg"], server, CONTEXT, secrets)
    assert "********" not in res["msg"] and "connection refused" in res["msg"], res["msg"]

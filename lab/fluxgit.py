"""Flux's Git server, and git as the lab runs it for Flux.

``python -m lab flux git-server`` serves the bare repositories under a directory over Git's smart HTTP, pushes
included, by ``git http-backend`` behind a small loopback HTTP server: source-controller cannot read a ``file://``
URL, and go-git speaks only the smart protocol over HTTP. ``git`` runs a git command with no prompt, proxy or user
config in the way.
"""

from __future__ import annotations

import os
import subprocess
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .cluster import LabError


class FluxError(LabError):
    """A failure of Flux on the lab (its repository and Git server included), with a message that says what went
    wrong and what to do."""


def _git_env() -> dict[str, str]:
    # no prompt for credentials, no proxy for the loopback server, no user or system config in the way
    return {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "GIT_AUTHOR_NAME": "gangsched lab",
        "GIT_AUTHOR_EMAIL": "lab@gangsched.invalid",
        "GIT_COMMITTER_NAME": "gangsched lab",
        "GIT_COMMITTER_EMAIL": "lab@gangsched.invalid",
    }


def git(*args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env=_git_env(), capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise FluxError(f"git {' '.join(args)} failed: {(proc.stderr or proc.stdout).strip()}")
    return proc.stdout.strip()


class _GitHandler(BaseHTTPRequestHandler):
    """Each request handed to ``git http-backend`` as a CGI request; its whole answer sent back with a length."""

    protocol_version = "HTTP/1.1"
    project_root = ""
    backend = ""

    def do_GET(self) -> None:
        self._cgi()

    def do_POST(self) -> None:
        self._cgi()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            # git sends a large push in chunks
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _cgi(self) -> None:
        path, _, query = self.path.partition("?")
        body = self._body()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": self.project_root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": urllib.parse.unquote(path),
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
        }
        # protocol v2 (Git-Protocol) and a gzipped request body (git gzips a large fetch negotiation)
        for header, var in (("Git-Protocol", "HTTP_GIT_PROTOCOL"), ("Content-Encoding", "HTTP_CONTENT_ENCODING")):
            if self.headers.get(header):
                env[var] = self.headers[header]
        proc = subprocess.run([self.backend], input=body, env=env, capture_output=True, timeout=120)
        out = proc.stdout
        # the CGI headers end at the first empty line (git writes CRLFs)
        ends = [(i, len(s)) for s in (b"\r\n\r\n", b"\n\n") if (i := out.find(s)) >= 0]
        if proc.returncode != 0 or not ends:
            msg = (proc.stderr or b"git http-backend gave no answer").decode(errors="replace").strip()
            self.log_error("%s", msg)
            self.send_error(500, msg.splitlines()[-1] if msg else None)
            return
        at, n = min(ends)
        head, payload = out[:at], out[at + n :]
        headers = [line.split(":", 1) for line in head.decode("latin-1").splitlines() if ":" in line]
        status = next((v.strip() for h, v in headers if h.lower() == "status"), "200 OK")
        code, _, reason = status.partition(" ")
        self.send_response(int(code), reason or None)
        for h, v in headers:
            if h.lower() not in ("status", "content-length"):
                self.send_header(h, v.strip())
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        if proc.stderr:
            self.log_message("%s", proc.stderr.decode(errors="replace").strip())

    def log_request(self, code="-", size="-") -> None:
        # source-controller fetches every interval: log what changes the repository (pushes) and failures only
        if self.path.endswith("/git-receive-pack") or str(code)[:1] not in ("2", "3"):
            super().log_request(code, size)


def serve_git(root: Path, port: int) -> None:
    """Serve the repositories under ``root`` over smart HTTP on 127.0.0.1:``port`` until killed."""
    backend = Path(git("--exec-path")) / "git-http-backend"
    if not backend.exists():
        raise FluxError(f"git http-backend not found at {backend}: install git (with its git-core helpers)")
    _GitHandler.project_root = str(root)
    _GitHandler.backend = str(backend)
    server = ThreadingHTTPServer(("127.0.0.1", port), _GitHandler)
    print(f"serving {root} on http://127.0.0.1:{port}/", flush=True)
    server.serve_forever()

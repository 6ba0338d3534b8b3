"""A warm interpreter for the tests' Ansible runs (``ansible_run.ansible_cli``): it imports the ``kubernetes`` client
once (about 1 s of CPU in each ``ansible`` or ``ansible-playbook`` process, whose action plugins import it), then
forks a child per run that executes the very CLI script (``<venv>/bin/ansible``, ``ansible-playbook``) as
``__main__``, with the run's argv, environment and working directory, its stdout and stderr in files, in a session
of its own (killed whole on timeout). ``kubernetes`` reads ``KUBECONFIG`` when imported, so a run with another
``KUBECONFIG`` than this process's is not sent here (``ansible_run`` runs it as a process of its own).

Ansible's own modules read its configuration when imported (``ansible.constants``: the ``ANSIBLE_*`` variables, the
config file; the display: ``TERM``), so this process imports none of them. It forks instead, per Ansible
environment (the run's variables but those that change from test to test and that no Ansible import reads, its
working directory, its config file as it is on disk), a warm child that takes that environment, imports the CLIs
and their executor (about 0.25 s of CPU in each run), and serves the runs of that environment as this process serves
the others. What those imports print (a warning about the configuration) is kept and written first to each run's
own output, where a new process would have printed it. ``GANGSCHED_TEST_WARM=client`` preloads only the client.

    python tests/ansible_zygote.py SOCKET      # serves until its parent exits

Requests are one JSON line: ``{"argv", "env", "cwd", "stdout", "stderr", "timeout"}``; the answer one JSON line:
``{"rc": int, "seconds": float, "cpu": float}`` (``rc`` null when the run outlived its timeout and was killed; ``cpu``:
the run's CPU seconds, its workers' and module processes' included)."""

from __future__ import annotations

import json
import os
import runpy
import select
import signal
import socket
import sys
import tempfile
import time
import traceback

PRELOAD = ("kubernetes", "kubernetes.dynamic", "yaml", "jinja2")
# imported in a warm child per Ansible environment: the CLIs the tests run, and what every run loads after them
ANSIBLE_PRELOAD = (
    "ansible.cli.playbook",
    "ansible.cli.adhoc",
    "ansible.executor.task_queue_manager",
    "ansible.executor.task_executor",
    "ansible.executor.process.worker",
    "ansible.executor.module_common",
    "ansible.plugins.strategy.linear",
    "ansible.plugins.callback.default",
    "ansible.plugins.connection.local",
    "ansible.plugins.action.normal",
    "ansible.plugins.shell.sh",
    "ansible.plugins.inventory.yaml",
    "ansible.plugins.inventory.ini",
    "ansible.plugins.inventory.auto",
    "ansible.plugins.inventory.host_list",
    "ansible.plugins.filter.core",
    "ansible.plugins.test.core",
)
# variables that change from test to test and that Ansible does not read when imported: not part of the environment
# a warm child is chosen by (a change in any other variable gets a child of its own)
PER_RUN = ("PYTEST_CURRENT_TEST",)
PER_RUN_PREFIXES = ("GANGSCHED_", "K8S_AUTH_")
# warm children at most; the one used longest ago goes first
MAX_WARM = 3


def _child(req: dict) -> None:
    """In the forked child: become the CLI run; never returns."""
    code = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the serving process's own handler: a run dies of SIGTERM
        os.setsid()
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        for fd, path, flags in (
            (0, os.devnull, os.O_RDONLY),
            (1, req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            (2, req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        ):
            opened = os.open(path, flags, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        for fd, text in _PREAMBLE.items():
            os.write(fd, text)
        script = req["argv"][0]
        sys.argv = list(req["argv"])
        sys.path[0] = os.path.dirname(script)  # as when the script is run: its directory first
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
                code = 1
    except BaseException:  # noqa: BLE001 - whatever the run raised goes to its stderr, as an interpreter prints it
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 - a closed stream: nothing left to write
                pass
        os._exit(code)


def _wait(pid: int, timeout: float) -> tuple[int | None, float]:
    """The child's exit code, or None after killing its process group at ``timeout``, and the CPU seconds it and
    the processes it waited for used (its workers, their module processes); sleeps on the child's pidfd (woken by
    its exit) where the kernel has them, else polls every 20 ms."""
    deadline = time.monotonic() + timeout
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime
            left = deadline - time.monotonic()
            if left <= 0:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _, _, usage = os.wait4(pid, 0)
                return None, usage.ru_utime + usage.ru_stime
            if pidfd is None:
                time.sleep(0.02)
            else:
                select.select([pidfd], [], [], left)
    finally:
        if pidfd is not None:
            os.close(pidfd)


# what the warm child's imports wrote to stdout (1) and stderr (2), written again at the start of each of its runs
_PREAMBLE: dict[int, bytes] = {}


def _ansible_key(req: dict) -> str:
    """The Ansible environment of a run: what its imports of Ansible read."""
    env = {k: v for k, v in req["env"].items() if k not in PER_RUN and not k.startswith(PER_RUN_PREFIXES)}
    cfg = env.get("ANSIBLE_CONFIG") or os.path.join(req["cwd"], "ansible.cfg")
    try:
        st = os.stat(cfg)
        on_disk = [cfg, st.st_mtime_ns, st.st_size]
    except OSError:
        on_disk = [cfg, None, None]
    return json.dumps([sorted(env.items()), req["cwd"], on_disk])


def _preload_ansible(req: dict) -> None:
    """In a warm child: take the run's environment and directory, import Ansible, keep what the imports wrote."""
    os.environ.clear()
    os.environ.update(req["env"])
    os.chdir(req["cwd"])
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    files = {fd: tempfile.TemporaryFile() for fd in (1, 2)}
    try:
        for fd, f in files.items():
            os.dup2(f.fileno(), fd)
        for name in ANSIBLE_PRELOAD:
            __import__(name)
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        for fd, f in files.items():
            os.dup2(saved[fd], fd)
            os.close(saved[fd])
            f.seek(0)
            text = f.read()
            f.close()
            if text:
                _PREAMBLE[fd] = text


class _Warm:
    """This process's warm children, by Ansible environment: (pid, socket) each, the last used last."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.children: dict[str, tuple[int, str]] = {}
        self.failed: set[str] = set()  # environments whose child could not import Ansible: forked from here
        self.started = 0

    def socket_for(self, req: dict, *inherited: socket.socket) -> str | None:
        """The socket of the warm child of the run's environment, started now where there is none (None: it could
        not import Ansible; the run is then forked from this process)."""
        key = _ansible_key(req)
        if key in self.failed:
            return None
        if key in self.children:
            self.children[key] = self.children.pop(key)
            return self.children[key][1]
        while len(self.children) >= MAX_WARM:
            self.stop_one(self.children.pop(next(iter(self.children)))[0])
        self.started += 1
        path = f"{self.base}.{self.started}"
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            for sock in inherited:
                sock.close()
            code = 0
            try:
                _preload_ansible(req)
                serve(path, ready=ready_w)
            except BaseException:  # noqa: BLE001 - the runs of this environment are then forked from the parent
                traceback.print_exc()
                code = 1
            os._exit(code)
        os.close(ready_w)
        with os.fdopen(ready_r, "rb") as ready:
            if ready.readline().strip() != b"ready":
                os.waitpid(pid, 0)
                self.failed.add(key)
                return None
        self.children[key] = (pid, path)
        return path

    def forget(self, path: str) -> None:
        """Stops the warm child at ``path`` (it took no request)."""
        for key, (pid, p) in list(self.children.items()):
            if p == path:
                del self.children[key]
                self.stop_one(pid)

    @staticmethod
    def stop_one(pid: int) -> None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)

    def stop(self) -> None:
        """Stops every warm child and waits for it: the CPU of the runs it waited for then counts in this process's
        children, and so in the test process's (make test prints each stage's)."""
        while self.children:
            self.stop_one(self.children.popitem()[1][0])


def _forward(path: str, line: bytes, req: dict) -> bytes | None:
    """The answer of the warm child at ``path`` to a request line; None where it took no request (gone: the run can
    be forked elsewhere). A child that took the run and ended without an answer is not asked again for it (the run
    may have changed something): the answer is then a failure, said in the run's stderr."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.connect(path)
        except OSError:
            return None
        try:
            conn.sendall(line)
            answer = conn.makefile("rb").readline()
        except OSError:
            answer = b""
    if not answer:
        with open(req["stderr"], "a", encoding="utf-8") as err:
            err.write("\nthe warm interpreter that ran this ended before it answered\n")
        answer = (json.dumps({"rc": 1, "seconds": None, "cpu": None}) + "\n").encode()
    return answer


def serve(path: str, ready: int | None = None) -> None:
    """Serves runs at ``path`` until the process that started this one is gone; ``ready``: the pipe to say so on (a
    warm child's), else stdout and this is the first process, which sends each run to the warm child of its Ansible
    environment."""
    warm = _Warm(path) if ready is None and os.environ.get("GANGSCHED_TEST_WARM") != "client" else None
    parent = os.getppid()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)
    srv.settimeout(1.0)
    if ready is None:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        print("ready", flush=True)
    else:
        os.write(ready, b"ready\n")
        os.close(ready)
    try:
        while os.getppid() == parent:  # the process that started it is gone: so is this one
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(None)
                _answer(conn, srv, warm)
    finally:
        if warm is not None:
            warm.stop()


def _answer(conn: socket.socket, srv: socket.socket, warm: _Warm | None) -> None:
    """Runs the request on ``conn``: in the warm child of its Ansible environment where there is one, else forked
    from this process; sends the answer."""
    line = conn.makefile("rb").readline()
    req = json.loads(line)
    child = warm.socket_for(req, srv, conn) if warm is not None else None
    if child is not None:
        answer = _forward(child, line, req)
        if answer is not None:
            conn.sendall(answer)
            return
        warm.forget(child)
    pid = os.fork()
    if pid == 0:
        srv.close()
        conn.close()
        _child(req)
    t0 = time.monotonic()
    rc, cpu = _wait(pid, float(req["timeout"]))
    result = {"rc": rc, "seconds": round(time.monotonic() - t0, 2), "cpu": round(cpu, 2)}
    conn.sendall((json.dumps(result) + "\n").encode())


if __name__ == "__main__":
    for _name in PRELOAD:
        __import__(_name)
    serve(sys.argv[1])

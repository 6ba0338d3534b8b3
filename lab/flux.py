"""Flux on a running lab (``python -m lab flux up|down|status``), for a GitOps stage's tests.

Three processes join the lab's components (``python -m lab status`` and ``logs`` show them, ``python -m lab down``
stops them):

- ``git-server``: a bare repository ``<lab>/flux/git/gitops.git`` (branch ``main``) served over Git's smart HTTP
  by ``git http-backend`` behind a small loopback HTTP server, pushes included (``lab.fluxgit``): source-controller
  cannot read a ``file://`` URL, and go-git speaks only the smart protocol over HTTP.
- ``source-controller`` and ``kustomize-controller`` of the release the lab builds (``python -m lab build --for
  flux``), each under a ServiceAccount of its own in ``flux-system``, through a kubeconfig of a token of it.

``up`` then makes what ``flux bootstrap`` makes: the GitRepository ``flux-system/flux-system`` of that repository
and the root Kustomization ``flux-system/flux-system`` of its ``./clusters/lab``, pruning. A test commits
(``Flux.commit``), asks Flux to act now (``Flux.reconcile``) and waits for the revision to be applied
(``Flux.wait_applied``) or refused (``Flux.wait_attempted``), or for a reconcile without a new commit to be done
(``Flux.wait_handled``: drift put back). Flux has no PostSync hook: the Kustomization's status is the proof.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from kubernetes import client as k

from . import build, kube, kubeconfigs, procs, yamlio
from .cluster import Lab, _http_ok
from .fluxgit import FluxError, git
from .paths import REPO
from .ports import free_port
from .scenarios._common import crds as unit_crds

NS = "flux-system"
# the GitRepository and the root Kustomization, named as `flux bootstrap` names them
NAME = "flux-system"
BRANCH = "main"
REPOSITORY = "gitops.git"
PATH = "./clusters/lab"
GIT_SERVER = "git-server"
SOURCE = "source-controller"
KUSTOMIZE = "kustomize-controller"
PROCESSES = (GIT_SERVER, SOURCE, KUSTOMIZE)
# the loopback ports Flux listens on (<lab dir>/flux/state.json)
PORTS = (GIT_SERVER, "source_metrics", "source_health", "source_storage", "kustomize_metrics", "kustomize_health")
SOURCE_GROUP = "source.toolkit.fluxcd.io"
KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"
# a controller's token: the lab lives hours at most, a token expiring within it would stop Flux mid-test
TOKEN_SECONDS = 7 * 24 * 3600
# the repository's first commit: git keeps no empty directory, and kustomize-controller builds a directory
# without a kustomization.yaml from the manifests it finds there (none yet: nothing applied, Ready)
PLACEHOLDER = {
    "clusters/lab/README.md": "What Flux applies to the lab: every manifest under this directory (prune: true).\n"
}


def revision(sha: str, branch: str = BRANCH) -> str:
    """A commit as Flux writes it in ``status.lastAppliedRevision``.

    >>> revision("0123abc")
    'main@sha1:0123abc'
    """
    return f"{branch}@sha1:{sha}"


# ---- objects ---------------------------------------------------------------------------------------------------
def crds() -> list[dict]:
    """The CRDs of both controllers, from their built modules (config/crd/bases)."""
    return [d for unit in ("flux-source-controller", "flux-kustomize-controller") for d in unit_crds(unit, "crds")]


def _sa(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": NS}}


def _binding(name: str, role: str, sa: str) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": NS}],
    }


SOURCE_KINDS = ("gitrepositories", "ocirepositories", "buckets", "helmrepositories", "helmcharts")


def rbac() -> list[dict]:
    """The namespace, each controller's ServiceAccount and what it may do.

    source-controller: a ClusterRole of its own, what its controllers need (upstream's config/rbac/role.yaml less
    what only cloud workload identity uses): its source kinds with their status and finalizers, Secrets and
    ConfigMaps read (credentials, CA bundles), Events, the HEAD of ``/livez/ping`` its client makes at start. No
    leases: it runs without leader election.

    kustomize-controller: ``cluster-admin``, as upstream Flux binds it (its ``cluster-reconciler``
    ClusterRoleBinding): it applies whatever kind a repository holds, RBAC included, so no narrower role can
    stand for it; a Kustomization that names a ``serviceAccountName`` is how Flux narrows it per tenant.
    """
    rw = ["get", "list", "watch", "create", "update", "patch", "delete"]
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "lab-flux-source-controller"},
        "rules": [
            {"apiGroups": [SOURCE_GROUP], "resources": list(SOURCE_KINDS), "verbs": rw},
            {
                "apiGroups": [SOURCE_GROUP],
                "resources": [f"{r}/status" for r in SOURCE_KINDS],
                "verbs": ["get", "update", "patch"],
            },
            {
                "apiGroups": [SOURCE_GROUP],
                "resources": [f"{r}/finalizers" for r in SOURCE_KINDS],
                "verbs": ["get", "create", "update", "patch", "delete"],
            },
            {"apiGroups": [""], "resources": ["secrets", "configmaps"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
            # Flux's client asks at start whether the API server has Priority and Fairness (a HEAD of
            # /livez/ping, for its headers) to know whether to limit its own request rate; no built-in role
            # grants it, upstream's own role does
            {"nonResourceURLs": ["/livez/ping"], "verbs": ["head"]},
        ],
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        _sa(SOURCE),
        _sa(KUSTOMIZE),
        role,
        _binding("lab-flux-source-controller", "lab-flux-source-controller", SOURCE),
        _binding("lab-flux-kustomize-controller", "cluster-admin", KUSTOMIZE),
    ]


def sync(url: str, interval: str, kustomization_interval: str, path: str) -> list[dict]:
    """The GitRepository and the root Kustomization ``flux bootstrap`` makes (its gotk-sync.yaml)."""
    return [
        {
            "apiVersion": f"{SOURCE_GROUP}/v1",
            "kind": "GitRepository",
            "metadata": {"name": NAME, "namespace": NS},
            "spec": {"interval": interval, "url": url, "ref": {"branch": BRANCH}},
        },
        {
            "apiVersion": f"{KUSTOMIZE_GROUP}/v1",
            "kind": "Kustomization",
            "metadata": {"name": NAME, "namespace": NS},
            "spec": {
                "interval": kustomization_interval,
                "path": path,
                "prune": True,
                "sourceRef": {"kind": "GitRepository", "name": NAME},
            },
        },
    ]


def _rebindable(port: int) -> bool:
    """Whether a listener (Go's and Python's set SO_REUSEADDR) can bind ``port`` on 127.0.0.1 now: the port of a
    server just stopped is, though its closed connections keep it in TIME_WAIT a while."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ready(obj: dict) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), None)


# ---- Flux on a lab ---------------------------------------------------------------------------------------------
class Flux:
    """Flux on ``lab``: its state under ``<lab>/flux`` (the repositories, the controllers' kubeconfigs and
    source-controller's artifact storage, ``state.json``)."""

    def __init__(self, lab: Lab | None = None):
        self.lab = lab or Lab()
        self.dir = self.lab.root / "flux"
        self.repos = self.dir / "git"
        self.bare = self.repos / REPOSITORY
        self.work = self.dir / "work"
        self.storage = self.dir / "storage"
        self.state_file = self.dir / "state.json"

    # ---- state ---------------------------------------------------------------------------------------------
    def state(self) -> dict:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}

    @property
    def url(self) -> str:
        """The repository's clone URL (pull and push), e.g. ``http://127.0.0.1:PORT/gitops.git``."""
        port = self.state().get("ports", {}).get(GIT_SERVER)
        if not port:
            raise FluxError("Flux is not up on this lab; start it with: python -m lab flux up")
        return f"http://127.0.0.1:{port}/{REPOSITORY}"

    def running(self) -> dict[str, bool]:
        return {p: procs.alive(self.lab.pid(p)) for p in PROCESSES}

    def _custom(self) -> k.CustomObjectsApi:
        return k.CustomObjectsApi(kube.api(self.lab))

    # ---- up / down -----------------------------------------------------------------------------------------
    def up(self, interval: str = "10s", kustomization_interval: str = "30s", path: str = PATH, log=print) -> dict:
        """Start Flux on the running lab (again, if it is up: the processes are started afresh, the repository and
        its history kept). ``interval``: how often source-controller looks at the repository;
        ``kustomization_interval``: how often kustomize-controller applies it again without a new commit (drift put
        back); ``path``: the root Kustomization's directory in the repository."""
        if not all(self.lab.running().values()):
            raise FluxError("the lab is not running; start it with: python -m lab up")
        for b in ("source-controller", "kustomize-controller"):
            build.binary_path(b)  # raises a clear 'not built' error
        crd_docs = crds()
        t0 = time.monotonic()
        for p in PROCESSES:
            if p in self.lab.addons():
                self.lab.stop_addon(p)
        self.dir.mkdir(parents=True, exist_ok=True)
        # the ports of an earlier `up` again where they are free: the GitRepository's URL stays right, and the
        # artifact URL in its status
        before = self.state().get("ports") or {}
        names = (
            GIT_SERVER,
            "source_metrics",
            "source_health",
            "source_storage",
            "kustomize_metrics",
            "kustomize_health",
        )
        ports = {n: before[n] if before.get(n) and _rebindable(before[n]) else free_port() for n in names}
        st = {"ports": ports, "interval": interval, "kustomization_interval": kustomization_interval, "path": path}
        self.state_file.write_text(json.dumps(st, indent=2))

        log(f"starting the Git server on 127.0.0.1:{ports[GIT_SERVER]}")
        if not self.bare.exists():
            self.repos.mkdir(parents=True, exist_ok=True)
            git("init", "--quiet", "--bare", f"--initial-branch={BRANCH}", str(self.bare))
            # pushes over HTTP without an authenticated user (http-backend's default refuses them)
            git("config", "http.receivepack", "true", cwd=self.bare)
        self.lab.start_addon(
            GIT_SERVER,
            [sys.executable, "-m", "lab", "flux", "git-server", f"--root={self.repos}", f"--port={ports[GIT_SERVER]}"],
            {"PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"},
        )
        self.lab._wait(lambda: _http_ok(f"{self.url}/info/refs?service=git-upload-pack"), GIT_SERVER, 30)
        if self.work.exists():
            git("remote", "set-url", "origin", self.url, cwd=self.work)
        else:
            git("clone", "--quiet", self.url, str(self.work))
        if not git("ls-remote", "--heads", "origin", BRANCH, cwd=self.work):
            self.commit(PLACEHOLDER, "the lab's GitOps repository")

        log("applying Flux's CRDs, namespace and RBAC")
        kube.apply(self.lab, crd_docs, server_side=True)
        from .scenarios import wait_crds_established

        wait_crds_established(self.lab, [d["metadata"]["name"] for d in crd_docs])
        kube.apply(self.lab, rbac())

        common = ["--enable-leader-election=false", "--watch-all-namespaces=true", "--log-encoding=console"]
        flags = {
            SOURCE: [
                f"--metrics-addr=127.0.0.1:{ports['source_metrics']}",
                f"--health-addr=127.0.0.1:{ports['source_health']}",
                f"--storage-path={self.storage}",
                f"--storage-addr=127.0.0.1:{ports['source_storage']}",
                # the address in each artifact's URL, which kustomize-controller downloads it from
                f"--storage-adv-addr=127.0.0.1:{ports['source_storage']}",
            ],
            KUSTOMIZE: [
                f"--metrics-addr=127.0.0.1:{ports['kustomize_metrics']}",
                f"--health-addr=127.0.0.1:{ports['kustomize_health']}",
                # a Kustomization whose dependsOn is not ready yet is looked at again after this (30 s by default, not
                # its retryInterval): the lab's tests apply chains of stages, each waiting on the one before
                "--requeue-dependency=2s",
            ],
        }
        # source-controller refuses a storage path that does not exist ("invalid dir path")
        self.storage.mkdir(parents=True, exist_ok=True)
        health = {SOURCE: ports["source_health"], KUSTOMIZE: ports["kustomize_health"]}
        storage = f"http://127.0.0.1:{ports['source_storage']}/"
        head = self.head()
        # source-controller first, and the GitRepository's artifact served at its address, before kustomize-controller
        # starts: it downloads the artifact of the URL it finds in the GitRepository's status, and one left there by
        # an earlier source-controller on another port would keep it retrying for its whole timeout (30 s)
        for name in (SOURCE, KUSTOMIZE):
            log(f"starting {name} as system:serviceaccount:{NS}:{name}")
            cfg = self._token_kubeconfig(name)
            # outside a cluster both find their kubeconfig through KUBECONFIG only
            env = {"KUBECONFIG": str(cfg), "RUNTIME_NAMESPACE": NS}
            self.lab.start_addon(name, [str(build.binary_path(name)), *common, *flags[name]], env)
            self.lab._wait(lambda n=name: _http_ok(f"http://127.0.0.1:{health[n]}/readyz"), name, 60)
            if name == SOURCE:
                log(f"bootstrapping: GitRepository and Kustomization {NS}/{NAME} of {self.url} {path}")
                kube.apply(self.lab, sync(self.url, interval, kustomization_interval, path))
                self._wait_artifact(storage, head)
        self.wait_applied(head, timeout=60)
        st["up_seconds"] = round(time.monotonic() - t0, 1)
        self.state_file.write_text(json.dumps(st, indent=2))
        return st

    def _wait_artifact(self, storage: str, sha: str, timeout: float = 60) -> dict:
        """The GitRepository's artifact of commit ``sha`` once it is served at ``storage``."""

        def served() -> dict | None:
            art = (self.git_repository().get("status") or {}).get("artifact") or {}
            return art if art.get("revision") == revision(sha) and art.get("url", "").startswith(storage) else None

        try:
            return kube.wait_for(served, timeout, f"GitRepository {NS}/{NAME} artifact of {sha} at {storage}")
        except TimeoutError as e:
            raise FluxError(f"{e}\nGitRepository status: {json.dumps(self.git_repository().get('status'))}") from e

    def _token_kubeconfig(self, sa: str) -> Path:
        """A kubeconfig of a token of ServiceAccount flux-system/``sa`` (TokenRequest), for its controller."""
        core = k.CoreV1Api(kube.api(self.lab))
        token = core.create_namespaced_service_account_token(
            sa, NS, {"spec": {"expirationSeconds": TOKEN_SECONDS}}
        ).status.token
        path = self.dir / f"{sa}.kubeconfig"
        return kubeconfigs.service_account(path, sa, token, self.lab.api_url(), self.lab.pki / "ca.crt")

    def down(self, log=print) -> list[str]:
        """Flux off the lab, as ``flux uninstall`` does: every Kustomization and GitRepository deleted with its
        finalizers taken off first, so that nothing it applied is pruned and no deletion waits on a stopped
        controller; the namespace and RBAC deleted, the processes stopped. The CRDs and the repository stay (a
        later ``up`` finds its history)."""
        gone = []
        if self.lab.running().get("kube-apiserver"):
            api = self._custom()
            for group, plural in ((KUSTOMIZE_GROUP, "kustomizations"), (SOURCE_GROUP, "gitrepositories")):
                try:
                    items = api.list_cluster_custom_object(group, "v1", plural)["items"]
                except k.ApiException as e:
                    if e.status == 404:
                        continue  # no CRD: Flux was never up here
                    raise
                for obj in items:
                    ns, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
                    try:
                        api.patch_namespaced_custom_object(
                            group, "v1", ns, plural, name, {"metadata": {"finalizers": None}}
                        )
                        api.delete_namespaced_custom_object(group, "v1", ns, plural, name)
                        gone.append(f"{plural}/{ns}/{name}")
                    except k.ApiException as e:
                        if e.status != 404:
                            raise
            kube.delete(self.lab, rbac())
        for p in reversed(PROCESSES):
            if self.lab.stop_addon(p):
                gone.append(p)
        log("Flux down: " + (", ".join(gone) if gone else "nothing was up"))
        return gone

    # ---- the repository ------------------------------------------------------------------------------------
    def head(self) -> str:
        """The commit at the tip of the server's ``main``."""
        return git("rev-parse", BRANCH, cwd=self.bare)

    def commit(self, files: Mapping[str, str | list | dict | None] | Path, message: str, at: str = "") -> str:
        """Commit to ``main`` and push it to the server over HTTP; returns the new commit's sha.

        ``files``: paths (under ``at``) to their new text, to YAML documents (a dict, or a list of dicts) or to
        None (removed); or a directory whose content becomes the whole of ``at`` (what is under ``at`` and not in
        the directory is removed)."""
        git("fetch", "--quiet", "origin", cwd=self.work)
        if git("ls-remote", "--heads", "origin", BRANCH, cwd=self.work):
            # the server's tip, whatever this clone had (a commit pushed by someone else, a failed push)
            git("checkout", "--quiet", "--force", "-B", BRANCH, f"origin/{BRANCH}", cwd=self.work)
            git("clean", "--quiet", "-fdx", cwd=self.work)
        else:
            git("symbolic-ref", "HEAD", f"refs/heads/{BRANCH}", cwd=self.work)
        base = self.work / at
        if isinstance(files, Path):
            if base.resolve() == self.work.resolve():
                raise FluxError("a directory commit needs at= (a path in the repository it replaces)")
            if base.exists():
                git("rm", "-r", "--quiet", "--ignore-unmatch", at, cwd=self.work)
                shutil.rmtree(base, ignore_errors=True)
            shutil.copytree(files, base)
        else:
            for rel, content in files.items():
                p = base / rel
                if content is None:
                    if p.exists():
                        git("rm", "-r", "--quiet", str(p.relative_to(self.work)), cwd=self.work)
                    continue
                if not isinstance(content, str):
                    docs = content if isinstance(content, list) else [content]
                    content = yamlio.dump_all(docs)
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(content)
        git("add", "--all", ".", cwd=self.work)
        git("commit", "--quiet", "--allow-empty", "-m", message, cwd=self.work)
        git("push", "--quiet", "origin", f"HEAD:{BRANCH}", cwd=self.work)
        return git("rev-parse", "HEAD", cwd=self.work)

    # ---- the cluster's side --------------------------------------------------------------------------------
    def git_repository(self, name: str = NAME, namespace: str = NS) -> dict:
        return self._custom().get_namespaced_custom_object(SOURCE_GROUP, "v1", namespace, "gitrepositories", name)

    def kustomization(self, name: str = NAME, namespace: str = NS) -> dict:
        return self._custom().get_namespaced_custom_object(KUSTOMIZE_GROUP, "v1", namespace, "kustomizations", name)

    def suspend(self, suspended: bool, name: str = NAME, namespace: str = NS) -> dict:
        """Stop (``True``) or restart (``False``) the Kustomization's applies, as ``flux suspend`` / ``flux resume``
        do: its ``spec.suspend``. Returns the Kustomization."""
        patch = {"spec": {"suspend": suspended}}
        return self._custom().patch_namespaced_custom_object(
            KUSTOMIZE_GROUP, "v1", namespace, "kustomizations", name, patch
        )

    def reconcile(self, name: str = NAME, namespace: str = NS, with_source: bool = True) -> str:
        """Ask Flux to act now, as ``flux reconcile kustomization --with-source`` does: the annotation
        ``reconcile.fluxcd.io/requestedAt`` set on the Kustomization and, with ``with_source``, on its GitRepository
        (which then fetches the repository's tip at once). Returns the annotation's value."""
        # any new value will do; the flux CLI writes the time, as here
        now = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{time.time_ns() % 10**9:09d}Z"
        patch = {"metadata": {"annotations": {REQUESTED_AT: now}}}
        api = self._custom()
        ks = api.patch_namespaced_custom_object(KUSTOMIZE_GROUP, "v1", namespace, "kustomizations", name, patch)
        if with_source:
            ref = ks["spec"]["sourceRef"]
            if ref.get("kind") == "GitRepository":
                api.patch_namespaced_custom_object(
                    SOURCE_GROUP, "v1", ref.get("namespace") or namespace, "gitrepositories", ref["name"], patch
                )
        return now

    def _wait(self, pred, timeout: float, what: str, name: str, namespace: str) -> dict:
        try:
            return kube.wait_for(pred, timeout, what)
        except TimeoutError as e:
            st = self.kustomization(name, namespace).get("status") or {}
            src = (self.git_repository().get("status") or {}).get("conditions")
            raise FluxError(f"{e}\nKustomization status: {json.dumps(st)}\nGitRepository conditions: {src}") from e

    def _settled(self, name: str, namespace: str) -> tuple[dict, dict] | None:
        """The Kustomization's status and Ready condition once it has acted on its latest spec and is not in
        the middle of a reconcile (Ready Unknown, Progressing); None before."""
        obj = self.kustomization(name, namespace)
        st = obj.get("status") or {}
        ready = _ready(obj)
        if not ready or ready["status"] == "Unknown" or st.get("observedGeneration") != obj["metadata"]["generation"]:
            return None
        return st, ready

    def wait_applied(self, sha: str | None = None, timeout: float = 60, name: str = NAME, namespace: str = NS) -> dict:
        """Wait until the Kustomization has applied commit ``sha`` (default: the tip) and is Ready; returns its
        status. A revision Flux tried and refused fails at once, with the Kustomization's message."""
        rev = revision(sha or self.head())

        def applied() -> dict | None:
            settled = self._settled(name, namespace)
            if settled is None:
                return None
            st, ready = settled
            if st.get("lastAppliedRevision") == rev and ready["status"] == "True":
                return st
            if st.get("lastAttemptedRevision") == rev and ready["status"] == "False":
                raise FluxError(f"Kustomization {namespace}/{name} did not apply {rev}: {ready.get('message')}")
            return None

        return self._wait(applied, timeout, f"Kustomization {namespace}/{name} to apply {rev}", name, namespace)

    def wait_handled(self, requested_at: str, timeout: float = 60, name: str = NAME, namespace: str = NS) -> dict:
        """Wait until the Kustomization has done the reconcile ``reconcile`` asked for (its
        ``status.lastHandledReconcileAt`` is ``requested_at``) and settled; returns its status."""

        def handled() -> dict | None:
            settled = self._settled(name, namespace)
            return settled[0] if settled and settled[0].get("lastHandledReconcileAt") == requested_at else None

        what = f"Kustomization {namespace}/{name} to handle the reconcile of {requested_at}"
        return self._wait(handled, timeout, what, name, namespace)

    def wait_attempted(self, sha: str, timeout: float = 60, name: str = NAME, namespace: str = NS) -> dict:
        """Wait until the Kustomization has tried commit ``sha`` (``status.lastAttemptedRevision``), applied or
        not; returns its status (its Ready condition says which, and why)."""
        rev = revision(sha)

        def attempted() -> dict | None:
            settled = self._settled(name, namespace)
            return settled[0] if settled and settled[0].get("lastAttemptedRevision") == rev else None

        return self._wait(attempted, timeout, f"Kustomization {namespace}/{name} to try {rev}", name, namespace)


def up(lab: Lab | None = None, **kw) -> Flux:
    """Flux on ``lab`` (default: the lab of GANGSCHED_LAB_DIR); see ``Flux.up`` for the options."""
    flux = Flux(lab)
    flux.up(**kw)
    return flux

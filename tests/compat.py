"""The supported-versions matrix, proven: one virtualenv per cell (Python × ansible-core × the
``kubernetes`` client × kubernetes.core), each running the unit tests and a short check against the
lab — gang_info, operator_gang and gang_rbac in check mode, one gang_smoke_test to a ``gang_held_*``
verdict, a crds apply — and the roles: site.yml (without the smoke tests) by the cell's own ansible-playbook on a lab
of its own, then again, which must change nothing and run no kubernetes.core.k8s or helm task (drift reads what the
first run, or the cell before with its kubernetes.core, applied as applied).

    python tests/compat.py                 # every cell
    python tests/compat.py oldest newest   # some cells (what make test runs)
    python tests/compat.py --no-unit newest  # the lab checks only (the unit tests read no cluster)
    python tests/compat.py --no-unit --no-roles newest  # the modules' lab check alone (make minor, where the
                                                        # playbook tests run site.yml twice on that minor)

Virtualenvs and downloaded wheels are kept under the lab's build cache (outside the checkout), keyed
by the cell's versions. kubernetes.core comes from the ``ansible`` community package of the version a
cell names (PyPI, no Galaxy needed); only that collection is taken out of it. Prints a table and exits
non-zero when any cell fails."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lab import build as lab_build  # noqa: E402
from lab import paths  # noqa: E402
from lab import versions as V  # noqa: E402

sys.path.append(str(REPO / "tests" / "lab"))
import lab_objects  # noqa: E402  (tests/lab: the objects the lab tests create)

# bump when what goes into a cell's venv changes, so cached venvs are rebuilt
RECIPE = "4"


@dataclasses.dataclass(frozen=True)
class Cell:
    name: str
    python: str
    ansible_core: str
    kubernetes: str
    # the ansible community package whose kubernetes.core the cell uses
    ansible: str
    extra: tuple[str, ...] = ()
    # the helm the cell's roles run (the lab's build of that release): Helm 4 where kubernetes.core drives it
    helm: str = V.HELM

    @property
    def key(self) -> str:
        return f"py{self.python}-core{self.ansible_core}-k8s{self.kubernetes}-ansible{self.ansible}-r{RECIPE}"


# The floor: the oldest ansible-core the collection declares (meta/runtime.yml), the oldest Python it
# runs on, the oldest kubernetes client kubernetes.core accepts (its requirements: >= 24.2.0) and the
# oldest kubernetes.core galaxy.yml accepts (5.0.0, bundled by ansible 11.0.0). The newest of each, and
# the two between them. kubernetes 24.2.0 predates urllib3 2 (its error path calls getheaders()). The newest runs
# Helm 4, which kubernetes.core drives from 6.4.0 on (the others: Helm 3).
CELLS = (
    Cell("oldest", "3.10", "2.16.19", "24.2.0", "11.0.0", ("urllib3<2",)),
    Cell("pinned", "3.11", "2.19.5", "33.1.0", "12.3.0"),
    Cell("between", "3.12", "2.18.19", "36.0.3", "11.13.0"),
    Cell("newest", "3.13", "2.21.5", "37.0.2", "14.5.0", helm=V.HELM4),
)


def _root() -> Path:
    return paths.cache_dir() / "compat"


def _python(version: str) -> str:
    """An interpreter of that minor version: pyenv's installs first (its shims may point elsewhere)."""
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    cands = [
        *sorted(Path(pyenv, "versions").glob(f"{version}.*/bin/python{version}")),
        shutil.which(f"python{version}"),
    ]
    for cand in cands:
        if cand and _run([cand, "-c", "import sys; print(sys.version_info[:2])"]).stdout.strip() == str(
            tuple(int(x) for x in version.split("."))
        ):
            return str(cand)
    raise RuntimeError(f"Python {version} not found (install it, e.g. pyenv install {version})")


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def _kubernetes_core(cell: Cell, venv: Path, site: Path) -> str:
    """kubernetes.core out of the ansible package's wheel, into the venv's ansible_collections (and
    ansible.posix, whose json callback the lab tests read results with)."""
    wheels = _root() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"ansible-{cell.ansible}-*.whl"))
    if not found:
        p = _run(
            # only its kubernetes.core is used, whatever Python the package itself asks for (ansible 11 wants
            # 3.11, the oldest cell runs 3.10)
            [
                venv / "bin/python",
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--ignore-requires-python",
                "-d",
                wheels,
                f"ansible=={cell.ansible}",
            ]
        )
        if p.returncode:
            raise RuntimeError(f"pip download ansible=={cell.ansible} failed: {p.stderr.strip()[-400:]}")
        found = sorted(wheels.glob(f"ansible-{cell.ansible}-*.whl"))
    prefix = "ansible_collections/kubernetes/core/"
    with zipfile.ZipFile(found[0]) as z:
        for name in z.namelist():
            if name.startswith((prefix, "ansible_collections/ansible/posix/")) and not name.endswith("/"):
                target = site / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(z.read(name))
        manifest = json.loads(z.read(prefix + "MANIFEST.json"))
    return manifest["collection_info"]["version"]


def build(cell: Cell) -> Path:
    venv = _root() / cell.key
    if (venv / ".ready").exists():
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    p = _run([_python(cell.python), "-m", "venv", venv])
    if p.returncode:
        raise RuntimeError(f"venv for Python {cell.python} failed: {p.stderr.strip()[-400:]}")
    pins = [
        f"ansible-core=={cell.ansible_core}",
        f"kubernetes=={cell.kubernetes}",
        "PyYAML",
        "jsonpatch",
        "pytest",
        "pytest-timeout",
        "pytest-xdist",  # --lab-tests on two workers, a lab each
        "cryptography",  # the lab's own code, for --lab-tests
        *cell.extra,
    ]
    p = _run([venv / "bin/python", "-m", "pip", "install", "-q", "--disable-pip-version-check", *pins])
    if p.returncode:
        raise RuntimeError(f"pip install {' '.join(pins)} failed: {p.stderr.strip()[-600:]}")
    site = Path(
        _run([venv / "bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    )
    version = _kubernetes_core(cell, venv, site)  # the cell's pip: ansible 13+ needs Python 3.12
    (venv / "kubernetes.core").write_text(version)
    (venv / ".ready").write_text(cell.key)
    return venv


def _pytest(venv: Path, *args) -> list:
    """The command line of the cell's pytest, without its cache."""
    return [venv / "bin/python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


def unit(venv: Path) -> tuple[bool, str]:
    p = _run(
        # the plugins' unit tests, and every role's preflight rules through the cell's own ansible-playbook
        _pytest(venv, "tests/unit/plugins", "tests/unit/test_preflight_rules.py"),
        cwd=REPO,
        timeout=900,
    )
    tail = (p.stdout.strip().splitlines() or [""])[-1]
    return p.returncode == 0, tail if p.returncode == 0 else (p.stdout[-3000:] + p.stderr[-1000:])


def module(venv: Path, lab, name: str, args: dict, check: bool = False) -> dict:
    """One module through the cell's own ``ansible`` (ad-hoc, the built-in minimal output)."""
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_STDOUT_CALLBACK": "minimal",
        "ANSIBLE_PYTHON_INTERPRETER": str(venv / "bin/python"),
        "K8S_AUTH_KUBECONFIG": str(lab.kubeconfig),
    }
    cmd = [venv / "bin/ansible", "localhost", "-m", f"gangsched.kubeflow.{name}"] + (
        ["-a", json.dumps(args)] if args else []
    )
    p = _run(cmd + (["--check"] if check else []), cwd=REPO, env=env, timeout=600)
    out = p.stdout
    if "=> " not in out:
        return {"failed": True, "msg": f"no result (rc {p.returncode}): {out[-500:]} {p.stderr[-800:]}"}
    return json.loads(out.split("=> ", 1)[1])


def lab_check(venv: Path, lab) -> tuple[bool, str]:
    info = module(venv, lab, "gang_info", {})
    if info.get("failed") or not any(s.get("kind") == "volcano" for s in info.get("schedulers", [])):
        return False, f"gang_info: {info.get('msg') or info.get('schedulers')}"
    op = module(venv, lab, "operator_gang", {"operator": "training_operator", "gang_scheduler": "volcano"}, check=True)
    if op.get("failed") or op.get("scheduler_name") != "volcano":
        return False, f"operator_gang --check: {op.get('msg') or op}"
    rbac = module(venv, lab, "gang_rbac", {"component": "training_operator", "gang_scheduler": "volcano"}, check=True)
    if rbac.get("failed") or not rbac.get("rules") or rbac.get("missing_after") != []:
        return False, f"gang_rbac --check: {rbac.get('msg') or rbac}"
    smoke = module(
        venv,
        lab,
        "gang_smoke_test",
        {"gang_scheduler": "volcano", "replicas": 2, "expect": "running", "namespace": "compat-smoke", "timeout": 120},
    )
    if smoke.get("failed") or smoke.get("verdict") != "gang_held_running":
        return False, f"gang_smoke_test: {smoke.get('verdict')} {smoke.get('msg', '')[:300]}"
    # a server-side apply: how this client version sends its body is the client's, and differs by version
    crd = lab_objects.crd("widgets.compat.gangsched.test")
    crds = module(venv, lab, "crds", {"owner": "compat", "files": {"c.yaml": json.dumps(crd)}, "force": True})
    if crds.get("failed") or crds.get("applied") != ["widgets.compat.gangsched.test"]:
        return False, f"crds: {crds.get('msg') or crds}"
    return True, f"gang_info, operator_gang --check, gang_rbac --check, smoke {smoke['verdict']}, crds applied"


def roles_check(venv: Path, lab, helm: str = V.HELM) -> tuple[bool, str]:
    """site.yml --skip-tags smoke by the cell's ansible-playbook on ``lab``, twice; the second run must change
    nothing and start no kubernetes.core.k8s or helm task. With another ``helm`` than the lab's, the roles run that
    release's binary, and the first run writes both chart releases through it: values that name it and the run make
    them differ from what was applied before (Helm 3's releases upgraded in place), or the lab is fresh (installed)."""
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "GANGSCHED_LAB_DIR": str(lab.root),
    }
    cmd = [venv / "bin/ansible-playbook", "-i", REPO / "inventories/lab", REPO / "playbooks/site.yml"]
    cmd += ["--skip-tags", "smoke"]
    if helm != V.HELM:
        # this run's own (a lab kept up from a run before holds that run's), so that Helm writes both releases
        marker = {"gangschedCompatHelm": f"{helm} {time.time_ns()}"}
        values = {"gangsched_helm_binary": str(lab_build.binary_path("helm", helm))}
        values |= {"gpu_device_plugin_values": marker, "volcano_values": marker}
        cmd += ["-e", json.dumps(values)]
    runs = []
    for _ in range(2):
        start = time.monotonic()
        p = _run(cmd, cwd=REPO, env=env, timeout=1200)
        try:
            data = json.loads(p.stdout)
        except ValueError:
            return False, f"site.yml printed no JSON (rc {p.returncode}): {p.stdout[-800:]} {p.stderr[-1500:]}"
        failed = [
            f"{task['task']['name']}: {h.get('msg')}"
            for play in data["plays"]
            for task in play["tasks"]
            for h in task["hosts"].values()
            if h.get("failed") and not h.get("ignore_errors")
        ]
        if p.returncode != 0 or failed:
            return False, f"site.yml failed (rc {p.returncode}): {'; '.join(failed)[:1500] or p.stderr[-1500:]}"
        runs.append((data, time.monotonic() - start))
    if helm != V.HELM:
        helm_writes = _writers(runs[0][0], ("kubernetes.core.helm",))
        if len(helm_writes) != 2:
            return False, f"site.yml with helm {helm}: kubernetes.core.helm wrote {helm_writes}, not both releases"
    again, took = runs[1]
    changed = sum(h.get("changed", 0) for h in again["stats"].values())
    writers = _writers(again, ("kubernetes.core.k8s", "kubernetes.core.helm"))
    if changed or writers:
        return False, f"site.yml again: {changed} changed, kubernetes.core writers run: {writers}"
    first = f"site.yml (helm {helm}: both releases written through it)" if helm != V.HELM else "site.yml"
    return True, f"{first}, then again in {took:.0f} s: nothing changed, no kubernetes.core writer run"


def _writers(run: dict, actions: tuple[str, ...]) -> list[str]:
    """The tasks of an ansible.posix.json run that ran one of ``actions`` (not skipped)."""
    return [
        task["task"]["name"]
        for play in run["plays"]
        for task in play["tasks"]
        for h in task["hosts"].values()
        if h.get("action") in actions and not h.get("skipped")
    ]


LAB_TESTS = (
    "test_gang_info.py",
    "test_operator_gang.py",
    "test_gang_rbac.py",
    "test_gang_smoke_test.py",
    "test_crds_module.py",
    "test_in_process.py",
    "test_drift_module.py",
    "test_render_chart.py",
)


def lab_tests(venv: Path) -> tuple[bool, str]:
    """The lab tests of the four modules, run by the cell's Python (so the modules run in its venv), on
    two workers, each file on a fresh lab of its own as in `make test` (the lab check's lab has Volcano
    and an operator installed)."""
    env = {k: v for k, v in os.environ.items() if k != "GANGSCHED_LAB_REUSE"}
    env["GANGSCHED_LAB_DIR"] = str(_root() / f"lab-{venv.name}")
    p = _run(
        _pytest(venv, "-n", "2", "--dist", "loadfile", *(f"tests/lab/modules/{t}" for t in LAB_TESTS)),
        cwd=REPO,
        timeout=3600,
        env=env,
    )
    log = _root() / f"lab-tests-{venv.name}.log"  # the whole run: a failure's assertion is far from the end
    log.write_text(p.stdout + p.stderr)
    tail = (p.stdout.strip().splitlines() or [""])[-1]
    return p.returncode == 0, tail if p.returncode == 0 else f"{p.stdout[-3000:]}\n(whole output: {log})"


def main(argv: list[str]) -> int:
    with_lab_tests = "--lab-tests" in argv
    # the unit tests read no cluster: on another Kubernetes minor (make minor) only the lab checks differ
    without_unit = "--no-unit" in argv
    without_roles = "--no-roles" in argv
    argv = [a for a in argv if a not in ("--lab-tests", "--no-unit", "--no-roles")]
    wanted = [c for c in CELLS if not argv or c.name in argv]
    if argv and len(wanted) != len(argv):
        print(f"unknown cell in {argv}; cells: {', '.join(c.name for c in CELLS)}", file=sys.stderr)
        return 2
    from lab import scenarios
    from lab.cluster import Lab

    rows, lab = [], Lab()
    # the roles' lab: what the collection installs itself (the modules' lab has the lab's own Volcano and operator)
    roles_lab = Lab(Path(f"{lab.root}-roles"))
    t0 = time.monotonic()
    lab.up(gpu_nodes=4, gpus_per_node=1, cpu_nodes=1, reuse=True, log=lambda *_: None)
    scenarios.install_volcano(lab)
    scenarios.install_training_operator(lab, gang_flag=None)
    if not without_roles:
        roles_lab.up(gpu_nodes=4, gpus_per_node=1, cpu_nodes=1, reuse=True, log=lambda *_: None)
    print(f"labs ready in {time.monotonic() - t0:.0f}s", flush=True)
    for cell in wanted:
        t = time.monotonic()
        try:
            venv = build(cell)
            core = (venv / "kubernetes.core").read_text()
            ok_u, why_u = (True, "not run: --no-unit") if without_unit else unit(venv)
            ok_l, why_l = lab_check(venv, lab)
            if ok_l and without_roles:
                why_l = f"{why_l}; roles not run: --no-roles"
            elif ok_l:
                ok_l, why_r = roles_check(venv, roles_lab, cell.helm)
                why_l = f"{why_l}; {why_r}" if ok_l else f"roles: {why_r}"
            if ok_l and with_lab_tests:
                ok_l, why_l = lab_tests(venv)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            core, ok_u, why_u, ok_l, why_l = "?", False, str(e), False, "not run"
        rows.append((cell, core, ok_u, why_u, ok_l, why_l, time.monotonic() - t))
        print(f"{cell.name}: unit {'pass' if ok_u else 'FAIL'}, lab {'pass' if ok_l else 'FAIL'}", flush=True)
    print()
    print("| cell | Python | ansible-core | kubernetes client | kubernetes.core | helm | unit | lab check | time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for cell, core, ok_u, why_u, ok_l, why_l, took in rows:
        u = f"pass ({why_u})" if ok_u else "FAIL"
        ln = f"pass ({why_l})" if ok_l else "FAIL"
        versions = f"{cell.python} | {cell.ansible_core} | {cell.kubernetes} | {core} | {cell.helm.lstrip('v')}"
        print(f"| {cell.name} | {versions} | {u} | {ln} | {took:.0f} s |")
    if os.environ.get("GANGSCHED_LAB_REUSE") != "1":
        lab.down(log=lambda *_: None)
        if not without_roles:
            roles_lab.down(log=lambda *_: None)
    failed = [r for r in rows if not (r[2] and r[4])]
    for cell, _, _, why_u, _, why_l, _ in failed:
        print(f"\n--- {cell.name} ---\nunit: {why_u}\nlab: {why_l}")
    print(f"\ncompat: {len(rows) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Prints the collection's figures on the lab. Not a test: it asserts nothing, it measures.

- site.yml (Volcano) on a fresh lab, then its idempotent re-run, whole and without the smoke tests
  (--skip-tags smoke, the median of 3): wall time of each.
- The smoke test (a fitting gang of 4 pods), run as an automation user bound to exactly
  docs/automation-user-rbac.yml, at 4 and at 1,000 nodes:
  - the API requests it made, counted per user in the API server's audit log (the figure that must not
    grow with the cluster), and the API server's own apiserver_request_total from /metrics over the
    same time, which counts every client (the KWOK nodes' heartbeats, the scheduler, the controllers);
  - its verdict latency: from the scheduler's last bind of a member (audit log) to the smoke test's
    first cleanup call, which it makes right after its verdict; and the part of that which is the
    node's (KWOK's) last status update to Running.
- gang_info on 1,000 nodes and 10,000 pods (100 of them members of partial gangs), with the gang objects in
  proportion (a Volcano PodGroup per job of 10 pods, 10 queues, a FailedCreate event for 1 job in 100): wall time
  and peak resident memory of the module process, and of the whole `ansible localhost -m` call; `make bench` then
  does the same at 5,000 nodes and 50,000 pods (--only-gang-info).
- Each figure next to its floor, measured in the same run: the converge (site.yml --skip-tags smoke, a
  re-run) and render.yml next to `kubectl apply --server-side` of the very objects render.yml writes (render and
  floor 3 times in turn, the medians);
  gang_info next to a plain read of the objects it reads (a Python process that GETs and decodes the
  same lists, nothing else).
- Ansible's own share of the converge and the render (bench/ansible_floor.py): how many tasks each ran (skipped
  ones too), how many module runs they made and how many of those were module processes (the rest ran in Ansible's
  worker), the seconds of their tasks per action, and what as many tasks that do nothing take, measured in the same
  run: the part of each figure no change inside the tasks can remove.

Usage: python bench/gang_figures.py [--nodes 1000] [--pods 10000]   (about 10 minutes on 2 cores)
       python bench/gang_figures.py --only-gang-info [--baseline DIR] --nodes 5000 --pods 50000
  --only-gang-info: the lab, grown, and gang_info next to its floor, nothing else (no site.yml, smoke
  test or render); --baseline DIR: also gang_info of the checkout in DIR (e.g. `git worktree add DIR
  HEAD~1`), run in turn with this one's on the same lab, for a before/after of the same cluster.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import ansible_floor  # noqa: E402  (bench/, the script's directory)
import yaml  # noqa: E402
from kubernetes import client as k  # noqa: E402

from lab import build, kube, nodes, scenarios  # noqa: E402
from lab.cluster import Lab  # noqa: E402

BIN = Path(sys.executable).parent
SA_NS, SA = "default", "gang-bench"
USER = f"system:serviceaccount:{SA_NS}:{SA}"
JOB_LABEL = "training.kubeflow.org/job-name"
VOLCANO = "scheduling.volcano.sh"
QUEUES = 10  # the Volcano queues a grown lab has


def env(lab: Lab, repo: Path = REPO) -> dict:
    """The environment of an Ansible or module process: the collection is the checkout ``repo``."""
    return {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "GANGSCHED_LAB_DIR": str(lab.root),
        "PYTHONPATH": str(repo / ".collections"),
    }


def playbook(lab: Lab, name: str, *extra: str) -> float:
    t0 = time.monotonic()
    p = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(REPO / "inventories/lab"), f"gangsched.kubeflow.{name}", *extra],
        env=env(lab),
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    took = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"{name}.yml failed (rc {p.returncode}):\n{p.stdout[-3000:]}")
    recap = re.findall(r"changed=(\d+)", p.stdout)
    print(f"  {' '.join([name + '.yml', *extra])}: {took:.1f} s, changed={','.join(recap)}")
    return took


def render_and_apply(lab: Lab, tmp: Path, runs: int = 3) -> tuple[list[float], list[float], int]:
    """``runs`` times, in turn: render.yml into a fresh directory (wall s), then the floor: `kubectl apply
    --server-side` of what it wrote, one call per component directory as a GitOps stage would (wall s). Returns the
    render times, the floor times and the object count. Helm hooks (the Volcano chart's admission-init Job, removed by
    Helm once done) are left out, as in the tests."""
    renders, floors, count = [], [], 0
    for i in range(runs):
        out = tmp / f"rendered-{i}"
        renders.append(playbook(lab, "render", "-e", f"gangsched_render_dir={out}"))
        t0, count = time.monotonic(), 0
        for d in sorted(x for x in out.iterdir() if x.is_dir() and x.name != "host-files"):
            kept = [f for f in sorted(d.glob("*.yaml")) if "helm.sh/hook" not in f.read_text()]
            count += len(kept)
            args = [a for f in kept for a in ("-f", str(f))]
            p = kube.kubectl(lab, "apply", "--server-side", "--force-conflicts", *args, check=False)
            if p.returncode != 0:
                sys.exit(f"kubectl apply --server-side of {d.name} failed: {p.stderr[-2000:]}")
        floors.append(time.monotonic() - t0)
    return renders, floors, count


def _runs(times: list[float]) -> str:
    return f"median {statistics.median(times):.1f} s (runs {', '.join(f'{t:.1f}' for t in times)})"


# what gang_info reads, as plain lists: the floor of any tool that reports on them
READ_FLOOR = """
import json, sys, time
from kubernetes import config
api = config.new_client_from_config(sys.argv[1])
host, pool = api.configuration.host, api.rest_client.pool_manager
paths = ["/version", "/api/v1/nodes", "/api/v1/pods", "/apis/apps/v1/deployments", "/apis/apps/v1/daemonsets",
         "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
         "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
         "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
         "/api/v1/services", "/apis/discovery.k8s.io/v1/endpointslices",
         "/api/v1/events?fieldSelector=reason%3DFailedCreate"]
# the gang objects, where their CRDs are served (each path's PodGroups, Volcano's queues)
maybe = ["/apis/scheduling.volcano.sh/v1beta1/podgroups", "/apis/scheduling.volcano.sh/v1beta1/queues",
         "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"]
n = 0
for p in paths + maybe:
    r = pool.request("GET", host + p, preload_content=True)
    if p in maybe and r.status == 404:
        continue
    assert r.status == 200, (p, r.status)
    n += len(json.loads(r.data).get("items", [1]))
print(n)
"""


def read_floor(lab: Lab) -> tuple[float, int, int]:
    """The plain read: wall s, peak RSS KiB and the number of objects read, of a Python process that
    GETs and decodes what gang_info reads (start-up included, as for the module)."""
    t0 = time.monotonic()
    p = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, "-c", READ_FLOOR, str(lab.kubeconfig)],
        capture_output=True,
        text=True,
    )
    took = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"the plain read failed: {p.stderr[-2000:]}")
    return took, int(p.stderr.strip().splitlines()[-1]), int(p.stdout.strip())


def module_direct(lab: Lab, name: str, args: dict, tmp: Path, repo: Path = REPO) -> tuple[dict, float, int]:
    """The module alone, as Ansible runs it (its own Python process): result, wall s, peak RSS KiB.
    ``repo``: the checkout whose module runs (another one for a before/after)."""
    argfile = tmp / f"{name}.json"
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    mod = f"ansible_collections.gangsched.kubeflow.plugins.modules.{name}"
    t0 = time.monotonic()
    p = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, "-m", mod, str(argfile)],
        env=env(lab, repo),
        capture_output=True,
        text=True,
    )
    took = time.monotonic() - t0
    res = json.loads(p.stdout)
    if res.get("failed"):
        sys.exit(f"{name} failed: {res.get('msg')}")
    return res, took, int(p.stderr.strip().splitlines()[-1])


def module_ansible(lab: Lab, name: str, args: dict) -> tuple[float, int]:
    """The same through `ansible localhost -m`: wall s and the peak RSS of its largest process, KiB."""
    t0 = time.monotonic()
    p = subprocess.run(
        [
            "/usr/bin/time",
            "-f",
            "%M",
            str(BIN / "ansible"),
            "localhost",
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            "-m",
            f"gangsched.kubeflow.{name}",
            "-a",
            json.dumps(args),
        ],
        env=env(lab),
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    took = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"ansible -m {name} failed (rc {p.returncode}):\n{p.stdout[-3000:]}")
    return took, int(p.stderr.strip().splitlines()[-1])


def request_total(lab: Lab) -> float:
    text = kube.kubectl(lab, "get", "--raw", "/metrics").stdout
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("apiserver_request_total{")
    )


def ts(ev: dict) -> float:
    return datetime.datetime.strptime(ev["stageTimestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def audit_since(lab: Lab, since: float) -> list[dict]:
    out = []
    with open(lab.logs / "audit.log", errors="replace") as f:
        for line in f:
            ev = json.loads(line)
            if ts(ev) >= since:
                out.append(ev)
    return out


def smoke(lab: Lab, kubeconfig: Path, tmp: Path, label: str) -> None:
    ns = "gangsched-smoke"
    args = {"gang_scheduler": "volcano", "replicas": 4, "expect": "running", "namespace": ns}
    args["kubeconfig"] = str(kubeconfig)
    time.sleep(2)
    before, since = request_total(lab), time.time()
    res, took, _ = module_direct(lab, "gang_smoke_test", args, tmp)
    after = request_total(lab)
    time.sleep(1)  # the audit backend writes in batches
    events = audit_since(lab, since - 1)
    ours = [e for e in events if e.get("user", {}).get("username") == USER]
    members = f"smoke-{res['run_id']}-gang-"

    def member(e):
        ref = e.get("objectRef") or {}
        return ref.get("namespace") == ns and (ref.get("name") or "").startswith(members)

    binds = [ts(e) for e in events if member(e) and e["objectRef"].get("subresource") == "binding"]
    running = [
        ts(e)
        for e in events
        if member(e) and e["objectRef"].get("subresource") == "status" and e.get("user", {}).get("username") != USER
    ]
    cleanup = [ts(e) for e in ours if e["verb"] in ("delete", "deletecollection")]
    kinds = Counter(
        f"{e['verb']} {(e.get('objectRef') or {}).get('resource', e.get('requestURI', '?'))}"
        + (f"/{e['objectRef']['subresource']}" if (e.get("objectRef") or {}).get("subresource") else "")
        for e in ours
    )
    print(f"  smoke test at {label}: verdict {res['verdict']} in {took:.1f} s")
    print(f"    API requests by the smoke test (audit log, its user): {len(ours)}")
    print(f"      {', '.join(f'{n} {w}' for w, n in sorted(kinds.items(), key=lambda x: -x[1]))}")
    print(f"    apiserver_request_total over the same time (/metrics, every client): {after - before:.0f}")
    if binds and cleanup:
        last_bind = max(binds)
        first_cleanup = min(c for c in cleanup if c >= last_bind) if any(c >= last_bind for c in cleanup) else None
        last_running = max(running) if running else None
        if first_cleanup is not None:
            print(f"    verdict latency after the last bind: {first_cleanup - last_bind:.3f} s", end="")
            if last_running is not None and last_bind <= last_running <= first_cleanup:
                print(
                    f" (node's status update to Running {last_running - last_bind:.3f} s,"
                    f" then the smoke test {first_cleanup - last_running:.3f} s)"
                )
            else:
                print()


def grow(lab: Lab, n_nodes: int, n_pods: int) -> None:
    api = kube.api(lab)
    core = k.CoreV1Api(api)
    have = len(core.list_node().items)
    t0 = time.monotonic()
    names = []
    for i in range(n_nodes - have):
        body = nodes.node_body(f"bench-node-{i}", 8)
        core.create_node(body)
        names.append(body["metadata"]["name"])

    def all_ready():
        ready = sum(
            1
            for n in core.list_node().items
            if any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
        )
        return ready >= n_nodes

    # 600 s, and 1 s per 5 nodes beyond 3,000 (a bigger lab on the same 2 cores)
    kube.wait_for(all_ready, max(600, n_nodes // 5), f"{n_nodes} Ready nodes", interval=3)
    print(f"  {n_nodes} nodes Ready after {time.monotonic() - t0:.0f} s")

    per_ns = 1000
    namespaces = [f"bench-{i}" for i in range((n_pods + per_ns - 1) // per_ns)]
    for ns in namespaces:
        kube.ensure_namespace(core, ns)
    # the gang objects in proportion: Volcano's CRDs, QUEUES queues, a PyTorchJob per 10 pods (no operator runs: the
    # objects are what a healthy cluster holds) owning its PodGroup and its pods (its members annotated), as
    # training-operator makes them, and a FailedCreate event for 1 job in 100 (of a batch Job since gone, as most
    # such events are). Pods with training-operator's job label and no owner would be a deleted job's leftovers.
    scenarios.install_volcano_crds(lab)
    pytorch = [
        d for d in scenarios.crds("training-operator", "crds") if d["metadata"]["name"] == "pytorchjobs.kubeflow.org"
    ]
    kube.apply(lab, pytorch, server_side=True)
    scenarios.wait_crds_established(lab, ["pytorchjobs.kubeflow.org"])
    owners: dict[int, dict] = {}
    custom = k.CustomObjectsApi(api)
    for q in range(QUEUES):
        body = {"apiVersion": f"{VOLCANO}/v1beta1", "kind": "Queue", "metadata": {"name": f"bench-q-{q}"}}
        custom.create_cluster_custom_object(VOLCANO, "v1beta1", "queues", {**body, "spec": {"weight": 1}})
    local = threading.local()

    def gang_objects(job: int) -> None:
        if not hasattr(local, "custom"):
            local.custom, local.core = k.CustomObjectsApi(kube.api(lab)), k.CoreV1Api(kube.api(lab))
        ns = namespaces[job * 10 // per_ns]
        replica = {"replicas": 9, "template": {"spec": {"containers": [{"name": "pytorch", "image": "busybox:1.36"}]}}}
        made = local.custom.create_namespaced_custom_object(
            "kubeflow.org",
            "v1",
            ns,
            "pytorchjobs",
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "metadata": {"name": f"job-{job}"},
                "spec": {"pytorchReplicaSpecs": {"Master": {**replica, "replicas": 1}, "Worker": replica}},
            },
        )
        owners[job] = {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "name": f"job-{job}",
            "uid": made["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        pg = {
            "apiVersion": f"{VOLCANO}/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": f"job-{job}", "ownerReferences": [owners[job]]},
            "spec": {"minMember": 10, "queue": f"bench-q-{job % QUEUES}"},
        }
        local.custom.create_namespaced_custom_object(VOLCANO, "v1beta1", ns, "podgroups", pg)
        if job % 100 == 50:
            event = {
                "metadata": {"generateName": f"job-{job}."},
                "involvedObject": {"kind": "Job", "apiVersion": "batch/v1", "namespace": ns, "name": f"job-{job}"},
                "reason": "FailedCreate",
                "type": "Warning",
                "message": f'Error creating: pods "job-{job}-x" is forbidden: exceeded quota: gpus',
                "source": {"component": "job-controller"},
            }
            local.core.create_namespaced_event(ns, event)

    t0 = time.monotonic()
    jobs = (n_pods + 9) // 10
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(gang_objects, range(jobs)))
    print(f"  {QUEUES} queues, {jobs} PyTorchJobs, their PodGroups and events created in {time.monotonic() - t0:.0f} s")

    def pod(i: int) -> None:
        if not hasattr(local, "core"):
            local.core = k.CoreV1Api(kube.api(lab))
        job, member = divmod(i, 10)
        # 1 job in 100 is a partial gang: its last member waits for a scheduler that is not there
        unbound = job % 100 == 0 and member == 9
        spec = {
            "containers": [
                {
                    "name": "w",
                    "image": "busybox:1.36",
                    "resources": {"requests": {"cpu": "10m"}, "limits": {"nvidia.com/gpu": "1"} if member < 4 else {}},
                }
            ],
            "terminationGracePeriodSeconds": 0,
        }
        if unbound:
            spec["schedulerName"] = "nobody"
        else:
            spec["nodeName"] = names[job % len(names)]
        body = {
            "metadata": {
                "name": f"job-{job}-{member}",
                "labels": {JOB_LABEL: f"job-{job}"},
                "annotations": {"scheduling.k8s.io/group-name": f"job-{job}"},
                "ownerReferences": [owners[job]],
            },
            "spec": spec,
        }
        local.core.create_namespaced_pod(namespaces[i // per_ns], body)

    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(pod, range(n_pods)))
    print(f"  {n_pods} pods created in {time.monotonic() - t0:.0f} s")

    def settled():
        running = sum(
            1 for ns in namespaces for _ in core.list_namespaced_pod(ns, field_selector="status.phase=Running").items
        )
        return running >= n_pods - n_pods // 100 // 10

    try:
        kube.wait_for(settled, max(300, n_pods // 100), "the pods Running", interval=10)
        print(f"  pods Running after {time.monotonic() - t0:.0f} s")
    except TimeoutError as e:
        print(f"  {e}")


def comparable(res: dict) -> dict:
    """gang_info's facts less what changes from one second to the next (ages in seconds)."""
    out = {k: v for k, v in res.items() if k != "invocation"}
    out["partial_gangs"] = [{k: v for k, v in g.items() if k != "pending_for_seconds"} for g in res["partial_gangs"]]
    out["problems"] = [{k: re.sub(r"\b\d+s\b", "Ns", v) for k, v in p.items()} for p in res["problems"]]
    return out


def differences(old: dict, new: dict) -> list[str]:
    """What differs between two ``comparable`` results, in a few lines (the cluster may have changed
    between the two runs: a node's Ready condition, a pod deleted)."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if key == "nodes" and isinstance(a, list) and isinstance(b, list):
            before = {n["name"]: n for n in a}
            fields = Counter(f for n in b for f in n if n["name"] in before and before[n["name"]].get(f) != n.get(f))
            gone = len(set(before) ^ {n["name"] for n in b})
            out.append(f"nodes: {dict(fields)} differ (nodes in one run only: {gone})")
        else:
            out.append(f"{key}: {json.dumps(a)[:300]} != {json.dumps(b)[:300]}")
    return out


def gang_info(lab: Lab, tmp: Path, label: str, baseline: Path | None = None) -> None:
    """gang_info's module 3 times (and, with ``baseline``, that checkout's in turn with it), through
    `ansible localhost -m` once, and its floor 3 times."""
    args = {"partial_threshold_seconds": 5, "kubeconfig": str(lab.kubeconfig)}
    runs, base = [], []
    for _ in range(3):
        runs.append(module_direct(lab, "gang_info", args, tmp))
        if baseline is not None:
            base.append(module_direct(lab, "gang_info", args, tmp, baseline))
    res = runs[-1][0]
    walls = [r[1] for r in runs]
    rss = max(r[2] for r in runs)
    a_wall, a_rss = module_ansible(lab, "gang_info", args)
    floors = [read_floor(lab) for _ in range(3)]
    f_wall = statistics.median(f[0] for f in floors)
    f_rss = max(f[1] for f in floors)
    print(
        f"  gang_info at {label}: {len(res['nodes'])} nodes, {res['gpus']['capacity']} GPUs,"
        f" {res['gpus']['requested']} requested, {len(res['partial_gangs'])} partial gangs,"
        f" {len(res['problems'])} problems"
    )
    print(f"    module: median {statistics.median(walls):.2f} s (runs {', '.join(f'{w:.2f}' for w in walls)}),")
    print(f"            peak RSS {rss / 1024:.0f} MiB (runs {', '.join(f'{r[2] / 1024:.0f}' for r in runs)})")
    print(
        f"    floor (a Python process reading and decoding the same {floors[0][2]} objects): median {f_wall:.2f} s"
        f" (runs {', '.join(f'{f[0]:.2f}' for f in floors)}), peak RSS {f_rss / 1024:.0f} MiB"
        f" -> gang_info {statistics.median(walls) / f_wall:.2f}x the time,"
        f" {rss / f_rss:.2f}x the memory (target 1.5x the time)"
    )
    if base:
        b_wall, b_rss = statistics.median(b[1] for b in base), max(b[2] for b in base)
        old, new = comparable(base[-1][0]), comparable(res)
        differ = differences(old, new)
        print(
            f"    baseline {baseline}: median {b_wall:.2f} s (runs {', '.join(f'{b[1]:.2f}' for b in base)}),"
            f" peak RSS {b_rss / 1024:.0f} MiB (runs {', '.join(f'{b[2] / 1024:.0f}' for b in base)})"
            f" -> {b_wall / f_wall:.2f}x the floor's time; facts {'DIFFERENT from' if differ else 'equal to'}"
            " this checkout's (last runs)"
        )
        for line in differ:
            print(f"      {line}")
    print(f"    through `ansible localhost -m`: {a_wall:.2f} s, largest process peak RSS {a_rss / 1024:.0f} MiB")


def automation_user(lab: Lab, tmp: Path) -> Path:
    """A kubeconfig of a ServiceAccount bound to the documented automation-user role (the smoke test's user)."""
    kubeconfig = tmp / "kubeconfig"
    kube.service_account_kubeconfig(lab, SA_NS, SA, kubeconfig)
    role = yaml.safe_load((REPO / "docs" / "automation-user-rbac.yml").read_text())
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": SA},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": SA_NS}],
    }
    kube.apply(lab, [role, binding])
    time.sleep(2)
    return kubeconfig


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--no-grow", action="store_true", help="the figures of the small lab only (about 4 minutes)")
    ap.add_argument(
        "--only-gang-info",
        action="store_true",
        help="gang_info and its floor alone, on the small lab and then grown: no site.yml, smoke test or render",
    )
    ap.add_argument(
        "--only-smoke",
        action="store_true",
        help="site.yml once, then the smoke test's requests and verdict latency alone, on the small lab and then grown",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="also gang_info of the checkout in DIR (e.g. a git worktree of the commit before), on the same lab",
    )
    opts = ap.parse_args()
    if opts.baseline is not None:
        opts.baseline = opts.baseline.resolve()
        if not (opts.baseline / "plugins/modules/gang_info.py").is_file():
            ap.error(f"--baseline {opts.baseline}: no plugins/modules/gang_info.py there; give a checkout of this repo")
        subprocess.run(["make", "-s", "collection"], cwd=opts.baseline, check=True)
    build.binary_path("helm")  # the lab is built (make build)
    lab = Lab()
    if any(lab.running().values()):
        print("a lab is already running; stop it first (python -m lab down)")
        return 2
    subprocess.run(["make", "-s", "collection"], cwd=REPO, check=True)
    lab.up(gpu_nodes=4, gpus_per_node=1, cpu_nodes=1, log=lambda *_: None)
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            if opts.only_gang_info:
                total = len(k.CoreV1Api(kube.api(lab)).list_node().items)
                gang_info(lab, tmp, f"{total} nodes", opts.baseline)
                if not opts.no_grow:
                    print(f"growing the lab to {opts.nodes} nodes and {opts.pods} pods:")
                    grow(lab, opts.nodes, opts.pods)
                    gang_info(lab, tmp, f"{opts.nodes} nodes, {opts.pods} pods", opts.baseline)
                return 0
            print("site.yml on a fresh lab (4 GPU nodes x 1 GPU + 1 CPU node), Volcano:")
            playbook(lab, "site")
            if opts.only_smoke:
                kubeconfig = automation_user(lab, tmp)
                smoke(lab, kubeconfig, tmp, f"{len(k.CoreV1Api(kube.api(lab)).list_node().items)} nodes")
                if not opts.no_grow:
                    print(f"growing the lab to {opts.nodes} nodes and {opts.pods} pods:")
                    grow(lab, opts.nodes, opts.pods)
                    smoke(lab, kubeconfig, tmp, f"{opts.nodes} nodes, {opts.pods} pods")
                return 0
            print("idempotent re-run, whole (the smoke tests prove the gang again):")
            playbook(lab, "site")
            print("idempotent re-run of the install and configuration alone, 3 times:")
            converges = [playbook(lab, "site", "--skip-tags", "smoke") for _ in range(3)]
            converge = statistics.median(converges)
            print("render.yml, then the floor: kubectl apply --server-side of what it wrote, 3 times in turn:")
            renders, floors, count = render_and_apply(lab, tmp)
            render, floor = statistics.median(renders), statistics.median(floors)
            print(f"  render.yml: {_runs(renders)}")
            print(f"  kubectl apply --server-side of the {count} rendered objects: {_runs(floors)}")
            print(f"  converge re-run: {_runs(converges)}")
            print(f"  converge re-run {converge:.1f} s = {converge / floor:.2f}x the floor (target 1x)")
            print(f"  render {render:.1f} s = {render / floor:.2f}x the floor (target 0.5x)")
            print("Ansible's own share: the tasks of the converge re-run and of render.yml (skipped ones too), their")
            print("module runs, where their time went, and as many tasks that do nothing, now:")
            cmd = [str(BIN / "ansible-playbook"), "-i", str(REPO / "inventories/lab")]
            for label, extra, took in (
                ("converge re-run", ["gangsched.kubeflow.site", "--skip-tags", "smoke"], converge),
                ("render", ["gangsched.kubeflow.render", "-e", f"gangsched_render_dir={tmp / 'rendered-0'}"], render),
            ):
                print("\n".join(ansible_floor.share(label, [*cmd, *extra], env(lab), REPO, took, floor)))
            kubeconfig = automation_user(lab, tmp)
            total = len(k.CoreV1Api(kube.api(lab)).list_node().items)
            smoke(lab, kubeconfig, tmp, f"{total} nodes")
            gang_info(lab, tmp, f"{total} nodes", opts.baseline)
            if opts.no_grow:
                return 0
            print(f"growing the lab to {opts.nodes} nodes and {opts.pods} pods:")
            grow(lab, opts.nodes, opts.pods)
            smoke(lab, kubeconfig, tmp, f"{opts.nodes} nodes, {opts.pods} pods")
            gang_info(lab, tmp, f"{opts.nodes} nodes, {opts.pods} pods", opts.baseline)
    finally:
        lab.down(log=lambda *_: None)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""gang_info against the lab: facts equal in check mode; the seed's scheduler-name trap is reported
and gone after operator_gang; a gang-less job stuck half-scheduled is reported as a partial gang with
the GPUs it holds; bad inputs fail with a clear message. On a cluster a round trip away (the lab behind lab.latency's
forwarder) the reads it makes on any cluster go out together, every one of them used."""

from __future__ import annotations

import time

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _together
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s._client import Client
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _gang_info
from ansible_run import comparable, run_module

from lab import kube, scenarios
from lab import versions as V
from lab.latency import LatencyProxy


@pytest.fixture(scope="module")
def sp(lab):
    scenarios.install_scheduler_plugins(lab)
    return lab


def test_facts_are_read_only_and_equal_in_check_mode(volcano, sp):
    real = run_module(volcano, "gang_info", {})
    check = run_module(volcano, "gang_info", {}, check=True)
    assert real["changed"] is False
    assert real["kubernetes_version"] == V.KUBERNETES
    assert real["gpus"]["capacity"] >= 4 and real["gpus"]["nodes"] >= 4
    kinds = {(s["kind"], tuple(s["gang_profiles"])) for s in real["schedulers"]}
    assert ("volcano", ("volcano",)) in kinds and ("scheduler_plugins", (scenarios.SP_NAME,)) in kinds, kinds
    assert set(real["podgroup_crds"]) >= {"podgroups.scheduling.volcano.sh", "podgroups.scheduling.x-k8s.io"}
    drop = ("nodes", "gpus", "partial_gangs")  # other tests' pods may come and go between the two calls
    assert {k: v for k, v in comparable(check).items() if k not in drop} == {
        k: v for k, v in comparable(real).items() if k not in drop
    }


def test_reads_go_out_together_on_a_cluster_far_away_and_each_is_used(volcano, tmp_path, monkeypatch):
    """Through a forwarder that holds each chunk sent for 0.1 s, the module says what it says without it, with several
    connections open at once; in process, every read asked ahead (those it makes on any cluster, then those that
    depend on them) is one the runner makes (none sent for nothing)."""
    near = run_module(volcano, "gang_info", {})
    with LatencyProxy(volcano.state()["ports"]["apiserver"], 0.1) as far:
        res = run_module(volcano, "gang_info", {"kubeconfig": str(far.kubeconfig(volcano, tmp_path / "far"))})
    assert res.get("failed") is not True, res.get("msg")
    drop = ("nodes", "gpus", "partial_gangs", "invocation")  # other tests' pods may come and go between the two calls
    assert {k: v for k, v in res.items() if k not in drop} == {k: v for k, v in near.items() if k not in drop}
    assert far.most >= 4, f"at most {far.most} connection(s) open at once, of {far.accepted}"

    blocks, ahead = [], _together.ahead
    monkeypatch.setattr(_together, "ahead", lambda *a: blocks.append(ahead(*a)) or blocks[-1])
    client = Client.from_params({"kubeconfig": str(volcano.kubeconfig)})
    _gang_info.gather(client, {"partial_threshold_seconds": 60}, time.time())
    # the reads it makes on any cluster, then those that depend on them (Volcano's ConfigMap, its PodGroups and queues)
    assert len(blocks) == 2 and len(blocks[0].reads) >= 10 and len(blocks[1].reads) >= 3, [b.reads for b in blocks]
    assert [b.unused for b in blocks] == [[], []], "asked ahead, never read"


def test_seed_scheduler_name_trap_is_reported_then_fixed(volcano, sp):
    scenarios.install_training_operator(volcano, gang_flag="--gang-scheduler-name=scheduler-plugins")
    try:
        info = run_module(volcano, "gang_info", {})
        trap = [p for p in info["problems"] if p["object"] == "Deployment kubeflow/training-operator"]
        assert trap and "scheduler-plugins names no scheduler" in trap[0]["message"], info["problems"]
        assert scenarios.SP_NAME in trap[0]["fix"]
        fixed = run_module(
            volcano,
            "operator_gang",
            {"operator": "training_operator", "gang_scheduler": "scheduler_plugins", "wait": True},
        )
        assert fixed["scheduler_name"] == scenarios.SP_NAME, fixed
        info = run_module(volcano, "gang_info", {})
        assert [p for p in info["problems"] if p["object"] == "Deployment kubeflow/training-operator"] == []
        op = next(o for o in info["operators"] if o["deployment"] == "kubeflow/training-operator")
        assert op["gang_value"] == scenarios.SP_NAME
    finally:
        scenarios.install_training_operator(volcano, gang_flag=None)


def test_half_scheduled_gangless_job_is_a_partial_gang(lab, namespace):
    docs = scenarios.gang(namespace, "stuck", 5, "default")
    for d in docs:
        d["metadata"]["labels"]["training.kubeflow.org/job-name"] = "stuck"
    kube.apply(lab, docs)
    kube.wait_for(
        lambda: len(run_module(lab, "gang_info", {"partial_threshold_seconds": 0})["partial_gangs"]) > 0,
        60,
        "a partial gang",
    )
    info = run_module(lab, "gang_info", {"partial_threshold_seconds": 0})
    gang = next(g for g in info["partial_gangs"] if g["gang"] == f"{namespace}/stuck")
    assert len(gang["bound"]) == 4 and len(gang["pending"]) == 1 and gang["gpus_held"] == 4, gang
    # a longer threshold than the pods' age: not (yet) reported
    later = run_module(lab, "gang_info", {"partial_threshold_seconds": 3600})
    assert [g for g in later["partial_gangs"] if g["gang"] == f"{namespace}/stuck"] == []


def test_webhook_without_a_ready_endpoint_is_a_problem_with_its_fix(lab, namespace):
    """A failurePolicy Fail webhook whose Service has no ready pod refuses every request it matches (a
    cluster-wide outage when it matches pods). This one matches a kind nobody has, so nothing else breaks."""
    name = f"gangsched-test-{namespace}"
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "gone", "namespace": namespace},
        "spec": {"selector": {"app": "gone"}, "ports": [{"port": 443, "targetPort": 9443}]},
    }
    hook = {
        "name": "deny.example.invalid",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": {"service": {"name": "gone", "namespace": namespace, "path": "/validate"}},
        "rules": [{"apiGroups": ["example.invalid"], "apiVersions": ["v1"], "operations": ["CREATE"]}],
    }
    hook["rules"][0]["resources"] = ["nothings"]
    vwc = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [hook, {**hook, "name": "ignore.example.invalid", "failurePolicy": "Ignore"}],
    }
    kube.apply(lab, [svc, vwc])
    try:
        info = run_module(lab, "gang_info", {})
        found = [p for p in info["problems"] if p["object"] == f"ValidatingWebhookConfiguration {name}"]
        assert len(found) == 1, info["problems"]  # the Ignore one refuses nothing
        msg = found[0]["message"]
        assert f"deny.example.invalid calls Service {namespace}/gone, which has no ready endpoint" in msg, msg
        assert "every request for nothings is refused" in found[0]["message"]
        assert f"Service {namespace}/gone back to Ready" in found[0]["fix"], found[0]["fix"]
    finally:
        kube.delete(lab, [vwc])


BAD = [
    ("threshold-negative", {"partial_threshold_seconds": -1}, "partial_threshold_seconds must be >= 0"),
    ("threshold-not-int", {"partial_threshold_seconds": "soon"}, "partial_threshold_seconds"),
    ("unknown-option", {"namespace": "x"}, "Unsupported parameters"),
    (
        "unreachable-api",
        {"host": "https://127.0.0.1:1", "api_key": "not-a-token", "validate_certs": False},
        "Failed to reach the Kubernetes API at https://127.0.0.1:1",
    ),
    ("kubeconfig-missing", {"kubeconfig": "/nonexistent/kubeconfig"}, "not found or not a file"),
    ("context-unknown", {"context": "no-such-context"}, "no-such-context"),
    ("forbidden", {"impersonate_user": "system:serviceaccount:default:default"}, "Forbidden to read"),
    ("bad-token", {"host": "{server}", "api_key": "not-a-token", "validate_certs": False}, "Unauthorized"),
    ("ca-cert-missing", {"ca_cert": "/nonexistent/ca.crt"}, "ca.crt"),
    ("validate-certs-not-bool", {"validate_certs": "perhaps"}, "validate_certs"),
    ("http-to-the-tls-port", {"host": "{server_http}", "api_key": "x"}, "speaks HTTPS; use https:// in host"),
    (
        "validate-certs-without-ca",
        {"host": "{server}", "api_key": "x", "validate_certs": True},
        "TLS certificate could not be verified; set ca_cert",
    ),
    ("kubeconfig-not-a-kubeconfig", {"kubeconfig": "{ca_file}"}, "is not a kubeconfig"),
    ("kubeconfig-a-directory", {"kubeconfig": "/"}, "not found or not a file"),
    (
        "silent-api-server",
        {"host": "{silent}", "api_key": "x", "validate_certs": False, "api_timeout": 3},
        "did not answer within 3s (api_timeout)",
    ),
    ("api-timeout-zero", {"api_timeout": 0}, "api_timeout must be >= 1"),
    ("api-timeout-not-int", {"api_timeout": "soon"}, "api_timeout"),
    ("gpu-nodes-not-a-dict", {"gpu_nodes": "gpu-node-0"}, "gpu_nodes"),
]


def test_gpu_nodes_nvml_against_what_each_kubelet_advertises(lab):
    """gpu_node_info's facts by node name against the lab's nodes (1 nvidia.com/gpu each): a node whose NVML sees two
    GPUs is named with both numbers, one that sees one is not, and a name the cluster does not have is reported."""
    one = {"gpus": [{"index": 0}], "device_plugins": {"registered": True}}
    two = {"gpus": [{"index": 0}, {"index": 1}], "device_plugins": {"registered": True}}
    info = run_module(lab, "gang_info", {"gpu_nodes": {"gpu-node-0": two, "gpu-node-1": one, "gpu-node-9": one}})
    about = {p["object"]: p["message"] for p in info["problems"] if p["object"].startswith("Node ")}
    assert about == {
        "Node gpu-node-0": "NVML sees 2 GPU(s), the kubelet advertises 1 nvidia.com/gpu: the device plugin advertises "
        "fewer than the driver has: GPUs it found unhealthy, or MIG devices",
        "Node gpu-node-9": "gpu_node_info's facts name node gpu-node-9, which the cluster does not have",
    }, info["problems"]
    assert not [p for p in run_module(lab, "gang_info", {})["problems"] if p["object"].startswith("Node ")]


@pytest.mark.parametrize("case,args,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_fails_with_a_clear_message(lab, silent_server, case, args, message):
    import time

    where = {
        "server": lab.api_url(),
        "server_http": lab.api_url().replace("https://", "http://"),
        "ca_file": str(lab.pki / "ca.crt"),
        "silent": silent_server,
    }
    args = {k: (v.format(**where) if isinstance(v, str) else v) for k, v in args.items()}
    t0 = time.monotonic()
    res = run_module(lab, "gang_info", args)
    took = time.monotonic() - t0
    assert res.get("failed") is True, res
    assert message in res["msg"], res["msg"]
    assert "Traceback" not in res["msg"] and "object has no attribute" not in res["msg"], res["msg"]
    assert "Original traceback" not in res["msg"] and "HTTP response headers" not in res["msg"], res["msg"]
    if case == "silent-api-server":
        # api_timeout (3 s), not the default 30 s nor minutes: next to the same run's start-up cost, measured now as
        # a run that fails before any request (a busy machine makes Ansible's start-up alone take 10 s and more)
        t1 = time.monotonic()
        quick = run_module(lab, "gang_info", {"api_timeout": 0})
        start_up = time.monotonic() - t1
        assert quick.get("failed") is True and "api_timeout must be >= 1" in quick["msg"], quick
        assert took < 1.5 * start_up + 2 * 3 + 5, (took, start_up)

"""The crds module on the lab: CRD files applied server-side, stamped and Established; a converged re-run
sends nothing (the API server's audit log shows no write); a changed file sends its CRDs alone; check mode
changes nothing; a CRD the API server refuses fails the task naming it, and leaves the other changed file's CRD
as it was (every CRD is sent as a dry run before any is applied)."""

from __future__ import annotations

import json
import uuid

from ansible_run import run_module
from lab_objects import crd

from lab import kube

OWNER_LABEL = "gangsched.kubeflow/crds-of"
STAMP = "gangsched.kubeflow/source-sha256"


def crd_file(name: str, comment: str = "", schema: bool = True) -> str:
    """A CRD file's text: a comment line (a change that is only the file's), then the CRD as JSON (which is YAML)."""
    return f"# {comment}\n" + json.dumps(crd(name, schema), indent=2) + "\n"


def live(lab, name: str) -> dict:
    return json.loads(kube.kubectl(lab, "get", "crd", name, "-o", "json").stdout)


def writes(lab, group: str, since: int) -> list[str]:
    """The audit log's write requests on this test's CRDs, from line ``since`` on."""
    lines = (lab.logs / "audit.log").read_text(errors="replace").splitlines()[since:]
    out = []
    for line in lines:
        ev = json.loads(line)
        if ev.get("verb") in ("create", "update", "patch", "delete") and group in ev.get("requestURI", ""):
            if ev.get("stage") == "ResponseComplete" and "dryRun" not in ev["requestURI"]:
                out.append(f"{ev['verb']} {ev['requestURI'].split('?')[0].rsplit('/', 1)[1]}")
    return out


def audit_lines(lab) -> int:
    return len((lab.logs / "audit.log").read_text(errors="replace").splitlines())


def test_applied_once_then_only_what_changed_and_never_half(lab, tmp_path):
    group = f"t{uuid.uuid4().hex[:6]}.gangsched.test"
    owner = f"owner-{group[:7]}"
    a, b = f"widgets.{group}", f"gadgets.{group}"
    files = {"crds/a.yaml": crd_file(a), "crds/b.yaml": crd_file(b)}
    args = {"owner": owner, "files": files, "wait_timeout": 60}

    res = run_module(lab, "crds", args)
    assert res.get("failed") is not True, res.get("msg")
    assert res["changed"] is True and sorted(res["applied"]) == sorted([a, b])
    for name in (a, b):
        obj = live(lab, name)
        assert obj["metadata"]["labels"][OWNER_LABEL] == owner
        conds = {c["type"]: c["status"] for c in obj["status"]["conditions"]}
        assert conds["Established"] == "True"
    stamp_b = live(lab, b)["metadata"]["annotations"][STAMP]

    mark = audit_lines(lab)
    again = run_module(lab, "crds", args)
    assert again["changed"] is False and again["applied"] == [] and again["files_unchanged"] == sorted(files)
    assert writes(lab, group, mark) == []

    # one file changed: only its CRD is sent; in check mode not even that
    changed = {**files, "crds/a.yaml": crd_file(a, "a new release")}
    mark = audit_lines(lab)
    check = run_module(lab, "crds", {**args, "files": changed}, check=True)
    assert check["changed"] is True and check["applied"] == [a]
    assert writes(lab, group, mark) == []
    stamp_a = live(lab, a)["metadata"]["annotations"][STAMP]
    assert check["diff"]["before"] == f"{a}: {stamp_a}\n"  # stamps in diff mode, not the CRD's text
    assert check["diff"]["after"].startswith(f"{a}: ") and stamp_a not in check["diff"]["after"]
    res = run_module(lab, "crds", {**args, "files": changed})
    assert res["changed"] is True and res["applied"] == [a] and res["files_unchanged"] == ["crds/b.yaml"]
    assert writes(lab, group, mark) == [f"patch {a}"]
    assert live(lab, b)["metadata"]["annotations"][STAMP] == stamp_b

    # a refused CRD (no schema in an apiextensions.k8s.io/v1 version) beside another changed file: nothing applied
    before_a = live(lab, a)["metadata"]["annotations"][STAMP]
    bad = {"crds/a.yaml": crd_file(a, "yet another"), "crds/b.yaml": crd_file(b, schema=False)}
    mark = audit_lines(lab)
    res = run_module(lab, "crds", {**args, "files": bad})
    assert res["failed"] is True
    assert f"CustomResourceDefinition {b}" in res["msg"] and "Traceback" not in res["msg"]
    assert writes(lab, group, mark) == []
    assert live(lab, a)["metadata"]["annotations"][STAMP] == before_a

    kube.kubectl(lab, "delete", "crd", a, b, "--wait=false")


def test_a_file_that_is_no_crd_fails_naming_it_and_sends_nothing(lab):
    group = f"t{uuid.uuid4().hex[:6]}.gangsched.test"
    files = {"crds/a.yaml": crd_file(f"widgets.{group}"), "crds/kustomization.yaml": "resources: [a.yaml]\n"}
    mark = audit_lines(lab)
    res = run_module(lab, "crds", {"owner": "x", "files": files})
    assert res["failed"] is True
    assert "crds/kustomization.yaml" in res["msg"] and "excludes" in res["msg"], res["msg"]
    assert writes(lab, group, mark) == []


def test_an_upgrade_that_drops_a_stored_version_is_refused_before_anything_is_sent(lab):
    """A CRD whose objects are stored as v1alpha1, and a new file that lists v1 alone (an upgrade that drops the old
    version): the module names v1alpha1 and the migration, and the CRD stays as it was; with v1alpha1 still listed
    (served, not the storage version) the same upgrade goes through."""
    group = f"t{uuid.uuid4().hex[:6]}.gangsched.test"
    name = f"widgets.{group}"
    old = crd(name)
    old["spec"]["versions"][0]["name"] = "v1alpha1"
    kube.apply(lab, [old])
    kube.wait_for(lambda: "Established" in str(live(lab, name).get("status")), 30, "the old CRD Established")
    kube.kubectl(lab, "create", "namespace", group[:7])
    kube.apply(
        lab, [{"apiVersion": f"{group}/v1alpha1", "kind": "Widget", "metadata": {"name": "w", "namespace": group[:7]}}]
    )
    assert live(lab, name)["status"]["storedVersions"] == ["v1alpha1"]

    res = run_module(lab, "crds", {"owner": "o-" + group[:6], "files": {"crds/w.yaml": crd_file(name)}})
    assert res.get("failed") is True, res
    assert "no longer lists version(s) v1alpha1" in res["msg"] and "status.storedVersions" in res["msg"], res["msg"]
    assert [v["name"] for v in live(lab, name)["spec"]["versions"]] == ["v1alpha1"]

    both = crd(name)
    both["spec"]["versions"].insert(0, {**old["spec"]["versions"][0], "storage": False})
    text = json.dumps(both)
    res = run_module(lab, "crds", {"owner": "o-" + group[:6], "files": {"crds/w.yaml": text}})
    assert res.get("failed") is not True, res.get("msg")
    assert [v["name"] for v in live(lab, name)["spec"]["versions"]] == ["v1alpha1", "v1"]
    kube.kubectl(lab, "delete", "namespace", group[:7], "--wait=false")

"""gitops_layout through Ansible on this machine: render.yml's output laid out in stages, written only when it
changes, stale files pruned, check mode writing nothing, the repository path found from the checkout; what cannot
be laid out refused before anything is written."""

from __future__ import annotations

import json

import yaml
from ansible_run import BIN, ansible_cli, ansible_env


def _run(args: dict, check: bool = False) -> dict:
    cmd = [
        str(BIN / "ansible"),
        "localhost",
        "-m",
        "gangsched.kubeflow.gitops_layout",
        "-a",
        json.dumps(args),
        "--diff",
    ]
    cmd += ["--check"] if check else []
    out = ansible_cli(cmd, ansible_env(None), timeout=120)
    return json.loads(out.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def _render(root, replicas=1):
    comp = root / "20-volcano"
    comp.mkdir(parents=True, exist_ok=True)
    docs = {
        "namespace-volcano-system.yaml": {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "volcano-system"},
        },
        "deployment-volcano-system-volcano-scheduler.yaml": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "volcano-scheduler", "namespace": "volcano-system"},
            "spec": {"replicas": replicas},
        },
        "job-volcano-system-init.yaml": {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "init", "namespace": "volcano-system", "annotations": {"helm.sh/hook": "pre-install"}},
        },
    }
    for name, obj in docs.items():
        (comp / name).write_text("# as rendered\n" + yaml.safe_dump(obj))
    return root


def test_lays_out_once_then_only_what_changed_and_prunes(tmp_path):
    src = _render(tmp_path / "rendered")
    checkout = tmp_path / "gitops"
    (checkout / ".git").mkdir(parents=True)
    dest = checkout / "clusters" / "prod" / "gangsched"
    (dest / "99-old" / "main").mkdir(parents=True)
    (dest / "99-old" / "main" / "stale.yaml").write_text("stale")
    (dest / "README.md").write_text("kept")

    check = _run({"src": str(src), "dest": str(dest)}, check=True)
    assert check["changed"] is True and check["removed"] == ["99-old/main/stale.yaml"], check
    assert not (dest / "flux").exists(), "check mode writes nothing"

    done = _run({"src": str(src), "dest": str(dest)})
    assert done["changed"] is True and done["repo_path"] == "./clusters/prod/gangsched", done
    assert done["kustomizations"] == ["gangsched-20-volcano-hooks", "gangsched-20-volcano-main"]
    assert not (dest / "99-old").exists() and (dest / "README.md").read_text() == "kept"
    scheduler = dest / "20-volcano" / "main" / "deployment-volcano-system-volcano-scheduler.yaml"
    assert scheduler.read_text() == (src / "20-volcano" / scheduler.name).read_text(), "files as rendered"
    flux = yaml.safe_load((dest / "flux" / "gangsched-20-volcano-main.yaml").read_text())
    assert flux["spec"]["path"] == "./clusters/prod/gangsched/20-volcano/main"
    assert flux["spec"]["dependsOn"] == [{"name": "gangsched-20-volcano-hooks"}]
    hooks = yaml.safe_load((dest / "20-volcano" / "hooks" / "kustomization.yaml").read_text())
    assert hooks["resources"] == ["namespace-volcano-system.yaml", "job-volcano-system-init.yaml"]

    again = _run({"src": str(src), "dest": str(dest)})
    assert again["changed"] is False and again["written"] == [] and again["removed"] == [], again

    _render(src, replicas=2)
    changed = _run({"src": str(src), "dest": str(dest)})
    assert changed["written"] == ["20-volcano/main/deployment-volcano-system-volcano-scheduler.yaml"], changed
    assert changed["diff"][0]["after_header"].endswith(changed["written"][0])


def test_host_files_are_refused_and_nothing_written(tmp_path):
    src = _render(tmp_path / "rendered")
    (src / "host-files" / "cp-1").mkdir(parents=True)
    dest = tmp_path / "gitops"
    got = _run({"src": str(src), "dest": str(dest), "repo_path": "./gangsched"})
    assert got["failed"] is True and "no GitOps engine applies; run site.yml for them" in got["msg"], got
    assert got["msg"].endswith(f"nothing was written to {dest}") and not dest.exists()


def test_bad_options_are_named(tmp_path):
    src = _render(tmp_path / "rendered")
    dest = tmp_path / "gitops"
    got = _run({"src": str(src), "dest": str(dest), "repo_path": ".", "interval": "ten minutes"})
    assert "interval='ten minutes' is not a Flux duration; set it like 30s, 5m or 1h" in got["msg"], got
    got = _run({"src": str(src), "dest": str(dest)})
    assert "is not in a Git checkout; set repo_path" in got["msg"], got
    got = _run({"src": str(tmp_path / "none"), "dest": str(dest), "repo_path": "."})
    assert "is not a directory; point it at render.yml's gangsched_render_dir" in got["msg"], got
    assert not dest.exists()


def test_a_dest_that_cannot_be_written_is_named(tmp_path):
    src = _render(tmp_path / "rendered")
    (tmp_path / "afile").write_text("not a directory")
    dest = tmp_path / "afile" / "gangsched"
    got = _run({"src": str(src), "dest": str(dest), "repo_path": "./gangsched"})
    assert got["failed"] is True, got
    assert (
        got["msg"] == f"gitops_layout: cannot write to {dest} (Not a directory): check that the directory is writable"
    )
    assert "Traceback" not in got["msg"]

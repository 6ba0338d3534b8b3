"""render_manifests through Ansible on this machine: one file per object, written only when its text
changes, stale files pruned, check mode writing nothing, diff naming each file; bad input failing before
anything is written."""

from __future__ import annotations

import json

import pytest
import yaml
from ansible_run import BIN, ansible_cli, ansible_env


def _run(args: dict, check: bool = False, in_process: bool = True) -> dict:
    cmd = [
        str(BIN / "ansible"),
        "localhost",
        "-m",
        "gangsched.kubeflow.render_manifests",
        "-a",
        json.dumps(args),
        "--diff",
    ]
    cmd += ["--check"] if check else []
    cmd += [] if in_process else ["-e", "gangsched_in_process=false"]
    out = ansible_cli(cmd, ansible_env(None), timeout=120)
    data = json.loads(out.stdout)
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]


def _objects(replicas: int = 1) -> list[dict]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gang"}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "sched", "namespace": "gang"},
            "spec": {"replicas": replicas},
        },
    ]


def test_writes_each_object_once_then_only_what_changed_and_prunes(tmp_path):
    out = tmp_path / "r"
    (tmp_path / "r").mkdir()
    (out / "configmap-gang-old.yaml").write_text("stale")
    (out / "README.md").write_text("kept")

    check = _run({"path": str(out), "objects": _objects()}, check=True)
    assert check["changed"] is True and sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "configmap-gang-old.yaml",
    ]

    first = _run({"path": str(out), "objects": _objects()})
    assert first["changed"] is True
    assert first["files"] == ["namespace-gang.yaml", "deployment-gang-sched.yaml"]
    assert first["removed"] == ["configmap-gang-old.yaml"]
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "deployment-gang-sched.yaml", "namespace-gang.yaml"]
    assert yaml.safe_load((out / "deployment-gang-sched.yaml").read_text()) == _objects()[1]
    assert {d["before_header"] for d in first["diff"]} == {str(out / n) for n in first["written"] + first["removed"]}

    again = _run({"path": str(out), "objects": _objects()})
    assert again["changed"] is False and again["written"] == [] and again["removed"] == []

    changed = _run({"path": str(out), "objects": _objects(replicas=2)})
    assert changed["written"] == ["deployment-gang-sched.yaml"], changed
    assert yaml.safe_load((out / "deployment-gang-sched.yaml").read_text())["spec"]["replicas"] == 2


def test_remove_dirs_takes_what_an_earlier_render_wrote_there_and_nothing_else(tmp_path):
    out = tmp_path / "r"
    (out / "20-volcano" / "host-files" / "cp-1").mkdir(parents=True)
    (out / "20-volcano" / "namespace-volcano-system.yaml").write_text("kind: Namespace")
    (out / "20-volcano" / "host-files" / "cp-1" / "kube-scheduler.yaml").write_text("kind: Pod")
    (out / "30-kubeflow-gang").mkdir()
    (out / "30-kubeflow-gang" / "deployment-kubeflow-training-operator.yaml").write_text("kind: Deployment")
    (out / "30-kubeflow-gang" / "NOTES.md").write_text("the user's")
    (out / "my-overlays").mkdir()
    (out / "my-overlays" / "patch.yaml").write_text("kind: Kustomization")
    (out / "top.yaml").write_text("kept: prune is off")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.yaml").write_text("behind a link")
    (out / "20-koordinator").symlink_to(tmp_path / "elsewhere")
    stale = ["20-volcano", "30-kubeflow-gang", "20-koordinator", "40-x"]
    args = {"path": str(out), "prune": False, "remove_dirs": stale}

    check = _run(args, check=True)
    assert check["changed"] is True and (out / "20-volcano" / "namespace-volcano-system.yaml").exists(), check
    gone = _run(args)
    assert (
        gone["removed"]
        == check["removed"]
        == [
            "20-volcano/host-files/cp-1/kube-scheduler.yaml",
            "20-volcano/namespace-volcano-system.yaml",
            "30-kubeflow-gang/deployment-kubeflow-training-operator.yaml",
        ]
    ), gone
    assert gone["written"] == [] and gone["files"] == []
    assert {d["before"] for d in gone["diff"]} == {"kind: Pod", "kind: Namespace", "kind: Deployment"}
    # the directories that held only rendered files are gone; another file, another directory, a link stay
    assert sorted(p.name for p in out.iterdir()) == ["20-koordinator", "30-kubeflow-gang", "my-overlays", "top.yaml"]
    assert [p.name for p in (out / "30-kubeflow-gang").iterdir()] == ["NOTES.md"]
    assert (tmp_path / "elsewhere" / "x.yaml").exists()
    assert _run(args)["changed"] is False

    bad = _run({**args, "remove_dirs": ["my-overlays", "../r"]})
    assert bad["failed"] is True and "not paths (got '../r')" in bad["msg"] and "nothing was written" in bad["msg"]
    assert (out / "my-overlays" / "patch.yaml").exists()


def test_bad_input_writes_nothing_and_names_the_entry(tmp_path):
    out = tmp_path / "r"
    bad = _run({"path": str(out), "objects": [*_objects(), {"kind": "Service", "metadata": {}}]})
    assert bad["failed"] is True and "objects[2]" in bad["msg"] and "nothing was written" in bad["msg"], bad["msg"]
    assert not out.exists()
    twice = _objects() + [{**_objects()[1], "spec": {"replicas": 3}}]
    clash = _run({"path": str(out), "objects": twice})
    assert clash["failed"] is True and "listed twice, differently" in clash["msg"], clash["msg"]
    assert not out.exists()
    same = _run({"path": str(out), "objects": _objects() + [_objects()[0]]})
    assert same["changed"] is True and same["files"] == ["namespace-gang.yaml", "deployment-gang-sched.yaml"], same
    afile = tmp_path / "file"
    afile.write_text("x")
    notdir = _run({"path": str(afile), "objects": _objects()})
    assert notdir["failed"] is True and "is not a directory" in notdir["msg"]


def test_documents_are_written_as_they_came_objects_as_sorted_yaml_alike_by_both_emitters(tmp_path):
    out = tmp_path / "r"
    long = "a sentence long enough to be folded at 120 columns by one emitter and not the other, " * 3 + "\nend"
    crd = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "gang"}, "data": {"k": long}}
    upstream = (
        "# Source: a chart\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: c, namespace: gang}\ndata:\n  k: |-\n"
    )
    upstream += "".join(f"    {line}\n" for line in long.splitlines())
    flow = '{"kind": "Service", "apiVersion": "v1", "metadata": {"name": "s", "namespace": "gang"}}'
    text = "---\n" + yaml.safe_dump(_objects()[1]) + "---\n# only a comment\n---\n" + upstream + "---\n" + flow
    res = _run({"path": str(out), "objects": [_objects()[0], crd], "documents": [text]})
    assert res["changed"] is True, res
    assert res["files"] == [
        "namespace-gang.yaml",
        "configmap-gang-c.yaml",
        "deployment-gang-sched.yaml",
        "service-gang-s.yaml",
    ]
    # an object: sorted YAML, the same text from the C and the pure-Python emitters
    written = (out / "configmap-gang-c.yaml").read_text()
    for dumper in (yaml.SafeDumper, getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
        assert written == yaml.dump(
            crd, Dumper=dumper, indent=2, sort_keys=True, default_flow_style=False, allow_unicode=True, width=1 << 30
        )
    # a document: its own lines; the same object as an entry of objects is written once, as the object
    assert (out / "deployment-gang-sched.yaml").read_text() == yaml.safe_dump(_objects()[1])
    # a document that does not stand alone as it came (here a flow mapping) is written as an object
    assert yaml.safe_load((out / "service-gang-s.yaml").read_text()) == yaml.safe_load(flow)
    again = _run({"path": str(out), "objects": [_objects()[0], crd], "documents": [text]})
    assert again["changed"] is False, again
    clash = _run({"path": str(out), "documents": [upstream.replace("end", "the end")], "objects": [crd]})
    assert clash["failed"] is True and "listed twice, differently" in clash["msg"], clash["msg"]


def test_a_document_that_is_not_yaml_writes_nothing(tmp_path):
    out = tmp_path / "r"
    bad = _run({"path": str(out), "objects": _objects(), "documents": ["kind: Service\nmetadata: {name: [x\n"]})
    assert bad["failed"] is True and "documents[0] is not YAML (line" in bad["msg"], bad["msg"]
    assert "Traceback" not in bad["msg"] and not out.exists()
    nokind = _run({"path": str(out), "documents": ["metadata: {name: x}\n"]})
    assert nokind["failed"] is True and "kind and metadata.name" in nokind["msg"], nokind["msg"]
    assert not out.exists()


def test_a_path_through_a_file_is_named_not_a_traceback(tmp_path):
    (tmp_path / "afile").write_text("not a directory")
    path = tmp_path / "afile" / "r"
    got = _run({"path": str(path), "objects": _objects()})
    assert got["failed"] is True, got
    assert (
        got["msg"]
        == f"render_manifests: cannot write to {path} (Not a directory): check that the directory is writable"
    )
    assert got["written"] == [] and got["removed"] == []


@pytest.mark.parametrize("in_process", [True, False], ids=["in-process", "module-process"])
def test_the_documents_texts_are_echoed_as_their_sizes(tmp_path, in_process):
    """A CRD's text passed in O(documents) is not echoed back in the result's invocation (it would travel through
    every callback of every run): its size is; the files are written all the same."""
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: gang\ndata:\n"
    text += "  k: " + "v" * 5000 + "\n"
    res = _run({"path": str(tmp_path / "r"), "documents": [text]}, in_process=in_process)
    assert res["changed"] is True and res["files"] == ["configmap-gang-big.yaml"], res
    # (the diff, asked for, shows the file written)
    assert "v" * 5000 not in json.dumps({k: v for k, v in res.items() if k != "diff"})
    if in_process or "invocation" in res:  # a module process reports it up to ansible-core 2.20
        assert res["invocation"]["module_args"]["documents"] == [f"({len(text)} characters, not echoed)"]
    assert (tmp_path / "r" / "configmap-gang-big.yaml").read_text().count("v" * 5000) == 1

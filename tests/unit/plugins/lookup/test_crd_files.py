"""The crd_files lookup: a CRD source's files on the controller, less the excluded names; the file
listing by itself, then the plugin as Ansible loads it (its options from its documentation)."""

from __future__ import annotations

import json

import pytest
from ansible_collections.gangsched.kubeflow.plugins.lookup.crd_files import crd_files
from ansible_run import BIN, ansible_cli, ansible_env


@pytest.fixture
def src(tmp_path):
    for name in ("b.yaml", "a.yml", "kustomization.yaml", "notes.txt", ".hidden.yaml", "scheduling.x.io_jobs.yaml"):
        (tmp_path / name).write_text("kind: CustomResourceDefinition\n")
    (tmp_path / "sub.yaml").mkdir()  # a directory with a YAML name is not a file
    return tmp_path


def _names(paths):
    return [p.rsplit("/", 1)[1] for p in paths]


def test_a_directory_gives_its_yaml_files_sorted(src):
    assert _names(crd_files(str(src), [])) == ["a.yml", "b.yaml", "kustomization.yaml", "scheduling.x.io_jobs.yaml"]


def test_excluded_names_are_shell_globs_on_the_file_name(src):
    assert _names(crd_files(str(src), ["kustom*", "*_jobs.yaml"])) == ["a.yml", "b.yaml"]
    # matched against the name, not the path: the directory's own name does not exclude its files
    assert crd_files(str(src), [f"{src.name}*"]) == crd_files(str(src), [])


def test_a_file_is_itself_and_a_missing_source_is_nothing(src):
    assert crd_files(str(src / "b.yaml"), []) == [str(src / "b.yaml")]
    assert crd_files(str(src / "b.yaml"), ["b.*"]) == []
    assert crd_files(str(src / "nowhere"), []) == []


def _query(expr: str) -> dict:
    cmd = [str(BIN / "ansible"), "localhost", "-m", "ansible.builtin.debug", "-a", f"msg={{{{ {expr} }}}}"]
    out = ansible_cli(cmd, ansible_env(None), timeout=120)
    return json.loads(out.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_through_ansible_with_its_documented_options(src):
    res = _query(f"query('gangsched.kubeflow.crd_files', '{src}', '{src}/a.yml', exclude=['kustom*', 'b.*'])")
    assert _names(res["msg"]) == ["a.yml", "scheduling.x.io_jobs.yaml", "a.yml"], res
    bad = _query("query('gangsched.kubeflow.crd_files', '')")
    assert bad.get("failed") is True and "crd_files: each source is a file or directory path" in bad["msg"], bad

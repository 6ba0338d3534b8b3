"""The chart_version lookup: a local chart's version from its Chart.yaml, a directory's or an archive's top
directory's (not a subchart's); an empty string for anything that is not a local chart; then the plugin as Ansible
loads it."""

from __future__ import annotations

import io
import json
import tarfile

import pytest
from ansible_collections.gangsched.kubeflow.plugins.lookup.chart_version import chart_version
from ansible_run import BIN, ansible_cli, ansible_env


@pytest.fixture
def chart(tmp_path):
    root = tmp_path / "volcano"
    (root / "charts/sub").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: volcano\nversion: 1.10.0\n")
    (root / "charts/sub/Chart.yaml").write_text("apiVersion: v2\nname: sub\nversion: 9.9.9\n")
    return root


def _archive(path, members: dict[str, str]):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_directory_gives_its_own_version(chart):
    assert chart_version(str(chart)) == "1.10.0"


def test_an_archive_gives_its_top_directorys_version_not_a_subcharts(tmp_path):
    tgz = _archive(
        tmp_path / "volcano-1.10.0.tgz",
        {  # the subchart first, as an archive may list it
            "volcano/charts/sub/Chart.yaml": "name: sub\nversion: 9.9.9\n",
            "volcano/Chart.yaml": "name: volcano\nversion: 1.10.0\n",
        },
    )
    assert chart_version(str(tgz)) == "1.10.0"


def test_a_number_like_version_is_a_string(tmp_path):
    (tmp_path / "Chart.yaml").write_text("name: x\nversion: 1.10\n")
    assert chart_version(str(tmp_path)) == "1.1"  # as YAML reads it: Helm itself refuses such a chart


@pytest.mark.parametrize(
    "make",
    [
        lambda p: p / "nowhere",
        lambda p: p,  # a directory without a Chart.yaml
        lambda p: (p / "notes.txt").write_text("not a chart") and p / "notes.txt",
        lambda p: _archive(p / "empty.tgz", {"README.md": "no chart"}),
    ],
    ids=["missing", "directory-without-chart-yaml", "plain-file", "archive-without-chart-yaml"],
)
def test_anything_else_is_an_empty_string(tmp_path, make):
    assert chart_version(str(make(tmp_path))) == ""


def _query(expr: str) -> dict:
    cmd = [str(BIN / "ansible"), "localhost", "-m", "ansible.builtin.debug", "-a", f"msg={{{{ {expr} }}}}"]
    out = ansible_cli(cmd, ansible_env(None), timeout=120)
    return json.loads(out.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_through_ansible(chart, tmp_path):
    res = _query(f"query('gangsched.kubeflow.chart_version', '{chart}', '{tmp_path / 'nowhere'}')")
    assert res["msg"] == ["1.10.0", ""], res
    bad = _query("query('gangsched.kubeflow.chart_version', '')")
    assert bad.get("failed") is True and "chart_version: each term is a chart directory or archive" in bad["msg"], bad

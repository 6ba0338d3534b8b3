"""render_manifests' chart option: the module runs `helm template` itself (the lab's Helm binary, a chart made
here) and writes its objects with the others, the same objects kubernetes.core.helm_template returns for the same
options; a chart Helm refuses, a missing binary and a repository that never answers fail naming the chart, the
option and the fix, within the module's timeout, and write nothing."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
import yaml
from ansible_run import BIN, ansible_cli, ansible_env

from lab import build

CHART = {
    "Chart.yaml": "apiVersion: v2\nname: gangchart\nversion: 0.3.1\nappVersion: '1.0'\n",
    "values.yaml": "replicas: 1\nflag: 'n'\n",
    "templates/cm.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-conf\n"
        "  namespace: {{ .Release.Namespace }}\ndata:\n  replicas: {{ .Values.replicas | quote }}\n"
        "  flag: {{ .Values.flag | quote }}\n  kind: {{ kindOf .Values.flag | quote }}\n"
    ),
    "templates/sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ .Release.Name }}\n",
}


@pytest.fixture(scope="module")
def helm() -> str:
    try:
        return str(build.binary_path("helm"))
    except build.BuildError:
        pytest.fail("helm not built: run python -m lab build", pytrace=False)


@pytest.fixture
def chart(tmp_path) -> Path:
    root = tmp_path / "gangchart"
    for name, text in CHART.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _run(module: str, args: dict, check: bool = False, **extra) -> tuple[dict, float]:
    cmd = [str(BIN / "ansible"), "localhost", "-m", module, "-a", json.dumps(args)]
    cmd += ["--check"] if check else []
    cmd += ["-e", json.dumps(extra)] if extra else []
    t0 = time.monotonic()
    p = ansible_cli(cmd, ansible_env(None), timeout=300)
    took = time.monotonic() - t0
    return json.loads(p.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"], took


def _chart_args(chart, helm, **more) -> dict:
    return {
        "chart_ref": str(chart),
        "release_name": "gang",
        "release_namespace": "gang-ns",
        "binary_path": helm,
        **more,
    }


def _render(out: Path, chart: Path, helm: str, values: dict, in_process: bool = True) -> tuple[dict, dict]:
    args = {
        "path": str(out),
        "objects": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gang-ns"}}],
        "chart": _chart_args(chart, helm, release_values=values),
    }
    res, _ = _run("gangsched.kubeflow.render_manifests", args, gangsched_in_process=in_process)
    assert res.get("failed") is not True, res.get("msg")
    return res, {f.name: yaml.safe_load(f.read_text()) for f in out.iterdir()}


@pytest.mark.parametrize("in_process", [True, False], ids=["worker", "module-process"])
def test_writes_the_charts_objects_with_its_values(tmp_path, chart, helm, in_process):
    # Helm reads values as YAML 1.1, where an unquoted y is true: the values reach it as JSON, y stays a string
    res, written = _render(tmp_path / "out", chart, helm, {"replicas": 3, "flag": "y"}, in_process)
    assert res["files"] == ["namespace-gang-ns.yaml", "serviceaccount-gang.yaml", "configmap-gang-ns-gang-conf.yaml"]
    conf = written["configmap-gang-ns-gang-conf.yaml"]
    assert conf["data"] == {"replicas": "3", "flag": "y", "kind": "string"}
    assert conf["metadata"]["namespace"] == "gang-ns"
    again, _ = _render(tmp_path / "out", chart, helm, {"replicas": 3, "flag": "y"}, in_process)
    assert again["changed"] is False and again["written"] == []


def test_the_same_objects_as_kubernetes_core_helm_template(tmp_path, chart, helm):
    values = {"replicas": 2, "flag": "plain"}
    _, written = _render(tmp_path / "out", chart, helm, values)
    ref, _ = _run("kubernetes.core.helm_template", _chart_args(chart, helm, release_values=values))
    assert ref.get("failed") is not True, ref.get("msg")
    theirs = [d for d in yaml.safe_load_all(ref["stdout"]) if d]
    ours = [v for k, v in written.items() if k != "namespace-gang-ns.yaml"]
    assert len(theirs) == 2 and sorted(theirs, key=str) == sorted(ours, key=str)


def test_check_mode_renders_and_writes_nothing(tmp_path, chart, helm):
    out = tmp_path / "out"
    args = {"path": str(out), "chart": _chart_args(chart, helm)}
    res, _ = _run("gangsched.kubeflow.render_manifests", args, check=True)
    assert res["changed"] is True and res["written"] == ["serviceaccount-gang.yaml", "configmap-gang-ns-gang-conf.yaml"]
    assert not out.exists()


def _fails(tmp_path, args: dict, words: list[str]) -> tuple[dict, float]:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    (out / "kept.yaml").write_text("kept")
    res, took = _run("gangsched.kubeflow.render_manifests", {"path": str(out), **args})
    assert res["failed"] is True
    for w in words:
        assert w in res["msg"], res["msg"]
    assert "Traceback" not in res["msg"] and "nothing was written" in res["msg"]
    assert [f.name for f in out.iterdir()] == ["kept.yaml"]  # not pruned, nothing written
    return res, took


def test_a_chart_helm_refuses_fails_naming_it(tmp_path, chart, helm):
    (chart / "templates/broken.yaml").write_text("{{ .Values.nope.deeper }}\n")
    _fails(tmp_path, {"chart": _chart_args(chart, helm)}, [f"chart {chart}", "helm template failed", "nil pointer"])


def test_a_missing_helm_binary_names_the_option(tmp_path, chart):
    _fails(
        tmp_path,
        {"chart": _chart_args(chart, str(tmp_path / "no-helm"))},
        ["helm binary", "was not found", "chart.binary_path"],
    )


def test_a_repository_that_never_answers_fails_within_the_timeout(tmp_path, helm):
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/charts"
        args = {"timeout": 3, "chart": _chart_args("gangchart", helm, chart_repo_url=url, chart_version="0.3.1")}
        res, took = _fails(tmp_path, args, ["chart gangchart", "took more than 3 s", "raise timeout", url])
    assert took < 3 + 15, took  # the module's timeout, plus ansible's own start


def test_a_timeout_below_one_second_is_refused(tmp_path, chart, helm):
    _fails(tmp_path, {"timeout": 0, "chart": _chart_args(chart, helm)}, ["timeout must be seconds > 0 (got 0)"])


def test_a_local_chart_under_home_is_found(tmp_path, chart, helm):
    # ~ in chart_ref is the home of the user the task runs as, as in kubernetes.core.helm_template (type path)
    out = tmp_path / "out"
    env_home = {"HOME": str(chart.parent)}
    cmd = [str(BIN / "ansible"), "localhost", "-m", "gangsched.kubeflow.render_manifests", "-a"]
    cmd.append(json.dumps({"path": str(out), "chart": _chart_args("~/gangchart", helm)}))
    p = ansible_cli(cmd, ansible_env(None, env_home), timeout=300)
    res = json.loads(p.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert res.get("failed") is not True, res.get("msg")
    assert res["files"] == ["serviceaccount-gang.yaml", "configmap-gang-ns-gang-conf.yaml"]

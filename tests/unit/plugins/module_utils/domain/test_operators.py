"""The operator table, the Kubernetes name check, the record of the original command/args and the
MPIJob clash decision."""

from __future__ import annotations

import json

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _images, _operators
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError


def test_operator_images_come_from_the_table():
    assert _operators.OPERATOR_IMAGES == {
        "training-operator": "training_operator",
        "mpi-operator": "mpi_operator",
        "tf-operator": "tf_operator",
        "tf_operator": "tf_operator",
    }
    for op, spec in _operators.OPERATORS.items():
        assert {"namespace", "name", "container", "flag", "prefer", "boolean", "label", "images", "upstream"} <= set(
            spec
        ), op
        assert spec["prefer"] in ("command", "args"), op


@pytest.mark.parametrize(
    "image,operator",
    [
        ("kubeflow/training-operator:v1-855e096", "training_operator"),
        ("mpioperator/mpi-operator:0.6.0", "mpi_operator"),
        ("gcr.io/kubeflow-images-public/tf_operator:v1", "tf_operator"),
        ("docker.io/kubeflow/tf-operator:v1", "tf_operator"),
        ("ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.0.0", None),
    ],
)
def test_operator_images(image, operator):
    assert _images.image_kind(image, _operators.OPERATOR_IMAGES) == operator


@pytest.mark.parametrize(
    "value,label,ok",
    [
        (None, True, True),
        ("kubeflow", True, True),
        ("a" * 63, True, True),
        ("a" * 64, True, False),
        ("kube.flow", True, False),
        ("kube.flow", False, True),
        ("Kubeflow", False, False),
        ("", False, False),
        ("-x", False, False),
        (7, True, False),
    ],
)
def test_check_name(value, label, ok):
    if ok:
        _operators.check_name("opt", value, "thing", label=label)
    else:
        with pytest.raises(GangError, match=r"opt=.* is not a valid thing name: .*nothing was changed"):
            _operators.check_name("opt", value, "thing", label=label)


def _dep(record=None):
    md = {"name": "d"}
    if record is not None:
        md["annotations"] = {_operators.ORIGINAL_ANNOTATION: record}
    return {"metadata": md}


C = {"name": "c", "command": ["/manager"], "args": None}


def test_record_update_records_the_first_change_only():
    update = _operators.record_update(_dep(), C, restoring=False)
    assert json.loads(update[_operators.ORIGINAL_ANNOTATION]) == {"c": {"command": ["/manager"], "args": None}}
    recorded = _dep(update[_operators.ORIGINAL_ANNOTATION])
    assert _operators.recorded(recorded) == {"c": {"command": ["/manager"], "args": None}}
    assert _operators.record_update(recorded, {**C, "command": ["/other"]}, restoring=False) is None


def test_record_update_drops_the_record_when_put_back():
    both = json.dumps({"c": {"command": ["/m"], "args": None}, "d": {"command": None, "args": ["x"]}})
    assert json.loads(_operators.record_update(_dep(both), C, restoring=True)[_operators.ORIGINAL_ANNOTATION]) == {
        "d": {"command": None, "args": ["x"]}
    }
    one = json.dumps({"c": {"command": ["/m"], "args": None}})
    assert _operators.record_update(_dep(one), C, restoring=True) == {_operators.ORIGINAL_ANNOTATION: None}
    assert _operators.record_update(_dep(), C, restoring=True) is None


@pytest.mark.parametrize("text", ["", "not json", "[1]", None])
def test_unreadable_record_is_no_record(text):
    assert _operators.recorded(_dep(text)) == {}


V2 = {"spec": {"versions": [{"name": "v2beta1"}]}}
V1 = {"spec": {"versions": [{"name": "v1"}]}}


@pytest.mark.parametrize(
    "operator,argv,crd,serves,clash",
    [
        ("training_operator", [], V2, True, True),
        ("training_operator", [], V1, True, False),
        ("training_operator", [], None, True, False),
        ("training_operator", ["--enable-scheme=tfjob,pytorchjob"], V2, False, False),
        ("training_operator", ["--enable-scheme=tfjob", "--enable-scheme=MPIJob"], V2, True, True),
        ("mpi_operator", [], V2, False, False),
    ],
)
def test_mpijob_clash(operator, argv, crd, serves, clash):
    container = {"command": ["/manager", *argv]}
    assert _operators.serves_mpijob(operator, container) is serves
    msg = _operators.mpijob_clash(operator, container, crd)
    assert (msg is not None) is clash
    if clash:
        assert "Add --enable-scheme for each job kind except mpijob" in msg


def test_operator_gang_refuses_koordinator_before_any_call():
    """gang_scheduler=koordinator would make PodGroups koord-scheduler ignores; no client is touched."""
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _operator_gang

    with pytest.raises(GangError) as e:
        _operator_gang.run(None, {"operator": "training_operator", "gang_scheduler": "koordinator"}, False, print)
    assert "koord-scheduler ignores" in e.value.msg and "gang_scheduler=none" in e.value.msg

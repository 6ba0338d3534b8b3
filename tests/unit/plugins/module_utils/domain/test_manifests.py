"""_manifests.documents: each document of a YAML text kept as it came (its own lines) where it stands alone, with
the C and the pure-Python loaders alike; parsed and written as YAML where it does not; files() naming each
object's file and refusing two different objects for one file."""

from __future__ import annotations

import pytest
import yaml
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _manifests

LOADERS = [yaml.SafeLoader] + ([yaml.CSafeLoader] if hasattr(yaml, "CSafeLoader") else [])


@pytest.fixture(params=LOADERS, ids=lambda loader: loader.__name__)
def loader(request, monkeypatch):
    monkeypatch.setattr(_manifests, "_loader", lambda: request.param)
    return request.param


def _dump(obj) -> str:
    return yaml.safe_dump(obj, sort_keys=True, default_flow_style=False)


CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: tfjobs.kubeflow.org
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        description: |-
          Déjà vu, 雪, and 🚀: characters of 2, 3 and 4 bytes before the next document.
          A second line.
        type: object
"""

HELM = f"""\
---
# Source: chart/templates/sa.yaml
kind: ServiceAccount
apiVersion: v1
metadata:
  name: sched
  namespace: gang
---
# Source: chart/crds/tf.yaml
{CRD}---
# Source: chart/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: "cm"
  namespace: gang
data:
  key: value   # a comment kept
"""


def test_each_document_is_its_own_lines_and_parses_to_the_same_object(loader):
    docs = _manifests.documents(HELM)
    assert all(isinstance(d, _manifests.Verbatim) for d in docs)
    assert docs[1].text == CRD  # after characters of several bytes, still the exact lines
    assert docs[0].text.startswith("kind: ServiceAccount\n") and "# Source" not in docs[0].text
    assert docs[2].text.endswith("key: value   # a comment kept\n")
    assert [yaml.safe_load(d.text) for d in docs] == [d for d in yaml.safe_load_all(HELM) if d]
    assert [d.value() for d in docs] == [d for d in yaml.safe_load_all(HELM) if d]
    assert docs[2].head == {"kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "gang"}}
    assert docs[1].head == {
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "tfjobs.kubeflow.org", "namespace": None},
    }


def test_the_last_document_without_a_final_newline_gets_one(loader):
    (doc,) = _manifests.documents("kind: Namespace\nmetadata:\n  name: gang")
    assert doc.text == "kind: Namespace\nmetadata:\n  name: gang\n"


# Helm 4's `helm template` keeps the blank lines its templates end with (Helm 3 trimmed them): the same chart's files
# are the same with either
HELM4 = HELM.replace("  namespace: gang\n---", "  namespace: gang\n\n  \n---").replace(
    "# a comment kept\n", "# a comment kept\n\n\n"
)


def test_blank_lines_that_end_a_document_are_left_out(loader):
    assert HELM4 != HELM
    assert [d.text for d in _manifests.documents(HELM4)] == [d.text for d in _manifests.documents(HELM)]
    (doc,) = _manifests.documents("kind: Namespace\nmetadata:\n  name: gang   \n\n\n")
    assert doc.text == "kind: Namespace\nmetadata:\n  name: gang\n"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        pytest.param("data:\n  a: |+\n    kept\n\n\n", True, id="literal, keep"),
        pytest.param("data:\n  a: >+2 # keep\n    kept\n\n", True, id="folded, keep, indent and comment"),
        pytest.param("data:\n  a: |\n    clipped\n\n\n", False, id="literal, clip"),
        pytest.param("data:\n  a: |-\n    stripped\n\n", False, id="literal, strip"),
        pytest.param("data:\n  a: |+\n    kept\n  b: after\n\n", False, id="keep, not last"),
    ],
)
def test_a_last_block_scalar_that_keeps_its_line_breaks_keeps_them(loader, text, kept):
    text = "kind: ConfigMap\nmetadata:\n  name: c\n" + text
    doc, _ = _manifests.documents(text + "---\nkind: Namespace\nmetadata:\n  name: n\n")
    assert doc.text == (text if kept else text.rstrip("\n") + "\n")
    assert yaml.safe_load(doc.text) == yaml.safe_load(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"kind": "Namespace", "metadata": {"name": "gang"}}', id="flow mapping (JSON)"),
        pytest.param("--- !!map\nkind: Namespace\nmetadata: {name: gang}\n", id="tag on the --- line"),
        pytest.param("---\n  kind: Namespace\n  metadata: {name: gang}\n", id="indented root"),
        pytest.param("%YAML 1.1\n---\nkind: Namespace\nmetadata: {name: gang}\n", id="directive"),
        pytest.param("kind: Namespace\nmetadata:\n  name: [gang]\n", id="name not a plain value"),
        pytest.param("kind: Namespace\nspec: {}\n", id="no metadata"),
    ],
)
def test_a_document_that_does_not_stand_alone_is_parsed(loader, text):
    docs = _manifests.documents(text)
    assert docs == [d for d in yaml.safe_load_all(text) if d is not None]
    assert not any(isinstance(d, _manifests.Verbatim) for d in docs)


@pytest.mark.parametrize(
    "text",
    [
        "kind: ConfigMap\nmetadata:\n  name: c\ndata: &d {a: b}\nmore: *d\n",
        "kind: ConfigMap\nmetadata:\n  name: &n c\n  labels: {a: *n}\n",
    ],
    ids=["in the body", "on the name"],
)
def test_anchors_and_aliases_stay_verbatim_and_resolve_alike(loader, text):
    (doc,) = _manifests.documents(text)
    assert isinstance(doc, _manifests.Verbatim) and doc.text == text and doc.value() == yaml.safe_load(text)
    assert doc.head["metadata"]["name"] == "c"


def test_empty_documents_and_comments_are_skipped(loader):
    assert _manifests.documents("---\n# only a comment\n---\n\n---\n") == []
    assert _manifests.documents("") == []


def test_not_yaml_names_line_and_column(loader):
    with pytest.raises(ValueError, match=r"is not YAML \(line 3, column 1\)"):
        _manifests.documents("kind: Service\nmetadata: {name: [x\n")


def test_a_byte_order_mark_is_left_out(loader):
    (doc,) = _manifests.documents("\ufeffkind: Namespace\nmetadata:\n  name: gang\n")
    assert doc.text == "kind: Namespace\nmetadata:\n  name: gang\n"


def test_files_writes_verbatim_texts_and_dumps_objects(loader):
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gang"}}
    out = _manifests.files([ns, *_manifests.documents(HELM)], _dump)
    assert list(out) == [
        "namespace-gang.yaml",
        "serviceaccount-gang-sched.yaml",
        "customresourcedefinition-tfjobs.kubeflow.org.yaml",
        "configmap-gang-cm.yaml",
    ]
    assert out["namespace-gang.yaml"] == _dump(ns) and out["customresourcedefinition-tfjobs.kubeflow.org.yaml"] == CRD


def test_the_same_object_as_object_and_as_document_is_written_once(loader):
    (doc,) = _manifests.documents(CRD)
    out = _manifests.files([yaml.safe_load(CRD), doc], _dump)
    assert out == {"customresourcedefinition-tfjobs.kubeflow.org.yaml": _dump(yaml.safe_load(CRD))}


def test_two_different_objects_for_one_file_are_refused(loader):
    (doc,) = _manifests.documents(CRD)
    other = yaml.safe_load(CRD)
    other["spec"]["versions"][0]["name"] = "v2"
    with pytest.raises(
        ValueError, match=r"objects\[1\] \(CustomResourceDefinition tfjobs.kubeflow.org\) is listed twice"
    ):
        _manifests.files([other, doc], _dump)
    (again,) = _manifests.documents(CRD.replace("A second line.", "Another second line."))
    with pytest.raises(ValueError, match="listed twice, differently"):
        _manifests.files([doc, again], _dump)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("kind: A\nmetadata: {name: a}\nspec: *nowhere\n", "found undefined alias 'nowhere'"),
        ("kind: A\nmetadata: {name: &x a}\nspec: &x {}\n", "second occurrence"),
        ("kind: A\nmetadata: {name: a}\nspec: !mine {}\n", "could not determine a constructor for the tag '!mine'"),
    ],
    ids=["undefined alias", "duplicate anchor", "unknown tag"],
)
def test_what_the_parser_alone_lets_through_is_refused_as_before(loader, text, problem):
    with pytest.raises(ValueError, match="is not YAML") as e:
        _manifests.documents(text)
    assert problem in str(e.value)
    with pytest.raises(ValueError) as before:
        _manifests.load_all(text)
    assert str(e.value).split(":")[0] == str(before.value).split(":")[0]


def test_a_merge_key_in_the_head_is_parsed_whole(loader):
    text = "base: &b {kind: Namespace}\n<<: *b\nmetadata: {name: gang}\n"
    assert _manifests.documents(text) == [yaml.safe_load(text)]


def test_anchors_are_per_document(loader):
    text = "kind: A\nmetadata: {name: &x a}\n---\nkind: A\nmetadata: {name: &x b}\n"
    assert [d.head["metadata"]["name"] for d in _manifests.documents(text)] == ["a", "b"]


class _NoDeepcopy(dict):
    """A dict that refuses copy.deepcopy, as a stand-in for a container whose deep copy is costly (ansible-core's lazy
    containers copy their templar and variables with it)."""

    def __deepcopy__(self, memo):
        raise AssertionError("copy_plain must not deep-copy the container")


def test_copy_plain_is_a_deep_copy_of_plain_data_without_deepcopy():
    inner = _NoDeepcopy(image="x", args=("--a", "--b"))
    doc = _NoDeepcopy(kind="Pod", spec=_NoDeepcopy(containers=[inner]))
    out = _manifests.copy_plain(doc)
    assert out == {"kind": "Pod", "spec": {"containers": [{"image": "x", "args": ["--a", "--b"]}]}}
    assert type(out) is dict and type(out["spec"]["containers"][0]) is dict
    out["spec"]["containers"][0]["image"] = "y"
    out["spec"]["containers"].append({})
    assert inner["image"] == "x" and len(doc["spec"]["containers"]) == 1
    assert _manifests.copy_plain("text") == "text" and _manifests.copy_plain(None) is None


def test_the_code_filters_call_copies_with_copy_plain_not_deepcopy():
    from pathlib import Path

    root = Path(_manifests.__file__).resolve().parents[1]
    found = [
        str(p.relative_to(root))
        for sub in ("domain", "paths")
        for p in sorted((root / sub).glob("*.py"))
        if "deepcopy(" in p.read_text()
    ]
    assert found == [], f"use _manifests.copy_plain: a filter's lazy containers deep-copy every variable ({found})"

"""The crds module's domain (_crd_stamps: stamps, which files to send, what a CRD file may hold) and its runner
(_crds) against a recording fake API: nothing sent for a file whose stamp is on the cluster, every CRD sent
as a dry run before any is applied, only the dry run in check mode, a wait that names what is not Established."""

from __future__ import annotations

import pytest
from ansible.plugins.filter.core import get_hash
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _crd_stamps
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import ApiError, GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.runners import _crds

from tests.unit.plugins.module_utils.runners.test_component_ready_runner import Clock

PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crd_text(name: str, extra: str = "") -> str:
    plural, group = name.split(".", 1)
    return (
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        f"metadata:\n  name: {name}\nspec:\n  group: {group}\n  names: {{plural: {plural}, kind: W}}\n"
        f"  scope: Namespaced\n  versions: []\n{extra}"
    )


def live(name: str, owner: str, sha: str, established: bool = True) -> dict:
    cond = [{"type": "Established", "status": "True" if established else "False"}]
    return {
        "metadata": {"name": name, "labels": {_crd_stamps.OWNER_LABEL: owner}, "annotations": {_crd_stamps.STAMP: sha}},
        "status": {"conditions": cond},
    }


class Api:
    """A recording fake: the owner's CRDs for the list; PATCHes recorded (and refused for names in ``refuse``);
    a CRD read is Established after ``late`` reads of it (never, for names not in ``late``, once applied)."""

    def __init__(self, crds=(), refuse=(), late=None):
        self.crds, self.refuse, self.late, self.calls = list(crds), set(refuse), dict(late or {}), []

    def list(self, path, what="", **query):
        self.calls.append(("LIST", path, query.get("labelSelector")))
        return self.crds

    def apply(self, path, obj, field_manager, what="", dry_run=False):
        name = path.rsplit("/", 1)[1]
        self.calls.append(("PATCH", name, "All" if dry_run else None, field_manager, obj))
        if name in self.refuse:
            raise ApiError(f"CustomResourceDefinition {name} is invalid: spec.versions: Required value", status=422)
        return {}

    def get_or_none(self, path, what=""):
        name = path.rsplit("/", 1)[1]
        self.calls.append(("GET", name))
        reads = sum(1 for c in self.calls if c == ("GET", name))
        ok = name in self.late and reads > self.late[name]
        return live(name, "o", "x", established=ok)

    def writes(self):
        return [(c[1], c[2]) for c in self.calls if c[0] == "PATCH"]


def run(api, files, check_mode=False, force=False, wait_timeout=30, clock=None, conversion=None):
    clock = clock or Clock()
    params = {"owner": "o", "files": files, "force": force, "wait_timeout": wait_timeout, "conversion": conversion}
    return _crds.run(api, params, check_mode, lambda m: None, clock=clock, sleep=clock.sleep)


def test_the_stamp_is_the_hash_filters_of_the_same_text():
    # stamps written before this module (by the hash filter) still match: a converged cluster is not re-applied
    text = crd_text("widgets.x.io", "# naïve ✓\n")
    assert _crd_stamps.stamp(text) == get_hash(text, "sha256")


def test_a_converged_owner_gets_one_list_and_nothing_sent():
    a, b = crd_text("as.x.io"), crd_text("bs.x.io")
    api = Api([live("as.x.io", "o", _crd_stamps.stamp(a)), live("bs.x.io", "o", _crd_stamps.stamp(b))])
    res = run(api, {"f/a.yaml": a, "f/b.yaml": b})
    assert api.calls == [("LIST", PATH, f"{_crd_stamps.OWNER_LABEL}=o")]
    assert res["changed"] is False and res["applied"] == [] and res["files_unchanged"] == ["f/a.yaml", "f/b.yaml"]


def test_a_changed_file_is_sent_as_a_dry_run_then_applied_stamped_then_waited_for():
    a, b = crd_text("as.x.io"), crd_text("bs.x.io", "# changed\n")
    api = Api([live("as.x.io", "o", _crd_stamps.stamp(a)), live("bs.x.io", "o", "old")], late={"bs.x.io": 1})
    res = run(api, {"f/a.yaml": a, "f/b.yaml": b})
    assert api.writes() == [("bs.x.io", "All"), ("bs.x.io", None)]
    sent = [c for c in api.calls if c[0] == "PATCH"][1]
    assert sent[3] == "gangsched.kubeflow"
    meta = sent[4]["metadata"]
    assert meta["labels"][_crd_stamps.OWNER_LABEL] == "o" and meta["annotations"][
        _crd_stamps.STAMP
    ] == _crd_stamps.stamp(b)
    assert res["changed"] is True and res["applied"] == ["bs.x.io"] and res["files_applied"] == ["f/b.yaml"]
    assert res["_diff"] == {"before": "bs.x.io: old\n", "after": f"bs.x.io: {_crd_stamps.stamp(b)}\n"}
    assert ("GET", "bs.x.io") in api.calls and "_failed" not in res


CONVERSION = {
    "strategy": "Webhook",
    "webhook": {
        "clientConfig": {"service": {"namespace": "q", "name": "q-webhook", "path": "/convert"}},
        "conversionReviewVersions": ["v1"],
    },
}


def test_a_conversion_is_set_on_its_crd_only_and_stamped_with_the_file():
    a, b = crd_text("as.x.io"), crd_text("bs.x.io")
    api = Api(late={"as.x.io": 0, "bs.x.io": 0})
    res = run(api, {"f/a.yaml": a, "f/b.yaml": b}, conversion={"as.x.io": CONVERSION, "zs.x.io": {}})
    sent = {c[1]: c[4] for c in api.calls if c[0] == "PATCH" and c[2] is None}
    assert sent["as.x.io"]["spec"]["conversion"] == CONVERSION and "conversion" not in sent["bs.x.io"]["spec"]
    # b's stamp is its file's; a's covers the conversion too, so it differs from the bare file's
    assert sent["bs.x.io"]["metadata"]["annotations"][_crd_stamps.STAMP] == _crd_stamps.stamp(b)
    stamp_a = sent["as.x.io"]["metadata"]["annotations"][_crd_stamps.STAMP]
    assert stamp_a != _crd_stamps.stamp(a) and res["changed"] is True
    # converged with that conversion: nothing sent; the conversion changed: applied again
    api = Api([live("as.x.io", "o", stamp_a), live("bs.x.io", "o", _crd_stamps.stamp(b))])
    assert run(api, {"f/a.yaml": a, "f/b.yaml": b}, conversion={"as.x.io": CONVERSION})["applied"] == []
    moved = {**CONVERSION, "webhook": {**CONVERSION["webhook"], "conversionReviewVersions": ["v1", "v1beta1"]}}
    api = Api([live("as.x.io", "o", stamp_a), live("bs.x.io", "o", _crd_stamps.stamp(b))], late={"as.x.io": 0})
    assert run(api, {"f/a.yaml": a, "f/b.yaml": b}, conversion={"as.x.io": moved})["applied"] == ["as.x.io"]


def test_check_mode_sends_only_the_dry_run():
    res = run(Api(), {"f/a.yaml": crd_text("as.x.io")}, check_mode=True)
    assert res["changed"] is True and res["applied"] == ["as.x.io"]


def test_check_mode_writes_nothing():
    api = Api()
    run(api, {"f/a.yaml": crd_text("as.x.io")}, check_mode=True)
    assert api.writes() == [("as.x.io", "All")]


def test_force_sends_every_file():
    a = crd_text("as.x.io")
    api = Api([live("as.x.io", "o", _crd_stamps.stamp(a))], late={"as.x.io": 0})
    res = run(api, {"f/a.yaml": a}, force=True)
    assert res["applied"] == ["as.x.io"] and api.writes() == [("as.x.io", "All"), ("as.x.io", None)]


def test_a_refused_crd_changes_nothing_even_after_others_passed_their_dry_run():
    api = Api(refuse={"bs.x.io"})
    with pytest.raises(ApiError, match="bs.x.io is invalid"):
        run(api, {"f/a.yaml": crd_text("as.x.io"), "f/b.yaml": crd_text("bs.x.io")})
    assert api.writes() == [("as.x.io", "All"), ("bs.x.io", "All")]


def test_not_established_within_the_timeout_fails_naming_it():
    clock = Clock()
    res = run(Api(late={}), {"f/a.yaml": crd_text("as.x.io")}, wait_timeout=5, clock=clock)
    assert "CustomResourceDefinition as.x.io" in res["_failed"] and "wait_timeout=5s" in res["_failed"]
    assert res["applied"] == ["as.x.io"] and 5 <= clock.t <= 6


def test_wait_timeout_zero_does_not_read_again():
    """No read after the apply: only the one before it, of a CRD not among the owner's (its stored versions)."""
    api = Api()
    run(api, {"f/a.yaml": crd_text("as.x.io")}, wait_timeout=0)
    last_write = max(i for i, c in enumerate(api.calls) if c[0] == "PATCH")
    assert not [c for c in api.calls[last_write:] if c[0] == "GET"]
    assert [c for c in api.calls if c[0] == "GET"] == [("GET", "as.x.io")]


def test_a_crd_dropping_a_stored_version_is_refused_before_anything_is_sent():
    old = live("as.x.io", "o", "old")
    old["status"]["storedVersions"] = ["v0", "v1"]
    api = Api([old])
    res = run(api, {"f/a.yaml": crd_text("as.x.io")})
    assert "no longer lists version(s) v0" in res["_failed"] and res["changed"] is False, res
    assert api.writes() == []


@pytest.mark.parametrize(
    "text,words",
    [
        ("kind: [unclosed", ["f/bad.yaml is not YAML (line 2"]),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", ["f/bad.yaml: document 1 is ConfigMap", "excludes"]),
        ("# nothing\n", ["f/bad.yaml holds no CustomResourceDefinition"]),
        (crd_text("as.x.io").replace("  name: as.x.io\n", "  labels: {}\n"), ["has no metadata.name"]),
    ],
    ids=["not-yaml", "not-a-crd", "empty", "no-name"],
)
def test_a_bad_file_fails_naming_it_before_anything_is_sent(text, words):
    api = Api()
    with pytest.raises(GangError) as e:
        run(api, {"f/a.yaml": crd_text("as.x.io"), "f/bad.yaml": text})
    for w in words:
        assert w in e.value.msg
    assert api.writes() == []


@pytest.mark.parametrize("version,kind", [("24.2.0", bytes), ("25.3.0", dict), ("33.1.0", dict), ("37.0.2", dict)])
def test_the_apply_body_is_the_one_each_client_version_sends_whole(monkeypatch, version, kind):
    # before 25 the client's REST layer refuses a dict for an apply patch and passes bytes through; from 25 it
    # JSON-encodes whatever it is handed (so bytes or a text would arrive as something else than the object)
    import kubernetes
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _client

    monkeypatch.setattr(kubernetes, "__version__", version)
    sent = {}
    c = _client.Client.__new__(_client.Client)
    c.request = lambda method, path, **kw: sent.update(kw, method=method, path=path) or {}
    c.apply("/apis/x/v1/ws/a", {"metadata": {"name": "a"}}, "gangsched.kubeflow", what="W a", dry_run=True)
    assert isinstance(sent["body"], kind)
    assert sent["method"] == "PATCH" and sent["content_type"] == "application/apply-patch+yaml"
    assert sent["query"] == {"fieldManager": "gangsched.kubeflow", "force": "true", "dryRun": "All"}
    if kind is bytes:
        assert sent["body"] == b'{"metadata": {"name": "a"}}'


def test_a_crd_that_drops_a_stored_version_is_named_with_the_migration():
    from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _crd_stamps as S

    live = {"status": {"storedVersions": ["v1alpha1", "v1beta1"]}}
    new = {
        "metadata": {"name": "podgroups.example.test"},
        "spec": {"names": {"plural": "podgroups"}, "versions": [{"name": "v1beta1", "storage": True}]},
    }
    assert S.dropped_versions(live, new) == ["v1alpha1"]
    assert S.dropped_versions(None, new) == [] and S.dropped_versions({"status": {}}, new) == []
    assert S.dropped_versions({"status": {"storedVersions": ["v1beta1"]}}, new) == []
    msg = S.dropped_problem(live, new, ["v1alpha1"])
    assert msg.startswith(
        "CustomResourceDefinition podgroups.example.test: the new file no longer lists version(s) v1alpha1"
    )
    assert "stored as v1beta1" in msg and "status.storedVersions" in msg and "no CRD was applied" in msg

# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what render.yml wrote, laid out for a GitOps engine — each component split into
stages applied in order (the chart's pre-install hooks, the component, its post-install hooks, the objects its own
admission webhooks admit), each stage a Kustomize directory, and one Flux Kustomization per stage, each depending
on the one before and waiting for its objects to be ready. Pure: no I/O. Not a public API."""

from __future__ import annotations

import re

# a stage: (name, what it holds), in the order they are applied within a component
STAGES = (
    ("hooks", "the chart's pre-install hooks (Helm runs them before the release's objects)"),
    ("main", "the component's objects"),
    ("post", "the chart's post-install hooks"),
    ("admitted", "objects the component's own admission webhooks admit (applied once their server is ready)"),
)
STAGE_NAMES = tuple(s for s, _why in STAGES)

# Helm hooks with no meaning for a GitOps engine, and why they are left out
SKIPPED_HOOKS = {
    "test": "a Helm test hook (helm test runs it on demand)",
    "test-success": "a Helm test hook (helm test runs it on demand)",
    "pre-delete": "a Helm delete hook (a GitOps engine runs nothing on delete)",
    "post-delete": "a Helm delete hook (a GitOps engine runs nothing on delete)",
    "pre-rollback": "a Helm rollback hook",
    "post-rollback": "a Helm rollback hook",
}
HOOK = "helm.sh/hook"
# on a hook object (a Job is immutable): Flux deletes and creates it again when its rendered spec changes, as Helm
# runs a pre-upgrade hook again
FORCE = "kustomize.toolkit.fluxcd.io/force"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gangsched.kubeflow"}
LAYOUT_LABEL = "gangsched.kubeflow/layout"
COMPONENT = re.compile(r"^[0-9]{2}-[a-z0-9-]+$")
HOST_FILES = "host-files"


def _annotations(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("annotations") or {}


def hooks(obj: dict) -> set[str]:
    """The Helm hooks an object is (``helm.sh/hook: pre-install,pre-upgrade``), empty for a plain object."""
    return {h.strip() for h in str(_annotations(obj).get(HOOK) or "").split(",") if h.strip()}


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def _plural(kind: str) -> str:
    low = kind.lower()
    if low.endswith("y") and low[-2:-1] not in "aeiou":
        return low[:-1] + "ies"
    if low.endswith(("s", "x", "ch", "sh")):
        return low + "es"
    return low + "s"


def resources(objects: list[dict]) -> dict[tuple[str, str], str]:
    """(group, kind) -> plural of every kind a CustomResourceDefinition among ``objects`` defines."""
    out = {}
    for o in objects:
        if o.get("kind") == "CustomResourceDefinition":
            spec = o.get("spec") or {}
            names = spec.get("names") or {}
            if spec.get("group") and names.get("kind") and names.get("plural"):
                out[(spec["group"], names["kind"])] = names["plural"]
    return out


def webhook_rules(objects: list[dict]) -> list[tuple[str, list, list]]:
    """(configuration, apiGroups, resources) of every rule of every admission webhook among ``objects``."""
    out = []
    for o in objects:
        if o.get("kind") in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            name = f"{o['kind']} {(o.get('metadata') or {}).get('name')}"
            for hook in o.get("webhooks") or []:
                for rule in hook.get("rules") or []:
                    out.append((name, rule.get("apiGroups") or [], rule.get("resources") or []))
    return out


def admitted_by(obj: dict, rules: list, plurals: dict) -> str | None:
    """The webhook configuration among ``rules`` that admits ``obj`` when it is created, or None. Only rules that
    name the group and the resource count: a wildcard rule would hold back the webhook's own server too."""
    group = _group(str(obj.get("apiVersion") or ""))
    kind = str(obj.get("kind") or "")
    plural = plurals.get((group, kind)) or _plural(kind)
    for name, groups, res in rules:
        if group in groups and (plural in res or f"{plural}/*" in res):
            return name
    return None


def stage_of(obj: dict, rules: list, plurals: dict) -> tuple[str | None, str]:
    """(the stage ``obj`` goes to, or None when it is left out; why)."""
    hooked = hooks(obj)
    if hooked:
        if hooked & {"pre-install", "pre-upgrade"}:
            return "hooks", "a Helm pre-install hook"
        if hooked & {"post-install", "post-upgrade"}:
            return "post", "a Helm post-install hook"
        left = sorted(hooked)[0]
        return None, SKIPPED_HOOKS.get(left, f"a Helm {left} hook")
    by = admitted_by(obj, rules, plurals)
    if by:
        return "admitted", f"admitted by {by}"
    return "main", "the component's objects"


def kustomize_dir(files: list[str], force_hooks: bool = False) -> str:
    """A stage directory's ``kustomization.yaml``: its files; on hook objects, Flux's force annotation."""
    lines = ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization", "resources:"]
    lines += [f"  - {f}" for f in files]
    if force_hooks:
        lines += [
            "patches:",
            "  - target:",
            f"      annotationSelector: {HOOK}",
            "    patch: |-",
            "      - op: add",
            f"        path: /metadata/annotations/{FORCE.replace('/', '~1')}",
            "        value: enabled",
        ]
    return "\n".join(lines) + "\n"


def flux_kustomization(name: str, path: str, after: str | None, opts: dict) -> dict:
    """A Flux Kustomization applying ``path`` of the source, once ``after`` (the stage before) is ready, waiting for
    every object it applies to be ready."""
    spec = {
        "interval": opts["interval"],
        "retryInterval": opts["retry_interval"],
        "timeout": opts["stage_timeout"],
        "path": path,
        "prune": True,
        "wait": True,
        "sourceRef": {"kind": opts["source_kind"], "name": opts["source_name"]},
    }
    if opts.get("source_namespace"):
        spec["sourceRef"]["namespace"] = opts["source_namespace"]
    if after:
        spec["dependsOn"] = [{"name": after}]
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {
            "name": name,
            "namespace": opts["namespace"],
            "labels": {**MANAGED_BY, LAYOUT_LABEL: opts["prefix"]},
        },
        "spec": spec,
    }


def _repo_join(repo_path: str, *parts: str) -> str:
    base = repo_path.strip().strip("/")
    base = base[2:] if base.startswith("./") else ("" if base == "." else base)
    return "./" + "/".join(p for p in (base, *parts) if p)


def plan(components: dict[str, dict[str, dict]], opts: dict) -> dict:
    """The layout of ``components`` (component directory -> file name -> its object, as render.yml wrote them):
    ``stages`` in the order they apply (name, component, stage, path in the repository, files, depends_on),
    ``skipped`` (file, why) and ``kustomizations`` (stage name -> Flux Kustomization). ValueError naming what
    cannot be laid out."""
    for comp in components:
        if comp == HOST_FILES:
            raise ValueError(
                f"{HOST_FILES}/ holds files for the control-plane hosts (static pod manifests), which no GitOps engine "
                "applies; run site.yml for them (or choose a path without host changes: scheduler_plugins_mode: "
                "second, a gang scheduler other than native), then lay out the rest"
            )
        if not COMPONENT.match(comp):
            raise ValueError(
                f"{comp}/ is not a component directory of render.yml (NN-name); point src at render.yml's output"
            )
    every = [o for files in components.values() for o in files.values()]
    plurals = resources(every)
    stages, skipped, kustomizations = [], [], {}
    after = None
    for comp in sorted(components):
        files = components[comp]
        rules = webhook_rules(list(files.values()))
        placed: dict[str, list[str]] = {s: [] for s in STAGE_NAMES}
        for fname in sorted(files):
            stage, why = stage_of(files[fname], rules, plurals)
            if stage is None:
                skipped.append({"file": f"{comp}/{fname}", "why": why})
            else:
                placed[stage].append(fname)
        used = [s for s in STAGE_NAMES if placed[s]]
        # the component's namespaces go with its first stage: a hook runs in the namespace Helm made before it
        if used and used[0] != "main":
            spaces = [f for f in placed["main"] if files[f].get("kind") == "Namespace"]
            placed["main"] = [f for f in placed["main"] if f not in spaces]
            placed[used[0]] = spaces + placed[used[0]]
            used = [s for s in STAGE_NAMES if placed[s]]
        for stage in used:
            name = f"{opts['prefix']}-{comp}-{stage}"
            if len(name) > 63:
                raise ValueError(f"the Flux Kustomization name {name} is over 63 characters; set a shorter prefix")
            path = _repo_join(opts["repo_path"], comp, stage)
            stages.append(
                {
                    "name": name,
                    "component": comp,
                    "stage": stage,
                    "path": path,
                    "files": placed[stage],
                    "depends_on": after,
                }
            )
            kustomizations[name] = flux_kustomization(name, path, after, opts)
            after = name
    return {"stages": stages, "skipped": skipped, "kustomizations": kustomizations}


def tree(layout: dict, texts: dict[str, dict[str, str]], dump) -> dict[str, str]:
    """Relative path -> text of every file of the layout: the stages' object files as render.yml wrote them
    (``texts``: component -> file -> text), each stage's ``kustomization.yaml``, ``flux/`` with one Kustomization
    per stage and its own ``kustomization.yaml``, and a top ``kustomization.yaml`` naming ``flux``: a Flux
    Kustomization (or a directory of the cluster's own Flux layout) pointed at the tree applies the stages."""
    out = {}
    for st in layout["stages"]:
        comp, stage = st["component"], st["stage"]
        for f in st["files"]:
            out[f"{comp}/{stage}/{f}"] = texts[comp][f]
        out[f"{comp}/{stage}/kustomization.yaml"] = kustomize_dir(st["files"], force_hooks=stage in ("hooks", "post"))
    names = [st["name"] for st in layout["stages"]]
    for name in names:
        out[f"flux/{name}.yaml"] = dump(layout["kustomizations"][name])
    out["flux/kustomization.yaml"] = kustomize_dir([f"{n}.yaml" for n in names])
    out["kustomization.yaml"] = kustomize_dir(["flux"])
    return out

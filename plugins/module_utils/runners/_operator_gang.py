# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: what operator_gang does — decide the flag, preflight, patch (or
dry-run it), wait, and report. Returns data; raises GangError. Not a public API."""

from __future__ import annotations

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import (
    _flags,
    _images,
    _operators,
    _podgroups,
)
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import Conflict, GangError
from ansible_collections.gangsched.kubeflow.plugins.module_utils.k8s import _service, _together, _waiter
from ansible_collections.gangsched.kubeflow.plugins.module_utils.paths import _registry

CONFLICT_RETRIES = _service.CONFLICT_RETRIES


def _surgery(op_spec: dict, container: dict, value: str | None, dep: dict, what: str, gang: str) -> _flags.Surgery:
    if gang == "original":
        rec = _operators.recorded(dep).get(container["name"])
        if rec is None:
            return _flags.Surgery(container.get("command"), container.get("args"))
        # a record to drop is a change even when the argv already matches it
        previous = [h.value for h in _flags.find(container.get("command"), container.get("args"), op_spec["flag"])]
        return _flags.Surgery(rec.get("command"), rec.get("args"), previous, changed=True)
    if value is None:
        return _flags.remove_flag(
            container.get("command"), container.get("args"), op_spec["flag"], op_spec["boolean"], what
        )
    return _flags.set_flag(
        container.get("command"),
        container.get("args"),
        op_spec["flag"],
        value,
        op_spec["prefer"],
        op_spec["boolean"],
        what,
    )


def validate(params: dict) -> None:
    """Every option checked before the first API call, so a bad one changes nothing."""
    gang = params.get("gang_scheduler")
    if gang in _registry.PATHS:
        op = _operators.OPERATORS.get(params.get("operator"), {}).get("label")
        refusal = _registry.get(gang).operator_refusal(params.get("operator"), op, params.get("scheduler_name"))
        if refusal:
            raise GangError(refusal)
    _operators.check_name("namespace", params.get("namespace"), "namespace", label=True)
    _operators.check_name("name", params.get("name"), "Deployment", label=False)
    _operators.check_name("container", params.get("container"), "container", label=True)
    _operators.check_name("scheduler_name", params.get("scheduler_name"), "scheduler (profile)", label=False)
    timeout = params.get("wait_timeout")
    if params.get("wait") and (not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 1):
        raise GangError(
            f"wait_timeout={timeout!r} with wait=true: it must be a whole number of seconds of at least 1 "
            "(the rollout wait); nothing was changed"
        )
    expected = params.get("expected_image")
    if expected is not None and (not isinstance(expected, str) or not _images.IMAGE_REFERENCE.match(expected)):
        raise GangError(
            f"expected_image={expected!r} is not an image repository (for example mycorp/training-operator, or "
            "registry.example.com/mycorp/training-operator; registry, tag and digest are ignored); nothing was changed"
        )


def check_image(op: str, container: dict, expected: str | None, what: str) -> None:
    """GangError unless the container runs the named operator's image (or ``expected``)."""
    spec = _operators.OPERATORS[op]
    image = container.get("image")
    names = (expected,) if expected else spec["images"]
    if _images.image_matches(image, names):
        return
    if expected:
        raise GangError(
            f"{what} runs image {image!r}, not {expected!r} (expected_image): refusing to edit the command line of "
            f"another program. Point namespace/name/container at the {spec['label']} Deployment, or set "
            "expected_image to the image it runs; nothing was changed"
        )
    raise GangError(
        f"{what} runs image {image!r}, not {spec['label']} (an image named {' or '.join(spec['images'])}, as "
        f"{spec['upstream']} under any registry): refusing to edit the command line of another program. Point "
        f"namespace/name/container at the {spec['label']} Deployment, or, for a build of your own under another "
        "name, set expected_image to its repository; nothing was changed"
    )


def check_container(op: str, container: dict, params: dict, what: str) -> None:
    """Refuse before anything else when the container is not the operator's, or the flag could not be
    placed where the operator binary reads it (a shell-wrapped entrypoint)."""
    check_image(op, container, params.get("expected_image"), what)
    spec = _operators.OPERATORS[op]
    _flags.check_entrypoint(container.get("command"), container.get("args"), spec["flag"], what)


def flag_text(spec: dict, value: str | None) -> str | None:
    return None if value is None else f"--{spec['flag']}={value}"


def run(client, params: dict, check_mode: bool, warn) -> dict:
    op = params["operator"]
    spec = _operators.OPERATORS[op]
    ns = params.get("namespace") or spec["namespace"]
    name = params.get("name") or spec["name"]
    gang = params["gang_scheduler"]
    what = f"Deployment {ns}/{name}"
    validate({**params, "namespace": ns, "name": name})
    reads = [_service.deployment_read(ns, name)]
    if gang in _podgroups.PODGROUPS:
        # what a gang flag is checked against, asked for together with the operator's Deployment
        reads += [*_service.early_lists(), _service.crd_read(_podgroups.crd_name(gang))]
    with _together.ahead(client, reads):
        return _run(client, params, check_mode, warn, (op, spec, ns, name, gang, what))


def _run(client, params: dict, check_mode: bool, warn, named: tuple) -> dict:
    op, spec, ns, name, gang, what = named
    try:
        dep = _service.get_deployment(
            client, ns, name, hint=f": install {spec['label']} first, or set namespace/name to where it runs"
        )
    except GangError:
        if gang != "original":
            raise
        # an uninstall on a cluster where the operator never ran (or is gone): nothing to put back
        warn(f"{what} not found: nothing to put back")
        return {
            "changed": False,
            "deployment": f"{ns}/{name}",
            "container": None,
            "flag": None,
            "previous": None,
            "occurrences_before": 0,
            "scheduler_name": None,
            "conflicts_retried": 0,
            "command": None,
            "args": None,
            "_diff": {"before": {}, "after": {}},
        }
    container = _service.container_of(dep, params.get("container"), spec["container"])

    scheduler_name = None
    value = None
    if gang == "original" and container["name"] not in _operators.recorded(dep):
        warn(f"{what} container {container['name']}: no original command/args recorded; nothing to put back")
    if gang != "original":
        # gang_scheduler=original only puts back what this module recorded when it first changed the container
        check_container(op, container, params, f"{what} container {container['name']}")
    if gang not in ("none", "original"):
        schedulers = _service.find_schedulers(client)
        # before the CRD check: a name koord-scheduler serves is refused whatever else is installed
        _registry.refuse_claimed(params.get("scheduler_name"), schedulers, spec["label"])
        crd_name = _podgroups.crd_name(gang)
        if not _service.crd_established(_service.crd(client, crd_name)):
            raise GangError(
                f"CustomResourceDefinition {crd_name} is missing or not Established: {spec['label']} exits at start "
                f"without it. Install {gang.replace('_', '-')} (with its CRDs) first"
            )
        scheduler_name = _registry.derive_scheduler_name(gang, params.get("scheduler_name"), schedulers, spec["label"])
        value = "true" if spec["boolean"] else scheduler_name
        running = [s for s in schedulers if s["ready"] and _registry.get(gang).runs_flag(s, scheduler_name)]
        if not running:
            warn(
                f"No running scheduler serves {scheduler_name!r} yet: gangs will stay Pending until one does "
                f"(schedulers found: {', '.join(s['namespace'] + '/' + s['name'] for s in schedulers) or 'none'})"
            )
        clash = _service.mpijob_clash(client, op, container)
        if clash:
            raise GangError(f"{what}: {clash}")

    before = {"container": container["name"], "command": container.get("command"), "args": container.get("args")}
    result = None
    conflicts = 0
    for attempt in _service.conflict_attempts(what):
        if attempt:
            # someone else wrote in between (a user, or the controller's own status update): re-read and redo the
            # surgery on what is there now, so their change is kept
            conflicts += 1
            dep = _service.get_deployment(client, ns, name)
            container = _service.container_of(dep, params.get("container"), spec["container"])
            if gang != "original":
                check_container(op, container, params, f"{what} container {container['name']}")
        surgery = _surgery(spec, container, value, dep, f"{what} container {container['name']}", gang)
        if not surgery.changed:
            break
        try:
            result = _service.patch_deployment_container(
                client,
                dep,
                container["name"],
                surgery.command,
                surgery.args,
                dry_run=check_mode,
                unset=tuple(f for f in ("command", "args") if getattr(surgery, f) is None and container.get(f)),
                annotations=_operators.record_update(dep, container, restoring=gang == "original"),
            )
            break
        except Conflict:
            continue

    if result is not None:
        new_c = _service.container_of(result, container["name"], container["name"])
        after = {"container": new_c["name"], "command": new_c.get("command"), "args": new_c.get("args")}
    else:
        after = dict(before)
    changed = result is not None
    if changed and not check_mode and params.get("wait"):
        _waiter.wait_rollout(client, ns, name, params.get("wait_timeout", 120))

    previous_values = surgery.previous
    flag = flag_text(spec, value)
    if gang == "original":
        now = _flags.find(after["command"], after["args"], spec["flag"], spec["boolean"])
        flag = flag_text(spec, (now[-1].value or "true") if now else None)
    return {
        "changed": changed,
        "deployment": f"{ns}/{name}",
        "container": container["name"],
        "flag": flag,
        "previous": previous_values[-1] if previous_values else None,
        "occurrences_before": len(previous_values),
        "scheduler_name": scheduler_name,
        "conflicts_retried": conflicts,
        "command": after["command"],
        "args": after["args"],
        "_diff": {"before": before, "after": after},
    }

"""Flag surgery on command/args: the table of cases operator_gang relies on."""

from __future__ import annotations

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain import _flags
from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError

F = "gang-scheduler-name"

# (id, command, args, value, prefer, expected command, expected args, previous, changed)
SET_CASES = [
    (
        "absent-appends-to-command",
        ["/manager"],
        None,
        "volcano",
        "command",
        ["/manager", "--gang-scheduler-name=volcano"],
        None,
        [],
        True,
    ),
    (
        "absent-appends-to-args-when-preferred",
        ["/opt/mpi-operator"],
        ["--lock-namespace=x"],
        "volcano",
        "args",
        ["/opt/mpi-operator"],
        ["--lock-namespace=x", "--gang-scheduler-name=volcano"],
        [],
        True,
    ),
    (
        "absent-no-command-goes-to-args-not-entrypoint",
        None,
        None,
        "volcano",
        "command",
        None,
        ["--gang-scheduler-name=volcano"],
        [],
        True,
    ),
    (
        "absent-empty-command-goes-to-args",
        [],
        ["-v=2"],
        "volcano",
        "command",
        [],
        ["-v=2", "--gang-scheduler-name=volcano"],
        [],
        True,
    ),
    ("absent-args-none-created", ["/x"], None, "volcano", "args", ["/x"], ["--gang-scheduler-name=volcano"], [], True),
    (
        "equals-form-same-value-unchanged",
        ["/manager", "--gang-scheduler-name=volcano"],
        None,
        "volcano",
        "command",
        ["/manager", "--gang-scheduler-name=volcano"],
        None,
        ["volcano"],
        False,
    ),
    (
        "equals-form-new-value-in-place",
        ["/manager", "--gang-scheduler-name=scheduler-plugins", "--x"],
        None,
        "scheduler-plugins-scheduler",
        "command",
        ["/manager", "--gang-scheduler-name=scheduler-plugins-scheduler", "--x"],
        None,
        ["scheduler-plugins"],
        True,
    ),
    (
        "space-form-replaced-keeping-form",
        ["/manager", "--gang-scheduler-name", "volcano", "--y"],
        None,
        "default-scheduler",
        "command",
        ["/manager", "--gang-scheduler-name", "default-scheduler", "--y"],
        None,
        ["volcano"],
        True,
    ),
    (
        "space-form-same-value-unchanged",
        ["/manager", "--gang-scheduler-name", "volcano"],
        None,
        "volcano",
        "command",
        ["/manager", "--gang-scheduler-name", "volcano"],
        None,
        ["volcano"],
        False,
    ),
    (
        "single-dash-equals",
        ["/manager", "-gang-scheduler-name=volcano"],
        None,
        "x",
        "command",
        ["/manager", "-gang-scheduler-name=x"],
        None,
        ["volcano"],
        True,
    ),
    (
        "single-dash-space",
        ["/manager", "-gang-scheduler-name", "volcano"],
        None,
        "x",
        "command",
        ["/manager", "-gang-scheduler-name", "x"],
        None,
        ["volcano"],
        True,
    ),
    (
        "in-args-though-command-preferred",
        ["/manager"],
        ["--gang-scheduler-name=volcano"],
        "x",
        "command",
        ["/manager"],
        ["--gang-scheduler-name=x"],
        ["volcano"],
        True,
    ),
    (
        "in-args-same-value-unchanged",
        ["/manager"],
        ["--gang-scheduler-name=volcano"],
        "volcano",
        "command",
        ["/manager"],
        ["--gang-scheduler-name=volcano"],
        ["volcano"],
        False,
    ),
    (
        "duplicates-in-command-collapsed",
        ["/m", "--gang-scheduler-name=a", "--gang-scheduler-name=b"],
        None,
        "c",
        "command",
        ["/m", "--gang-scheduler-name=c"],
        None,
        ["a", "b"],
        True,
    ),
    (
        "duplicates-same-value-collapsed",
        ["/m", "--gang-scheduler-name=v", "--gang-scheduler-name=v"],
        None,
        "v",
        "command",
        ["/m", "--gang-scheduler-name=v"],
        None,
        ["v", "v"],
        True,
    ),
    (
        "duplicates-across-command-and-args",
        ["/m", "--gang-scheduler-name=a"],
        ["--gang-scheduler-name", "b", "-v"],
        "c",
        "command",
        ["/m", "--gang-scheduler-name=c"],
        ["-v"],
        ["a", "b"],
        True,
    ),
    (
        "duplicate-mixed-forms",
        ["/m", "--gang-scheduler-name", "a", "-gang-scheduler-name=b", "--z"],
        None,
        "a",
        "command",
        ["/m", "--gang-scheduler-name", "a", "--z"],
        None,
        ["a", "b"],
        True,
    ),
    (
        "similar-prefix-not-matched",
        ["/m", "--gang-scheduler-name-extra=1"],
        None,
        "v",
        "command",
        ["/m", "--gang-scheduler-name-extra=1", "--gang-scheduler-name=v"],
        None,
        [],
        True,
    ),
    (
        "value-lookalike-not-matched",
        ["/m", "--other=--gang-scheduler-name=x"],
        None,
        "v",
        "command",
        ["/m", "--other=--gang-scheduler-name=x", "--gang-scheduler-name=v"],
        None,
        [],
        True,
    ),
    (
        "empty-value-equals-replaced",
        ["/m", "--gang-scheduler-name="],
        None,
        "volcano",
        "command",
        ["/m", "--gang-scheduler-name=volcano"],
        None,
        [""],
        True,
    ),
    (
        "bare-then-flag-not-a-value",
        ["/m", "--gang-scheduler-name", "--v=2"],
        None,
        "volcano",
        "command",
        ["/m", "--gang-scheduler-name=volcano", "--v=2"],
        None,
        [None],
        True,
    ),
    (
        "other-flags-untouched-order-kept",
        ["/m", "--a=1", "--gang-scheduler-name=x", "--b=2"],
        ["--c"],
        "y",
        "command",
        ["/m", "--a=1", "--gang-scheduler-name=y", "--b=2"],
        ["--c"],
        ["x"],
        True,
    ),
]


@pytest.mark.parametrize(
    "command,args,value,prefer,want_cmd,want_args,previous,changed",
    [c[1:] for c in SET_CASES],
    ids=[c[0] for c in SET_CASES],
)
def test_set_flag(command, args, value, prefer, want_cmd, want_args, previous, changed):
    s = _flags.set_flag(command, args, F, value, prefer)
    assert (s.command, s.args, s.previous, s.changed) == (want_cmd, want_args, previous, changed)
    # idempotent: setting again changes nothing and finds exactly one occurrence
    again = _flags.set_flag(s.command, s.args, F, value, prefer)
    assert not again.changed and (again.command, again.args) == (s.command, s.args)
    assert len(_flags.find(s.command, s.args, F)) == 1


REMOVE_CASES = [
    ("absent-unchanged", ["/m", "--x"], None, ["/m", "--x"], None, [], False),
    ("equals-removed", ["/m", "--gang-scheduler-name=v", "--x"], None, ["/m", "--x"], None, ["v"], True),
    ("space-removed-with-value", ["/m", "--gang-scheduler-name", "v", "--x"], None, ["/m", "--x"], None, ["v"], True),
    (
        "all-duplicates-removed",
        ["/m", "--gang-scheduler-name=a"],
        ["-gang-scheduler-name", "b"],
        ["/m"],
        [],
        ["a", "b"],
        True,
    ),
    ("only-arg-removed-leaves-empty-args", ["/m"], ["--gang-scheduler-name=v"], ["/m"], [], ["v"], True),
    ("none-lists-stay-none", None, None, None, None, [], False),
]


@pytest.mark.parametrize(
    "command,args,want_cmd,want_args,previous,changed", [c[1:] for c in REMOVE_CASES], ids=[c[0] for c in REMOVE_CASES]
)
def test_remove_flag(command, args, want_cmd, want_args, previous, changed):
    s = _flags.remove_flag(command, args, F)
    assert (s.command, s.args, s.previous, s.changed) == (want_cmd, want_args, previous, changed)
    assert not _flags.remove_flag(s.command, s.args, F).changed


BOOL_CASES = [
    (
        "legacy-absent-appended",
        ["/opt/tf-operator"],
        None,
        ["/opt/tf-operator", "--enable-gang-scheduling=true"],
        None,
        [],
        True,
    ),
    (
        "legacy-bare-becomes-explicit",
        ["/opt/tf", "--enable-gang-scheduling"],
        None,
        ["/opt/tf", "--enable-gang-scheduling=true"],
        None,
        ["true"],
        True,
    ),
    (
        "legacy-false-flipped",
        ["/opt/tf", "--enable-gang-scheduling=false"],
        None,
        ["/opt/tf", "--enable-gang-scheduling=true"],
        None,
        ["false"],
        True,
    ),
    (
        "legacy-bare-does-not-eat-next-positional",
        ["/opt/tf", "--enable-gang-scheduling", "extra"],
        None,
        ["/opt/tf", "--enable-gang-scheduling=true", "extra"],
        None,
        ["true"],
        True,
    ),
    (
        "legacy-true-unchanged",
        ["/opt/tf", "--enable-gang-scheduling=true"],
        None,
        ["/opt/tf", "--enable-gang-scheduling=true"],
        None,
        ["true"],
        False,
    ),
]


@pytest.mark.parametrize(
    "command,args,want_cmd,want_args,previous,changed", [c[1:] for c in BOOL_CASES], ids=[c[0] for c in BOOL_CASES]
)
def test_legacy_boolean_flag(command, args, want_cmd, want_args, previous, changed):
    s = _flags.set_flag(command, args, "enable-gang-scheduling", "true", "command", boolean=True)
    assert (s.command, s.args, s.previous, s.changed) == (want_cmd, want_args, previous, changed)


@pytest.mark.parametrize("command", [["/bin/sh", "-c", "/manager --gang-scheduler-name=x"], ["bash", "-c", "run"]])
def test_shell_wrapped_command_is_refused(command):
    with pytest.raises(GangError, match="through a shell"):
        _flags.set_flag(command, None, F, "volcano", what="Deployment kubeflow/t container c")


def test_inputs_are_not_mutated():
    cmd, args = ["/m", "--gang-scheduler-name=a"], ["--gang-scheduler-name=b"]
    _flags.set_flag(cmd, args, F, "c")
    assert cmd == ["/m", "--gang-scheduler-name=a"] and args == ["--gang-scheduler-name=b"]

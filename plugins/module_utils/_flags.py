# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to this collection: flag surgery on a container's ``command`` and ``args``.

A flag may sit in either list, as ``--name=value``, ``--name value`` or (Go's flag package)
``-name=value`` / ``-name value``; a boolean flag may be bare (``--name``). Setting a flag replaces
the first occurrence in place, keeps its form, removes every other occurrence, and never appends
twice. Removing drops every occurrence (and the value that followed a spaced one). Not a public API.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.gangsched.kubeflow.plugins.module_utils._exceptions import GangError

SHELLS = ("sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/bash", "/usr/bin/env")


@dataclass(frozen=True)
class Hit:
    where: str  # "command" | "args"
    index: int  # index of the flag element
    value: str | None  # None for a bare boolean flag
    spaced: bool  # value in the next element


@dataclass
class Surgery:
    command: list[str] | None
    args: list[str] | None
    previous: list[str | None] = field(default_factory=list)  # values found before, in order
    changed: bool = False


def _match(elem: str, name: str) -> tuple[bool, str | None, bool]:
    """(is this flag, inline value or None, could take the next element as value)."""
    for dashes in ("--", "-"):
        flag = dashes + name
        if elem == flag:
            return True, None, True
        if elem.startswith(flag + "="):
            return True, elem[len(flag) + 1 :], False
    return False, None, False


def find(command: list[str] | None, args: list[str] | None, name: str, boolean: bool = False) -> list[Hit]:
    """Every occurrence of flag ``name`` (without dashes) in command then args."""
    hits = []
    for where, argv in (("command", command or []), ("args", args or [])):
        i = 0
        while i < len(argv):
            ok, value, may_space = _match(argv[i], name)
            if ok:
                nxt = argv[i + 1] if i + 1 < len(argv) else None
                if may_space and not boolean and nxt is not None and not nxt.startswith("-"):
                    hits.append(Hit(where, i, nxt, True))
                    i += 2
                    continue
                hits.append(Hit(where, i, value, False))
            i += 1
    return hits


def _check_not_shell(command: list[str] | None, what: str) -> None:
    cmd = command or []
    if len(cmd) >= 2 and cmd[0] in SHELLS and "-c" in cmd[1:3]:
        raise GangError(
            f"{what} runs its binary through a shell ({' '.join(cmd[:2])} -c ...); flags inside a shell string "
            "cannot be edited safely. Give the container a plain command/args list, then re-run"
        )


def set_flag(
    command: list[str] | None,
    args: list[str] | None,
    name: str,
    value: str,
    prefer: str = "command",
    boolean: bool = False,
    what: str = "the container",
) -> Surgery:
    """Ensure ``--name=value`` exactly once. ``prefer`` is where a missing flag goes ("command" or
    "args"); a missing flag never goes into an empty ``command`` (that would replace the image's
    entrypoint) but into ``args``."""
    _check_not_shell(command, what)
    cmd, arg = list(command or []), list(args or [])
    hits = find(cmd, arg, name, boolean)
    previous = [h.value if h.value is not None else ("true" if boolean else None) for h in hits]
    lists = {"command": cmd, "args": arg}
    if hits:
        first = hits[0]
        target = lists[first.where]
        dashes = "--" if target[first.index].startswith("--") else "-"
        if first.spaced:
            target[first.index + 1] = value
        else:
            target[first.index] = f"{dashes}{name}={value}"
        # drop every later occurrence, back to front so indices stay valid
        for h in reversed(hits[1:]):
            del lists[h.where][h.index : h.index + (2 if h.spaced else 1)]
    else:
        where = prefer if (prefer == "args" or cmd) else "args"
        lists[where].append(f"--{name}={value}")
    return _result(command, args, cmd, arg, previous)


def remove_flag(
    command: list[str] | None, args: list[str] | None, name: str, boolean: bool = False, what: str = "the container"
) -> Surgery:
    _check_not_shell(command, what)
    cmd, arg = list(command or []), list(args or [])
    hits = find(cmd, arg, name, boolean)
    previous = [h.value if h.value is not None else ("true" if boolean else None) for h in hits]
    lists = {"command": cmd, "args": arg}
    for h in reversed(hits):
        del lists[h.where][h.index : h.index + (2 if h.spaced else 1)]
    return _result(command, args, cmd, arg, previous)


def _result(command, args, cmd: list[str], arg: list[str], previous) -> Surgery:
    new_cmd = cmd if (cmd or command is not None) else None
    new_arg = arg if (arg or args is not None) else None
    changed = list(command or []) != cmd or list(args or []) != arg
    return Surgery(new_cmd, new_arg, previous, changed)

# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: flag surgery on a container's ``command`` and ``args``.

A flag may sit in either list, as ``--name=value``, ``--name value`` or (Go's flag package)
``-name=value`` / ``-name value``; a boolean flag may be bare (``--name``). Setting a flag replaces
the first occurrence in place, keeps its form, removes every other occurrence, and never appends
twice. Removing drops every occurrence (and the value that followed a spaced one).

Before any edit the effective argv (``command`` + ``args``) is read the way the container runtime runs
it: through process wrappers (tini, dumb-init, catatonit, s6-overlay's ``/init``, ``env``, gosu,
su-exec) to the program that reads the flags. When that program is a shell (``sh -c``, ``bash -lc``,
``busybox sh -c``, or a shell running a script file) the edit is refused: the flag would land outside
the script. A missing flag is added after the program, so a wrapper in ``command`` with the operator
binary in ``args`` gets it in ``args``. Not a public API.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field

from ansible_collections.gangsched.kubeflow.plugins.module_utils.domain._exceptions import GangError

# programs (by basename) that read their first operand as a script or a script file
SHELLS = frozenset(("sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "yash", "fish"))
# programs that exec the rest of their argv: basename -> (options that take the next element as value,
# positional operands before the program)
WRAPPERS = {
    "tini": (frozenset(("-p", "-e")), 0),
    "tini-static": (frozenset(("-p", "-e")), 0),
    "dumb-init": (frozenset(("-r", "--rewrite")), 0),
    "catatonit": (frozenset(), 0),
    "init": (frozenset(), 0),  # s6-overlay's /init runs its arguments as the main program
    "with-contenv": (frozenset(), 0),  # s6-overlay: /init with-contenv program ...
    "s6-setuidgid": (frozenset(), 1),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "nice": (frozenset(("-n", "--adjustment")), 0),
    "env": (frozenset(("-u", "--unset", "-C", "--chdir", "-S", "--split-string")), 0),
    "gosu": (frozenset(), 1),  # gosu USER program ...
    "su-exec": (frozenset(), 1),
}
# shell options that take the next element as value
_SHELL_VALUE_OPTIONS = frozenset(("--rcfile", "--init-file"))


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


@dataclass(frozen=True)
class Entrypoint:
    """How the container's argv runs. ``program`` is the index (in ``command`` + ``args``) of the
    program that reads the flags, None when it is the image's own entrypoint (empty ``command``);
    ``shell`` is what runs a script instead (``bash -lc``, ``sh /entrypoint.sh``), with ``script``
    True for an inline ``-c`` script."""

    argv: tuple[str, ...]
    program: int | None
    wrappers: tuple[str, ...] = ()
    shell: str | None = None
    script: bool = False


def _prog(elem: str) -> str:
    return posixpath.basename(elem)


def _skip_wrapper(argv: list[str], i: int) -> tuple[int, list[str] | None]:
    """Index after the wrapper at ``i`` and its own options, and for ``env -S STRING`` the words of
    STRING (the program and its first arguments; the index is then that of STRING)."""
    name = _prog(argv[i])
    takes_value, operands = WRAPPERS[name]
    j = i + 1
    while j < len(argv):
        a = argv[j]
        if a == "--":
            j += 1
            break
        if name == "env":
            text = None
            if a in ("-S", "--split-string"):
                j += 1
                text = argv[j] if j < len(argv) else ""
            elif a.startswith("--split-string="):
                text = a.split("=", 1)[1]
            elif a.startswith("-S"):
                text = a[2:]
            if text is not None:
                try:
                    return j, shlex.split(text)
                except ValueError:
                    return j, text.split()
            if a == "-" or ("=" in a and not a.startswith("-")):
                j += 1  # env - (empty environment), NAME=VALUE
                continue
        if not a.startswith("-") or a == "-":
            break
        j += 2 if a in takes_value else 1
    return j + operands, None


def _shell_options(argv: list[str], i: int) -> tuple[int, bool]:
    """Index after the shell at ``i`` and its options, and whether one of them is ``-c``."""
    j, inline = i + 1, False
    while j < len(argv):
        a = argv[j]
        if a in ("-", "--"):
            return j + 1, inline
        if a.startswith("--"):
            j += 2 if a in _SHELL_VALUE_OPTIONS else 1
            continue
        if len(a) < 2 or a[0] not in "-+":
            break
        letters = a[1:]
        if "c" in letters and a[0] == "-":
            inline = True
        # -o NAME / +o NAME (set -o pipefail), -O NAME (bash shopt)
        j += 2 if ("o" in letters or "O" in letters) else 1
    return j, inline


def entrypoint(command: list[str] | None, args: list[str] | None) -> Entrypoint:
    """Read the effective argv: wrappers, then the program, or the shell that runs a script."""
    cmd, arg = list(command or []), list(args or [])
    if cmd:
        argv = cmd + arg
    elif arg and (_prog(arg[0]) in SHELLS or _prog(arg[0]) in WRAPPERS or _prog(arg[0]) == "busybox"):
        # the image's entrypoint runs args as a command line (docker-entrypoint style): read them as one
        argv = arg
    else:
        return Entrypoint(tuple(arg), None)
    wrappers: list[str] = []
    i = 0
    while i < len(argv):
        name = _prog(argv[i])
        if name == "busybox" and i + 1 < len(argv) and _prog(argv[i + 1]) in SHELLS:
            end, inline = _shell_options(argv, i + 1)
            return Entrypoint(tuple(argv), i, tuple(wrappers), " ".join(argv[i:end]), inline)
        if name in SHELLS:
            end, inline = _shell_options(argv, i)
            return Entrypoint(tuple(argv), i, tuple(wrappers), " ".join(argv[i:end]), inline)
        if name in WRAPPERS and (name != "init" or argv[i] in ("/init", "init")):
            wrappers.append(argv[i])
            i, split = _skip_wrapper(argv, i)
            if split is not None:
                inner = entrypoint(split, None)
                if inner.shell or inner.program is None:
                    return Entrypoint(tuple(argv), i, tuple(wrappers) + inner.wrappers, inner.shell, inner.script)
                return Entrypoint(tuple(argv), i, tuple(wrappers) + inner.wrappers)
            continue
        return Entrypoint(tuple(argv), i, tuple(wrappers))
    return Entrypoint(tuple(argv), None, tuple(wrappers))


def check_entrypoint(command: list[str] | None, args: list[str] | None, name: str, what: str) -> Entrypoint:
    """The container's entrypoint, or GangError when a flag cannot be placed where the operator reads it."""
    ep = entrypoint(command, args)
    fix = (
        "Put the operator binary in command/args directly (for example command: [/manager, ...]), or set "
        f"--{name} inside the script yourself and leave this container out of operator_gang; nothing was changed"
    )
    if ep.shell and ep.script:
        raise GangError(
            f"{what} runs its binary through a shell ({ep.shell} <script>): a --{name} flag added to command/args "
            "would land outside the script (the shell reads the word after the script as $0, the rest as $1...), "
            f"so the operator would never see it. {fix}"
        )
    if ep.shell:
        raise GangError(
            f"{what} runs a shell script ({ep.shell} ...): a --{name} flag added to command/args would go to the "
            f"script, which may never pass it on to the operator. {fix}"
        )
    if ep.wrappers and ep.program is None:
        raise GangError(
            f"{what} runs {' '.join(ep.wrappers)} with no program after it: there is no operator binary to give "
            f"--{name} to. Put the operator binary in command/args; nothing was changed"
        )
    return ep


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
    entrypoint) but into ``args``, nor into a ``command`` that holds only wrappers (tini --) while the
    program is in ``args``. A shell-wrapped entrypoint is refused (GangError)."""
    ep = check_entrypoint(command, args, name, what)
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
        if ep.program is not None and ep.program >= len(cmd):
            where = "args"  # the program is in args: a flag in command would come before it
        lists[where].append(f"--{name}={value}")
    return _result(command, args, cmd, arg, previous)


def remove_flag(
    command: list[str] | None, args: list[str] | None, name: str, boolean: bool = False, what: str = "the container"
) -> Surgery:
    check_entrypoint(command, args, name, what)
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

# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: a directory of text files made to match what is wanted — the plan (which files
are new or changed, which are stale), each file written atomically, and the diff Ansible shows. Used by the
modules that write files (render_manifests, gitops_layout). Not a public API."""

from __future__ import annotations

import os
import tempfile


def read(path: str) -> str | None:
    """The file's text; None when there is none (nor can be: a path through a file)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


def write(path: str, text: str) -> None:
    """``text`` to ``path`` atomically (a temporary file in the same directory, then a rename), its directory made
    first; mode 0644."""
    directory, name = os.path.split(path)
    os.makedirs(directory or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def present(root: str, recursive: bool = False) -> list[str]:
    """The ``*.yaml`` files under ``root`` (relative paths, sorted): in ``root`` itself, or in its whole tree."""
    if not os.path.isdir(root):
        return []
    if not recursive:
        return sorted(n for n in os.listdir(root) if n.endswith(".yaml"))
    out = []
    for top, _dirs, names in os.walk(root):
        out += [os.path.relpath(os.path.join(top, n), root) for n in names if n.endswith(".yaml")]
    return sorted(out)


class Plan:
    """What makes the files under ``root`` equal to ``wanted`` (relative path -> text): ``written``, the paths new
    or changed; ``removed``, the paths of ``found`` not wanted (when ``prune``); ``diff``, Ansible's diff of both."""

    def __init__(self, root: str, wanted: dict[str, str], found: list[str], prune: bool = True):
        self.root, self.wanted = root, wanted
        before = {p: read(os.path.join(root, p)) for p in set(found) | set(wanted)}
        self.written = [p for p, text in wanted.items() if before.get(p) != text]
        self.removed = [p for p in found if p not in wanted] if prune else []
        self.diff = [
            {"before_header": self.at(p), "after_header": self.at(p), "before": before.get(p) or "", "after": wanted[p]}
            for p in self.written
        ] + [
            {"before_header": self.at(p), "after_header": "(removed)", "before": before[p] or "", "after": ""}
            for p in self.removed
        ]

    def at(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    @property
    def changed(self) -> bool:
        return bool(self.written or self.removed)

    def carry_out(self, check_mode: bool) -> str | None:
        """Writes and removes (not in check mode); what a user reads when that fails (the directory named), else
        None."""
        if check_mode or not self.changed:
            return None
        try:
            self.apply()
        except OSError as e:
            return f"cannot write to {self.root} ({e.strerror}): check that the directory is writable"
        return None

    def apply(self) -> None:
        """Writes and removes; directories left empty by a removal go too. OSError as it came."""
        for p in self.written:
            write(self.at(p), self.wanted[p])
        for p in self.removed:
            os.unlink(self.at(p))
            parent = os.path.dirname(self.at(p))
            while os.path.realpath(parent) != os.path.realpath(self.root) and not os.listdir(parent):
                os.rmdir(parent)
                parent = os.path.dirname(parent)

# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the Jinja plugins (filters, tests) and lookups the collection's roles use, loaded once
in ansible-playbook's own process.

Why: Ansible runs each task in a worker forked from ansible-playbook's process, and a worker loads a filter, test or
lookup plugin the first time a template of that task uses it, unless ansible-playbook's process loaded it before the
fork. ansible-playbook itself templates little, so nearly every task of a role loaded the same plugin files again
(Ansible's own filters and tests as a whole, and the collection's): on a converged site.yml run, 174 plugin loads in
the workers, about a quarter of their time. The plugin loaders keep what they loaded, and a fork inherits it.

Called when ansible-playbook loads the collection's action plugins (it loads a task's action plugin in its own process,
before it forks the task's worker), so the tasks from the first of the collection's modules on find the plugins
loaded. Only in ansible-playbook's process (not in a worker, where it would be a cost, not a saving), once; a plugin
that fails to load here is left to the task that uses it, which reports it as it would have. Not a public API."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

COLLECTION = "gangsched.kubeflow"
# Ansible's own lookups the roles use; one filter and one test of Ansible's load all of them
BUILTIN = {
    "filter": ("ansible.builtin.to_json",),
    "test": ("ansible.builtin.match",),
    "lookup": tuple(f"ansible.builtin.{n}" for n in ("env", "file", "template", "vars")),
}
_PLUGINS = Path(__file__).resolve().parent.parent
_done = False


def names(kind: str) -> list[str]:
    """The plugins of ``kind`` (filter, test, lookup) to load: Ansible's above, then the collection's own (a filter
    or test by its documentation file, one per plugin; a lookup by its file)."""
    files = (_PLUGINS / kind).glob("*.yml" if kind != "lookup" else "*.py")
    own = sorted(p.stem for p in files if p.stem != "__init__")
    return [*BUILTIN[kind], *(f"{COLLECTION}.{n}" for n in own)]


def preload() -> int:
    """Loads the plugins of ``names`` in ansible-playbook's process, the first time it is called there; returns how
    many loaded (0 elsewhere, or when called again)."""
    global _done
    if _done or multiprocessing.parent_process() is not None:
        return 0
    _done = True
    try:
        from ansible.plugins.loader import filter_loader, lookup_loader, test_loader
    except ImportError:
        return 0
    loaded = 0
    for kind, loader in (("filter", filter_loader), ("test", test_loader), ("lookup", lookup_loader)):
        for name in names(kind):
            try:
                loaded += loader.get(name, class_only=True) is not None
            except Exception:  # pylint: disable=broad-exception-caught
                # left to the task that uses it, which reports it with its own context
                continue
    return loaded

"""Every key a module's result can hold is in its RETURN, and every RETURN key is one the code returns.

The keys come from the code itself, read with ``ast``: the module's runner (the function its main()
hands the client to, directly or through ``_module.execute``) and the same-file functions it returns
through, following the dict it returns — dict literals, ``result["k"] = …``, ``result.update(k=…)``,
``result.setdefault("k", …)`` and helpers that get the dict as an argument — plus what main() itself
adds. ``_diff`` is returned as ``diff`` (``_module.execute``); other keys starting with ``_`` are
internal. A new key in a result only needs its RETURN entry."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent.parent
MODULES = sorted(p for p in (REPO / "plugins" / "modules").glob("*.py") if not p.name.startswith("_"))
UTILS = REPO / "plugins" / "module_utils"
# Ansible's common return values: documented once for all modules, never in RETURN
COMMON = {"changed", "failed", "msg", "exception", "warnings", "deprecations", "invocation", "skipped"}
RENAMED = {"_diff": "diff"}  # _module.execute: returned as diff in diff mode
TYPES = {"str", "int", "float", "bool", "list", "dict", "complex", "raw", "path"}


def _const_keys(d: ast.Dict) -> set[str]:
    return {k.value for k in d.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


class KeyCollector:
    """Keys of the dict a function returns, following the functions (same file or imported from
    module_utils) it returns through or hands that dict to."""

    def __init__(self):
        self.files: dict[Path, tuple[dict, dict]] = {}
        self.seen: set[tuple[Path, str, frozenset, bool]] = set()

    def _parse(self, path: Path) -> tuple[dict, dict]:
        """(functions by name, imported name -> module_utils file) of a file."""
        if path not in self.files:
            tree = ast.parse(path.read_text())
            functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
            imports = {}
            for n in tree.body:
                if isinstance(n, ast.ImportFrom) and n.module and ".plugins.module_utils." in n.module:
                    util = UTILS.joinpath(*n.module.split(".plugins.module_utils.", 1)[1].split(".")).with_suffix(".py")
                    imports.update({a.asname or a.name: (util, a.name) for a in n.names})
            self.files[path] = (functions, imports)
        return self.files[path]

    def _target(self, path: Path, call: ast.Call) -> tuple[Path, str] | None:
        if not isinstance(call.func, ast.Name):
            return None
        functions, imports = self._parse(path)
        if call.func.id in functions:
            return path, call.func.id
        target = imports.get(call.func.id)
        return target if target and target[0].exists() else None

    def collect(self, path: Path, name: str, tracked: frozenset = frozenset(), returns: bool = True) -> set[str]:
        """Keys of what function ``name`` returns (``returns``) and of the dicts named ``tracked`` it is
        handed and fills in."""
        functions, _ = self._parse(path)
        if name not in functions or (path, name, tracked, returns) in self.seen:
            return set()
        self.seen.add((path, name, tracked, returns))
        fn = functions[name]
        names = set(tracked)
        keys: set[str] = set()
        if returns:
            values = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
            names |= {v.id for v in values if isinstance(v, ast.Name)}
            # result = {...}; return finish(result, params): the dicts this function made, handed on
            made = self.made_here(fn)
            names |= {a.id for v in values if isinstance(v, ast.Call) for a in v.args if isinstance(a, ast.Name)} & made
            for v in values:
                keys |= self.expr(path, v, names)
        return keys | self.mutations(path, fn, names)

    @staticmethod
    def made_here(fn: ast.FunctionDef) -> set[str]:
        """Local names (not parameters) a dict is assigned to."""
        own = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
        made = set()
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and (
                isinstance(n.value, ast.Dict)
                or (isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name) and n.value.func.id == "dict")
            ):
                made |= {t.id for t in n.targets if isinstance(t, ast.Name) and t.id not in own}
        return made

    def _passed(self, path: Path, call: ast.Call, tracked: set[str]) -> tuple[Path, str, frozenset] | None:
        """The function a call goes to and which of its parameters get a tracked dict."""
        target = self._target(path, call)
        if target is None:
            return None
        params = [a.arg for a in self._parse(target[0])[0][target[1]].args.args]
        passed = frozenset(
            params[i]
            for i, a in enumerate(call.args)
            if i < len(params) and isinstance(a, ast.Name) and a.id in tracked
        )
        return target[0], target[1], passed

    def expr(self, path: Path, e: ast.expr, tracked: set[str]) -> set[str]:
        """Keys of the dict an expression makes."""
        if isinstance(e, ast.Dict):
            keys = _const_keys(e)
            for k, v in zip(e.keys, e.values, strict=True):
                if k is None:  # {**other}
                    keys |= self.expr(path, v, tracked)
            return keys
        if isinstance(e, ast.Call):
            if isinstance(e.func, ast.Name) and e.func.id == "dict":
                keys = {k.arg for k in e.keywords if k.arg}
                for k in e.keywords:
                    if k.arg is None:  # dict(**other)
                        keys |= self.expr(path, k.value, tracked)
                return keys
            passed = self._passed(path, e, tracked)
            if passed is not None:
                return self.collect(*passed)
        return set()

    def mutations(self, path: Path, fn: ast.FunctionDef, tracked: set[str]) -> set[str]:
        """Keys put into the dicts named ``tracked``."""
        keys: set[str] = set()
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Name) and t.id in tracked:
                        keys |= self.expr(path, n.value, tracked)
                    if (
                        isinstance(t, ast.Subscript)
                        and isinstance(t.value, ast.Name)
                        and t.value.id in tracked
                        and isinstance(t.slice, ast.Constant)
                        and isinstance(t.slice.value, str)
                    ):
                        keys.add(t.slice.value)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                owner = n.func.value
                if not (isinstance(owner, ast.Name) and owner.id in tracked):
                    continue
                if n.func.attr == "update":
                    keys |= {k.arg for k in n.keywords if k.arg}
                    for a in n.args:
                        keys |= self.expr(path, a, tracked)
                elif n.func.attr == "setdefault" and n.args and isinstance(n.args[0], ast.Constant):
                    keys.add(n.args[0].value)
            elif isinstance(n, ast.Call) and any(isinstance(a, ast.Name) and a.id in tracked for a in n.args):
                passed = self._passed(path, n, tracked)
                if passed is not None and passed[2]:
                    keys |= self.collect(*passed, returns=False)  # what it puts into the dict it is handed
        return keys


def runner_of(module: Path) -> tuple[Path, str]:
    """(file, function) of what computes the module's result: the runner its entry() hands to
    ``_module.cluster_entry`` (a cluster module), or the function its entry() names as ``run``."""
    c = KeyCollector()
    functions, imports = c._parse(module)
    known = {**imports, **{name: (module, name) for name in functions}}
    found = set()
    for n in ast.walk(functions["entry"]):
        if not isinstance(n, ast.Call) or not isinstance(n.func, ast.Name):
            continue
        if n.func.id == "cluster_entry":  # _module.cluster_entry(argument_spec(), runner, ...)
            found |= {known[a.id] for a in n.args if isinstance(a, ast.Name) and a.id in known}
        elif n.func.id == "dict":  # dict(argument_spec=..., run=render, ...)
            found |= {known[k.value.id] for k in n.keywords if k.arg == "run" and isinstance(k.value, ast.Name)}
    assert len(found) == 1, f"cannot tell the runner of {module.name} from its entry(): {found or 'none'}"
    return found.pop()


def main_keys(module: Path) -> set[str]:
    """What main() itself adds: result["k"] = … and exit_json(k=…)."""
    c = KeyCollector()
    main = c._parse(module)[0]["main"]
    keys = c.mutations(module, main, {"result", "facts"})
    for n in ast.walk(main):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "exit_json":
            keys |= {k.arg for k in n.keywords if k.arg}
    return keys


def code_keys(module: Path) -> set[str]:
    keys = KeyCollector().collect(*runner_of(module)) | main_keys(module)
    out = set()
    for k in keys:
        k = RENAMED.get(k, k)
        if not k.startswith("_") and k not in COMMON:
            out.add(k)
    return out


def return_doc(module: Path) -> dict:
    tree = ast.parse(module.read_text())
    for n in tree.body:
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "RETURN" for t in n.targets):
            return yaml.safe_load(n.value.value) or {}
    raise AssertionError(f"{module.name} has no RETURN")


@pytest.mark.parametrize("module", MODULES, ids=[m.stem for m in MODULES])
def test_every_returned_key_is_documented(module):
    keys, doc = code_keys(module), return_doc(module)
    assert keys, f"no result keys found in {module.stem}'s code: has its runner changed shape?"
    missing = sorted(keys - set(doc))
    assert not missing, f"{module.stem} returns {missing} without a RETURN entry"


@pytest.mark.parametrize("module", MODULES, ids=[m.stem for m in MODULES])
def test_every_documented_key_is_returned(module):
    keys, doc = code_keys(module), return_doc(module)
    stale = sorted(set(doc) - keys)
    assert not stale, f"{module.stem}'s RETURN documents {stale}, which its code never returns"


@pytest.mark.parametrize("module", MODULES, ids=[m.stem for m in MODULES])
def test_return_entries_are_complete(module):
    for key, entry in return_doc(module).items():
        assert isinstance(entry, dict), key
        for field in ("description", "returned", "type"):
            assert entry.get(field) not in (None, ""), f"{module.stem} RETURN {key}: no {field}"
        assert entry["type"] in TYPES, f"{module.stem} RETURN {key}: type {entry['type']}"
        if entry["type"] == "list":
            assert entry.get("elements"), f"{module.stem} RETURN {key}: a list needs elements"


def test_the_collector_follows_helpers_and_updates(tmp_path):
    src = tmp_path / "runner.py"
    src.write_text(
        """
def helper(res, params):
    res["from_helper"] = 1
    res.setdefault("defaulted", 2)
    return res

def other():
    return dict(absent_branch=1, **{"unpacked": 2})

def run(client, params):
    if params.get("x"):
        return other()
    result = {"literal": 1, "_diff": {}}
    result.update(updated=1)
    result.update({"updated_dict": 1})
    result["assigned"] = 2
    unrelated = {}
    unrelated["not_a_key"] = 3
    return helper(result, params)
"""
    )
    keys = KeyCollector().collect(src, "run")
    assert keys == {
        "absent_branch",
        "unpacked",
        "literal",
        "_diff",
        "updated",
        "updated_dict",
        "assigned",
        "from_helper",
        "defaulted",
    }

"""The built collection through galaxy-importer, the program Galaxy and Automation Hub run on an upload, the way
they run it: on the tarball alone, with no other collection installed (kubernetes.core neither). Exit 1 on an
error or a warning of the importer itself, on a module or plugin whose documentation ansible-doc did not load
there (Galaxy's documentation page would lack it), or on a playbook or role that ansible-playbook --syntax-check
refuses for another reason than the one below. ansible-lint's findings in the import are listed (Galaxy shows
them as warnings); `make lint` runs ansible-lint on the checkout and tests/tarball_check.py on the installed
tarball, and those decide which findings fail.

galaxy-importer runs in a virtual environment of its own, kept outside the checkout under the lab's build cache
(``<cache>/galaxy-importer/<key of its pins and Python>``, made on the first run with those pins by lab/venvs.py, as
the Go builds and .venv are kept): it needs attrs<24, older than .venv's, and the `ansible` package that .venv holds
bundles kubernetes.core, which must not be visible. That environment has ansible-core, ansible-lint and
ansible-builder at the pins of requirements.txt and no `ansible` package; the importer runs with an empty HOME,
an empty ANSIBLE_COLLECTIONS_PATH and none of the caller's ANSIBLE_* settings, and the check first makes sure
that kubernetes.core cannot be found there. Its settings (galaxy-importer.cfg): ansible-doc and ansible-lint
(offline) on, as on Galaxy; the tags Automation Hub requires checked; ansible-test off (it needs a container
runtime) and flake8 off, as on Galaxy.

Known ansible-lint findings, listed and not fatal: `internal-error` of `ansible-playbook --syntax-check` on each
role that names a kubernetes.core module or `module_defaults` group (`group/kubernetes.core.k8s`), and on each
playbook that uses such a role. ansible-core resolves them when it parses a play, and without kubernetes.core it
cannot; ansible-lint's `mock_modules` stand in for modules only, not for a collection's action groups, so
nothing in the collection can make the importer's syntax check pass. tests/tarball_check.py lints the same
files with kubernetes.core installed, where they pass.

Usage: galaxy_import_check.py [TARBALL]; without TARBALL, the checkout is built as tests/tarball_check.py
builds it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tarball_check import REPO, build  # noqa: E402

sys.path.insert(0, str(REPO))
from lab import venvs  # noqa: E402

IMPORTER = "galaxy-importer==0.4.44"
# the importer's environment: these from requirements.txt, at its pins
FROM_REQUIREMENTS = ("ansible-core", "ansible-lint", "ansible-builder", "PyYAML")
# what galaxy-importer's ansible-doc step reads (its ANSIBLE_DOC_SUPPORTED_TYPES), by plugin folder
DOC_FOLDERS = {
    "modules": "module",
    "lookup": "lookup",
    "filter": "filter",
    "test": "test",
    "inventory": "inventory",
    "callback": "callback",
    "connection": "connection",
    "become": "become",
    "cache": "cache",
    "cliconf": "cliconf",
    "httpapi": "httpapi",
    "shell": "shell",
    "strategy": "strategy",
    "vars": "vars",
}
SYNTAX_CHECK = re.compile(
    r"^(?P<path>\S+?):\d+: internal-error: Unexpected error code 4 from execution of: ansible-playbook --syntax-check"
)
# ansible-lint's pep8 format: path:line[:column]: rule[tag][...]: message
LINT_FINDING = re.compile(r"^\S+?:\d+(?::\d+)?: [\w-]+(?:\[[^\]]*\])*: ")


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def pins() -> list[str]:
    """The importer and, at the pins of requirements.txt, the tools it runs."""
    found = {}
    for line in (REPO / "requirements.txt").read_text().splitlines():
        name, sep, _ = line.split("#")[0].strip().partition("==")
        if sep and name.lower() in {n.lower() for n in FROM_REQUIREMENTS}:
            found[name.lower()] = line.split("#")[0].strip()
    missing = [n for n in FROM_REQUIREMENTS if n.lower() not in found]
    if missing:
        raise RuntimeError(f"requirements.txt pins none of {', '.join(missing)} (name==version)")
    return [IMPORTER, *(found[n.lower()] for n in FROM_REQUIREMENTS)]


def importer_venv() -> Path:
    """The importer's environment for these pins and this Python, made on first use under the build cache (checkouts
    share it); its bin folder."""
    wanted = "\n".join(pins()) + "\n"
    return venvs.cached("galaxy-importer", wanted, wanted.split(), "ansible-lint") / "bin"


def sterile_env(bindir: Path, tmp: Path) -> dict:
    """The importer's environment: its venv first on PATH, an empty HOME (no ~/.ansible), an empty collections
    path, and nothing of the caller's Ansible, galaxy-importer, Python or virtualenv settings."""
    home, empty = tmp / "home", tmp / "collections"
    home.mkdir()
    empty.mkdir()
    drop = ("ANSIBLE_", "GALAXY_IMPORTER_", "PYTHON", "VIRTUAL_ENV", "PIP_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        PATH=os.pathsep.join([str(bindir), "/usr/bin", "/bin"]),
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        ANSIBLE_COLLECTIONS_PATH=str(empty),
        GALAXY_IMPORTER_CONFIG=str(tmp / "galaxy-importer.cfg"),
    )
    (tmp / "galaxy-importer.cfg").write_text(
        "[galaxy-importer]\n"
        "run_ansible_doc = True\n"
        "run_ansible_lint = True\n"
        "offline_ansible_lint = True\n"
        "check_changelog = True\n"
        "check_required_tags = True\n"
        "run_ansible_test = False\n"
        "ansible_test_local_image = False\n"
        "local_image_docker = False\n"
        "run_flake8 = False\n"
        "log_level_main = INFO\n"
        f"ansible_local_tmp = {home / '.ansible' / 'tmp'}\n"
        f"tmp_root_dir = {tmp}\n"
    )
    return env


def kubernetes_core_visible(bindir: Path, env: dict, cwd: Path) -> str | None:
    """How kubernetes.core can be found in ``env``; None when it cannot."""
    probe = "import ansible_collections; print(list(ansible_collections.__path__))"
    p = run([str(bindir / "python"), "-c", probe], env=env, cwd=cwd)
    if p.returncode == 0:
        return f"an ansible_collections package is importable: {p.stdout.strip()}"
    p = run([str(bindir / "ansible-doc"), "--json", "-t", "module", "kubernetes.core.k8s"], env=env, cwd=cwd)
    try:
        found = "kubernetes.core.k8s" in json.loads(p.stdout or "{}")
    except ValueError:
        found = False
    return f"ansible-doc finds kubernetes.core.k8s:\n{p.stdout[:300]}" if found else None


def expected_syntax_failures(tarball: Path) -> set[str]:
    """The roles that name a module or an action group of kubernetes.core, and the playbooks that do or that
    use such a role (by name, or through import_playbook): ansible-playbook --syntax-check fails on them
    without kubernetes.core."""
    texts = {}
    with tarfile.open(tarball) as t:
        for m in t.getmembers():
            name = m.name.removeprefix("./")
            if m.isfile() and name.endswith((".yml", ".yaml")) and name.startswith(("roles/", "playbooks/")):
                texts[name] = t.extractfile(m).read().decode("utf-8", errors="replace")
    roles = {n.split("/")[1] for n, text in texts.items() if n.startswith("roles/") and "kubernetes.core." in text}
    meta = yaml.safe_load((REPO / "galaxy.yml").read_text())
    prefix = f"{meta['namespace']}.{meta['name']}."
    playbooks = {
        n
        for n, text in texts.items()
        if n.startswith("playbooks/")
        and ("kubernetes.core." in text or any(re.search(rf"\b{re.escape(prefix + r)}\b", text) for r in roles))
    }
    grew = True
    while grew:
        grew = False
        for n, text in texts.items():
            if n.startswith("playbooks/") and n not in playbooks:
                if any(re.search(rf"import_playbook:\s*['\"]?{re.escape(Path(p).name)}\b", text) for p in playbooks):
                    playbooks.add(n)
                    grew = True
    return {f"roles/{r}" for r in roles} | playbooks


def documented_plugins(tarball: Path) -> dict[str, set[str]]:
    """Plugin type -> the names that carry documentation in the tarball: each .py with DOCUMENTATION (a module,
    a lookup) and each .yml (a filter or test documented beside the Python file that holds several)."""
    found: dict[str, set[str]] = {}
    with tarfile.open(tarball) as t:
        for m in t.getmembers():
            parts = m.name.removeprefix("./").split("/")
            if not m.isfile() or len(parts) != 3 or parts[0] != "plugins" or parts[1] not in DOC_FOLDERS:
                continue
            stem, _, ext = parts[2].rpartition(".")
            if stem.startswith("_") or ext not in ("py", "yml", "yaml"):
                continue
            if ext == "py" and b"DOCUMENTATION" not in t.extractfile(m).read():
                continue
            found.setdefault(DOC_FOLDERS[parts[1]], set()).add(stem)
    return found


def entries(log: str) -> list[tuple[str, str]]:
    """The importer's log as (level, message): INFO lines carry no level; a line without one after a
    WARNING or ERROR continues it."""
    out: list[tuple[str, str]] = []
    for line in log.splitlines():
        level, sep, rest = line.partition(": ")
        if sep and level in ("DEBUG", "WARNING", "ERROR", "CRITICAL"):
            out.append((level, rest))
        elif out and out[-1][0] != "INFO" and line.startswith((" ", "\t")):
            out[-1] = (out[-1][0], f"{out[-1][1]}\n{line}")
        else:
            out.append(("INFO", line))
    return out


def check(tarball: Path, bindir: Path, tmp: Path) -> list[str]:
    errors: list[str] = []
    env = sterile_env(bindir, tmp)
    seen = kubernetes_core_visible(bindir, env, tmp)
    if seen:
        return [f"the importer's environment is not sterile, kubernetes.core is visible there: {seen}"]
    print("the importer's environment: no collection installed, kubernetes.core not found: ok")
    work = tmp / "run"
    work.mkdir()
    p = run([str(bindir / "python"), "-m", "galaxy_importer.main", str(tarball)], env=env, cwd=work, timeout=900)
    log = p.stdout + p.stderr
    (tmp / "importer.log").write_text(log)
    version = next((line for line in log.splitlines() if line.startswith("Importing with")), "")
    print(version or "galaxy-importer did not start")
    if p.returncode != 0 or "Importer processing completed successfully" not in log:
        errors.append(f"galaxy-importer failed (exit {p.returncode}):\n{log[-4000:]}")
    expected = expected_syntax_failures(tarball)
    known, lint = [], []
    for level, message in entries(log):
        if level in ("ERROR", "CRITICAL"):
            errors.append(f"galaxy-importer {level}: {message[:3000]}")
        elif level != "WARNING":
            continue
        elif (m := SYNTAX_CHECK.match(message)) and m["path"] in expected:
            known.append(m["path"])
        elif m:  # a syntax check that fails for another reason than kubernetes.core's absence
            errors.append(f"ansible-lint in the import, a syntax error: {message}")
        elif LINT_FINDING.match(message):
            lint.append(message)
        else:  # the importer's own: the changelog, the execution-environment files, a README
            errors.append(f"galaxy-importer WARNING: {message[:3000]}")
    if known:
        print(
            f"known ansible-lint warnings in the import ({len(known)}), internal-error: ansible-playbook "
            "--syntax-check cannot resolve kubernetes.core's modules and module_defaults groups, which Galaxy "
            "does not install:"
        )
        for path in sorted(known):
            print(f"  {path}")
    if lint:
        print(f"other ansible-lint findings in the import ({len(lint)}), shown by Galaxy as warnings:")
        for message in lint:
            print(f"  {message if len(message) < 300 else message[:297] + '...'}")

    result = work / "importer_result.json"
    if not result.exists():
        return [*errors, "galaxy-importer wrote no importer_result.json"]
    data = json.loads(result.read_text())
    loaded: dict[str, set[str]] = {}
    for item in data.get("docs_blob", {}).get("contents", []):
        if (item.get("doc_strings") or {}).get("doc"):
            loaded.setdefault(item["content_type"], set()).add(item["content_name"])
    for kind, names in sorted(documented_plugins(tarball).items()):
        missing = sorted(names - loaded.get(kind, set()))
        if missing:
            errors.append(f"no documentation loaded for {kind} plugin(s): {', '.join(missing)}")
        else:
            print(f"documentation loaded for every {kind} ({len(names)}): ok")
    return errors


def main(argv: list[str]) -> int:
    try:
        bindir = importer_venv()
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if argv:
            tarball = Path(argv[0]).resolve()
            if not tarball.is_file():
                print(f"no such tarball: {tarball}", file=sys.stderr)
                return 1
        else:
            env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
            # from the temporary directory, with an empty config: the checkout's ansible.cfg must not apply
            (tmp / "build.cfg").write_text("[defaults]\n")
            env.update(ANSIBLE_CONFIG=str(tmp / "build.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"))
            try:
                tarball = build(tmp / "dist", env, tmp)
            except RuntimeError as e:
                print(e, file=sys.stderr)
                return 1
        print(f"galaxy-importer on {tarball.name}")
        try:
            errors = check(tarball, bindir, tmp)
        except subprocess.TimeoutExpired as e:
            errors = [f"galaxy-importer did not finish within {e.timeout:g}s"]
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    print("galaxy import check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

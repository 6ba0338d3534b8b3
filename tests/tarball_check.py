"""The collection as Galaxy and Automation Hub get it: `ansible-galaxy collection build` into a temporary
directory, the tarball's file list checked (no developer file in it; COPYING, README.md, the changelog,
meta/runtime.yml and the plugins, roles and playbooks present), then installed with
`ansible-galaxy collection install --offline --no-deps` into an empty path (kubernetes.core comes from
the environment, nothing is fetched); on that install, ansible-builder introspect (the execution-environment
requirements, resolved with pip --dry-run), ansible-lint with the production profile (what
the Galaxy importer runs, without the checkout's .ansible-lint) and `ansible-doc` for a module, a
filter, the test plugin and a role. Exit 1 naming what is wrong."""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# must be in the tarball
REQUIRED = [
    "MANIFEST.json",
    "FILES.json",
    "COPYING",
    "README.md",
    "CHANGELOG.rst",
    "changelogs/changelog.yaml",
    "changelogs/config.yaml",
    "meta/runtime.yml",
    "plugins/modules/gang_info.py",
    "plugins/module_utils/k8s/_client.py",
    "plugins/filter/gang.py",
    "plugins/test/gang.py",
    "roles/volcano/meta/argument_specs.yml",
    "playbooks/site.yml",
]
# must not be: the checkout's developer files, tests, the lab, caches
FORBIDDEN = [
    "ansible.cfg",
    ".ansible-lint",
    ".gitignore",
    ".ci/*",
    ".config/*",
    ".venv/*",
    ".collections/*",
    ".lab/*",
    ".lab-*",
    ".labs/*",
    ".ansible/*",
    ".git/*",
    "*__pycache__*",
    "*.pyc",
    "*.tar.gz",
    "Makefile",
    "ruff.toml",
    "requirements.txt",
    "inventories/lab*",
    "docs/architecture.md",
    "docs/development.md",
    "lab/*",
    "bench/*",
    "tests/*",
    "extensions/*",
    "reports/*",
    "rendered/*",
    "changelogs/.plugin-cache.yaml",
]
DOCS = [
    ("module", "gangsched.kubeflow.gang_info"),
    ("filter", "gangsched.kubeflow.condition_true"),
    ("test", "gangsched.kubeflow.labels_match"),
    ("role", "gangsched.kubeflow.volcano"),
]


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def bundled_collections() -> Path:
    """The environment's ansible_collections (the `ansible` package's bundle, with kubernetes.core)."""
    import ansible_collections.kubernetes.core as kc

    core = Path(kc.__file__).parent if kc.__file__ else Path(list(kc.__path__)[0])
    return core.parent.parent


def ee_requirements(dest: Path, tmp: Path, env: dict) -> list[str]:
    """What ansible-builder reads from the installed collection for an execution environment: its Python
    requirements must name the kubernetes client, and resolve on the package index (pip --dry-run)."""
    req = tmp / "ee-requirements.txt"
    p = run([str(BIN / "ansible-builder"), "introspect", str(dest), "--write-pip", str(req)], env=env, cwd=tmp)
    if p.returncode != 0 or not req.exists():
        return [f"ansible-builder introspect on the installed tarball failed:\n{p.stdout}{p.stderr}"]
    text = req.read_text()
    if "kubernetes" not in text:
        return [f"ansible-builder found no kubernetes requirement in the collection:\n{text}"]
    p = run(
        [str(BIN / "python"), "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed", "-r", str(req)],
        env=env,
        cwd=tmp,
    )
    if p.returncode != 0:
        return [f"the execution-environment requirements do not resolve:\n{text}\n{p.stderr[-1500:]}"]
    print(f"ansible-builder introspect: {' '.join(text.split())}; pip --dry-run resolves them: ok")
    return []


def build(out: Path, env: dict, cwd) -> Path:
    """`ansible-galaxy collection build` of the checkout into ``out``; the tarball's path."""
    meta = yaml.safe_load((REPO / "galaxy.yml").read_text())
    p = run(
        [str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(REPO)], env=env, cwd=cwd
    )
    if p.returncode != 0:
        raise RuntimeError(f"ansible-galaxy collection build failed:\n{p.stdout}{p.stderr}")
    return out / f"{meta['namespace']}-{meta['name']}-{meta['version']}.tar.gz"


def install(tarball: Path, dest: Path, env: dict, cwd) -> Path:
    """`ansible-galaxy collection install --offline --no-deps` into the empty path ``dest``; the
    collection's directory there."""
    meta = yaml.safe_load((REPO / "galaxy.yml").read_text())
    p = run(
        [str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "--no-deps", "-p", str(dest), str(tarball)],
        env={**env, "ANSIBLE_COLLECTIONS_PATH": str(dest)},
        cwd=cwd,
    )
    installed = dest / "ansible_collections" / meta["namespace"] / meta["name"]
    if p.returncode != 0 or not (installed / "MANIFEST.json").exists():
        raise RuntimeError(f"ansible-galaxy collection install --offline failed:\n{p.stdout}{p.stderr}")
    return installed


def build_and_install(tmp: Path) -> str:
    """The collection built and installed under ``tmp``, as an ANSIBLE_COLLECTIONS_PATH value that holds
    that install and the environment's bundled collections (kubernetes.core), not the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["ANSIBLE_CONFIG"] = str(tmp / "ansible.cfg")
    (tmp / "ansible.cfg").write_text("[defaults]\n")
    dest = tmp / "installed"
    install(build(tmp / "dist", env, tmp), dest, env, tmp)
    return os.pathsep.join([str(dest), str(bundled_collections().parent)])


def main() -> int:
    meta = yaml.safe_load((REPO / "galaxy.yml").read_text())
    errors: list[str] = []
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    with tempfile.TemporaryDirectory() as tmp:
        out, home = Path(tmp) / "dist", Path(tmp) / "home"
        home.mkdir()
        # run from the temporary directory: the checkout's ansible.cfg (collections_path .collections) must not apply
        env.update(HOME=str(home), ANSIBLE_LOCAL_TEMP=str(home / "tmp"), ANSIBLE_CONFIG=str(home / "ansible.cfg"))
        (home / "ansible.cfg").write_text("[defaults]\n")
        try:
            tarball = build(out, env, tmp)
        except RuntimeError as e:
            print(e, file=sys.stderr)
            return 1
        with tarfile.open(tarball) as t:
            names = [m.name.removeprefix("./") for m in t.getmembers() if m.isfile()]
        errors += [f"missing from the tarball: {r}" for r in REQUIRED if r not in names]
        for n in names:
            bad = [f for f in FORBIDDEN if fnmatch.fnmatch(n, f)]
            if bad:
                errors.append(f"developer file in the tarball: {n} (matches {bad[0]})")
        print(f"{tarball.name}: {len(names)} files, {tarball.stat().st_size / 1024:.0f} KiB")

        dest = Path(tmp) / "installed"
        installed = dest / "ansible_collections" / meta["namespace"] / meta["name"]
        try:
            install(tarball, dest, env, tmp)
        except RuntimeError as e:
            errors.append(str(e))
        else:
            env["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join([str(dest), str(bundled_collections().parent)])
            # ansible-lint as the Galaxy importer runs it: on what the tarball holds (no .ansible-lint in it)
            p = run(
                [str(BIN / "ansible-lint"), "--offline", "--nocolor", "--profile", "production"],
                env={**env, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"},
                cwd=installed,
            )
            if p.returncode != 0:
                errors.append(f"ansible-lint (production) on the installed tarball failed:\n{p.stdout[-3000:]}")
            else:
                print("ansible-lint (production profile) on the installed tarball: ok")
            for kind, name in DOCS:
                p = run([str(BIN / "ansible-doc"), "-t", kind, name], env=env, cwd=tmp)
                where = f"ansible-doc -t {kind} {name} from the installed tarball"
                if p.returncode != 0 or "[ERROR]" in p.stderr or "[WARNING]" in p.stderr:
                    errors.append(f"{where} failed: {(p.stderr or p.stdout).strip()[:500]}")
                elif str(installed) not in p.stdout and kind in ("module", "role"):
                    errors.append(f"{where} did not read it from {installed}:\n{p.stdout[:300]}")
                else:
                    print(f"{where}: ok")
            errors += ee_requirements(dest, Path(tmp), env)
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    print("tarball check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

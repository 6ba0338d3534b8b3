"""Every change to plugins/, roles/ or playbooks/ comes with a changelog fragment.

Compares the working tree (committed, staged, unstaged and untracked files) with the merge base of
HEAD and origin/main; without a remote named origin (a fresh clone on CI) with HEAD~1. Passes when
nothing under plugins/, roles/ or playbooks/ changed, when a fragment under changelogs/fragments/ was
added or edited, or when changelogs/changelog.yaml changed (a release). Passes with a note when there
is nothing to compare with (not a git checkout, a single commit, a shallow clone of depth 1).
Exit 1 naming the changed files otherwise: add changelogs/fragments/<something>.yml (a `trivial:`
entry for changes that need no changelog line). Also exit 1 when CHANGELOG.rst does not name every
module, lookup, filter and test plugin, role and playbook."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WATCHED = ("plugins/", "roles/", "playbooks/")
FRAGMENTS = "changelogs/fragments/"
RELEASE = "changelogs/changelog.yaml"


def git(*args: str) -> str | None:
    p = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def base() -> tuple[str | None, str]:
    """(commit to compare with, how it was found); None when there is none."""
    if git("rev-parse", "--is-inside-work-tree") != "true":
        return None, "not a git checkout"
    if git("rev-parse", "--verify", "-q", "origin/main^{commit}"):
        mb = git("merge-base", "HEAD", "origin/main")
        if mb:
            return mb, "merge base with origin/main"
    prev = git("rev-parse", "--verify", "-q", "HEAD~1^{commit}")
    if prev:
        return prev, "HEAD~1 (no origin/main)"
    return None, "no origin/main and no HEAD~1 (first commit or shallow clone)"


def changes(commit: str) -> dict[str, str]:
    """path -> git status letter (A, M, D, R...) of the working tree against ``commit``, untracked files as A."""
    out: dict[str, str] = {}
    diff = git("diff", "--name-status", "--no-renames", commit) or ""
    for line in diff.splitlines():
        status, _, path = line.partition("\t")
        out[path] = status[:1]
    for path in (git("ls-files", "--others", "--exclude-standard") or "").splitlines():
        out[path] = "A"
    return out


def unlisted() -> list[str]:
    """Modules, lookup, filter and test plugins, roles and playbooks CHANGELOG.rst does not name."""
    text = (REPO / "CHANGELOG.rst").read_text() if (REPO / "CHANGELOG.rst").exists() else ""
    plugins = REPO / "plugins"
    names = [p.stem for kind in ("modules", "lookup") for p in (plugins / kind).glob("*.py") if p.stem[0] != "_"]
    names += [p.stem for kind in ("filter", "test") for p in (REPO / "plugins" / kind).glob("*.yml")]
    names += [p.name for p in (REPO / "roles").iterdir() if (p / "tasks").is_dir()]
    names += [p.stem for p in (REPO / "playbooks").glob("*.yml")]
    return sorted(n for n in set(names) if f"gangsched.kubeflow.{n} - " not in text)


def main() -> int:
    missing = unlisted()
    if missing:
        print(
            f"CHANGELOG.rst does not list {', '.join(missing)}: give the plugin version_added, or name the role or "
            "playbook in an `add object.role` / `add object.playbook` fragment, then `make changelog`",
            file=sys.stderr,
        )
        return 1
    commit, how = base()
    if commit is None:
        print(f"changelog check: skipped, {how}")
        return 0
    changed = changes(commit)
    watched = sorted(p for p in changed if p.startswith(WATCHED))
    fragments = sorted(
        p for p, s in changed.items() if p.startswith(FRAGMENTS) and s in ("A", "M") and p.endswith((".yml", ".yaml"))
    )
    if not watched:
        print(f"changelog check: nothing under {', '.join(WATCHED)} changed since {how} ({commit[:12]})")
        return 0
    if fragments or RELEASE in changed:
        why = ", ".join(fragments) if fragments else f"{RELEASE} (a release)"
        print(f"changelog check: {len(watched)} changed file(s) since {how} ({commit[:12]}), covered by {why}")
        return 0
    print(
        f"changelog check: {len(watched)} file(s) under {', '.join(WATCHED)} changed since {how} ({commit[:12]}) "
        f"and no fragment was added under {FRAGMENTS}:\n  "
        + "\n  ".join(watched)
        + f"\nAdd {FRAGMENTS}<short-name>.yml (see changelogs/config.yaml for the sections; `trivial:` for changes "
        "that need no changelog line).",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())

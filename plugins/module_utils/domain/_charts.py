# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: the Chart.yaml of a local Helm chart, a directory or an archive (.tgz), read as Helm
reads it. Used by the drift module and the chart_version lookup. Not a public API."""

from __future__ import annotations

import tarfile
from pathlib import Path


def chart_meta(ref: str) -> dict | None:
    """The Chart.yaml of the local chart ``ref`` (a directory, or an archive whose top directory holds it; a
    subchart's under ``<name>/charts/`` is not the chart's; ``{}`` for an archive without one), None when ``ref`` is
    not a local path. ValueError ``cannot read its Chart.yaml (<why>)`` when it cannot be read (a directory without
    one, a file that is no archive)."""
    import yaml  # the caller's requirement, imported where used

    path = Path(ref).expanduser()
    try:
        if path.is_dir():
            return yaml.safe_load((path / "Chart.yaml").read_text()) or {}
        if path.is_file():
            with tarfile.open(path) as tar:
                top = [m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml")]
                found = tar.extractfile(top[0]) if top else None
                return (yaml.safe_load(found.read()) or {}) if found is not None else {}
    except (OSError, tarfile.TarError, yaml.YAMLError) as e:
        raise ValueError(f"cannot read its Chart.yaml ({type(e).__name__})") from None
    return None

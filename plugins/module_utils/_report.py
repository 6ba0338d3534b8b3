# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to this collection: smoke-test reports — the JSON verdict, a JUnit XML file for CI and an
SVG timeline of pod states. Not a public API."""

from __future__ import annotations

import json
import os
from xml.sax.saxutils import escape

COLORS = {
    "Pending": "#d0d0d0",
    "Unschedulable": "#f0b400",
    "Running": "#2e9e44",
    "Bound": "#4a7fd4",
    "Deleted": "#ffffff",
    "Succeeded": "#8fbc8f",
    "Failed": "#c0392b",
}


def junit(result: dict) -> str:
    cases = []
    for key in ("gang", "control"):
        g = result.get(key)
        if not g:
            continue
        name = f"{result['workload']} {result['gang_scheduler']} {key}"
        body = ""
        if key == "gang" and not result.get("ok"):
            msg = f"verdict {g['verdict']}, expected {result['expected']}"
            detail = result.get("cause") or json.dumps({k: g.get(k) for k in ("bound", "running", "unbound")})
            body = f'<failure message="{escape(msg, {chr(34): "&quot;"})}">{escape(detail)}</failure>'
        cases.append(
            f'  <testcase classname="gangsched.kubeflow.gang_smoke_test" name="{escape(name)}" time="{g["seconds"]}">'
            f"{body}<system-out>{escape(json.dumps(g['timeline']))}</system-out></testcase>"
        )
    failures = 0 if result.get("ok") else 1
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuite name="gang_smoke_test" tests="{len(cases)}" failures="{failures}">\n'
        + "\n".join(cases)
        + "\n</testsuite>\n"
    )


def svg(result: dict) -> str:
    """One row per pod; each state a coloured bar from when it was entered until the next one."""
    rows = []
    for key in ("gang", "control"):
        g = result.get(key)
        if not g:
            continue
        pods: dict[str, list] = {}
        for ev in g["timeline"]:
            pods.setdefault(ev["pod"], []).append(ev)
        for pod, evs in sorted(pods.items()):
            rows.append((f"{key}: {pod}", evs, g["seconds"]))
    if not rows:
        return (
            '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="40"><text x="10" y="25">no pods</text></svg>\n'
        )
    end = max(max(r[2] for r in rows), 1.0)
    label_w, width, row_h = 260, 600, 22
    scale = width / end
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + width + 20}" height="{row_h * len(rows) + 60}" '
        'font-family="sans-serif" font-size="12">',
        f'<text x="10" y="18">{escape(result["workload"])} / {escape(result["gang_scheduler"])}: verdict '
        f"{escape(str(result.get('verdict')))} (expected {escape(result['expected'])})</text>",
    ]
    for i, (label, evs, _) in enumerate(rows):
        y = 30 + i * row_h
        parts.append(f'<text x="10" y="{y + 15}">{escape(label)}</text>')
        for j, ev in enumerate(evs):
            t1 = evs[j + 1]["t"] if j + 1 < len(evs) else end
            x, w = label_w + ev["t"] * scale, max(1.0, (t1 - ev["t"]) * scale)
            fill = COLORS.get(ev["state"], "#999")
            where = f" on {escape(ev['node'])}" if ev.get("node") else ""
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row_h - 4}" fill="{fill}">'
                f"<title>{escape(ev['state'])} at {ev['t']}s{where}</title></rect>"
            )
    parts.append(f'<text x="{label_w}" y="{30 + len(rows) * row_h + 15}">0 s … {end:.1f} s</text>')
    parts.append("</svg>\n")
    return "\n".join(parts)


def write(report_dir: str, result: dict) -> dict:
    os.makedirs(report_dir, exist_ok=True)
    stem = os.path.join(report_dir, f"gang-smoke-{result.get('run_id', 'preflight')}")
    paths = {"json": stem + ".json", "junit": stem + ".xml", "svg": stem + ".svg"}
    with open(paths["json"], "w") as f:
        json.dump(result, f, indent=2, sort_keys=True)
    with open(paths["junit"], "w") as f:
        f.write(junit(result))
    with open(paths["svg"], "w") as f:
        f.write(svg(result))
    return paths

# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private to this collection: smoke-test reports — the JSON verdict, a JUnit XML file for CI and an
SVG timeline of pod states. Both XML files are built with ElementTree from text made safe for XML 1.0
(any string a cluster returns — a cause with control characters, ``]]>``, quotes — gives a well-formed
file). Not a public API."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

COLORS = {
    "Pending": "#d0d0d0",
    "Unschedulable": "#f0b400",
    "Running": "#2e9e44",
    "Bound": "#4a7fd4",
    "Deleted": "#ffffff",
    "Succeeded": "#8fbc8f",
    "Failed": "#c0392b",
}
CLASSNAME = "gangsched.kubeflow.gang_smoke_test"
# the verdicts a JUnit consumer should see as the test erring (it could not decide), not failing
ERROR_VERDICTS = ("error",)
# a JUnit message attribute is one line in most viewers; the element's text keeps the whole of it
MESSAGE_MAX = 1000
# characters XML 1.0 does not allow (C0 controls but tab/newline/CR, lone surrogates, U+FFFE/U+FFFF)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value) -> str:
    """``value`` as text XML 1.0 can carry: characters it forbids written as ``\\xNN`` / ``\\uNNNN``,
    CR and CRLF as LF (a parser would turn them into LF anyway)."""
    s = value if isinstance(value, str) else str(value)
    s = s.replace("\r\n", "\n").replace("\r", "\n")
    return _NOT_XML.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", s
    )


def _el(parent, tag: str, text=None, **attrs) -> ET.Element:
    e = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items() if v is not None})
    if text is not None:
        e.text = xml_text(text)
    return e


def _short(s: str) -> str:
    s = xml_text(s)  # first, since escaping lengthens it (xml_text on its own output changes nothing)
    return s if len(s) <= MESSAGE_MAX else s[: MESSAGE_MAX - 1] + "…"


def _xml(root: ET.Element) -> str:
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _seconds(value) -> str:
    try:
        return f"{float(value):.3f}"
    except (TypeError, ValueError):
        return "0.000"


def junit(result: dict) -> str:
    """One testcase for the gang (and one for the no-gang control when it ran). The gang's case fails
    (``<failure>``) when the verdict is not the expected one, errs (``<error>``) when the verdict is
    ``error``; the control's verdict is shown, never asserted. The testsuite's counts match its cases."""
    suite = ET.Element("testsuite", {"name": "gang_smoke_test"})
    tests = failures = errors = 0
    total = 0.0
    workload, scheduler = result.get("workload", ""), result.get("gang_scheduler", "")
    for key in ("gang", "control"):
        g = result.get(key)
        if not g and not (key == "gang" and result.get("verdict") is not None):
            continue
        g = g or {}  # the gang never ran (an error in the preflight): the case still reports the verdict
        seconds = g.get("seconds") or 0
        total += float(seconds) if isinstance(seconds, (int, float)) else 0.0
        case = _el(suite, "testcase", classname=CLASSNAME, name=f"{workload} {scheduler} {key}", time=_seconds(seconds))
        tests += 1
        verdict = g.get("verdict", result.get("verdict"))
        if key == "gang" and result.get("ok") is False:
            cause = g.get("cause") or result.get("cause")
            if verdict in ERROR_VERDICTS:
                errors += 1
                msg = f"verdict {verdict}: {cause}" if cause else f"verdict {verdict}"
                _el(case, "error", cause or msg, message=_short(msg), type=verdict)
            else:
                failures += 1
                msg = f"verdict {verdict}, expected {result.get('expected')}"
                detail = cause or json.dumps({k: g.get(k) for k in ("bound", "running", "unbound")}, sort_keys=True)
                _el(case, "failure", detail, message=_short(msg), type=verdict)
        _el(case, "system-out", json.dumps(g.get("timeline") or [], ensure_ascii=False))
    for k, v in (("tests", tests), ("failures", failures), ("errors", errors), ("skipped", 0)):
        suite.set(k, str(v))
    suite.set("time", _seconds(total))
    return _xml(suite)


def svg(result: dict) -> str:
    """One row per pod; each state a coloured bar from when it was entered until the next one."""
    rows = []
    for key in ("gang", "control"):
        g = result.get(key)
        if not g:
            continue
        pods: dict[str, list] = {}
        for ev in g.get("timeline") or []:
            pods.setdefault(str(ev["pod"]), []).append(ev)
        for pod, evs in sorted(pods.items()):
            rows.append((f"{key}: {pod}", evs, g.get("seconds") or 0))
    ns = "http://www.w3.org/2000/svg"
    if not rows:
        root = ET.Element("svg", {"xmlns": ns, "width": "400", "height": "40"})
        _el(root, "text", "no pods", x="10", y="25")
        return _xml(root)
    end = max(max(float(r[2]) for r in rows), 1.0)
    label_w, width, row_h = 260, 600, 22
    scale = width / end
    root = ET.Element(
        "svg",
        {
            "xmlns": ns,
            "width": str(label_w + width + 20),
            "height": str(row_h * len(rows) + 60),
            "font-family": "sans-serif",
            "font-size": "12",
        },
    )
    title = (
        f"{result.get('workload')} / {result.get('gang_scheduler')}: verdict {result.get('verdict')} "
        f"(expected {result.get('expected')})"
    )
    _el(root, "text", title, x="10", y="18")
    for i, (label, evs, _seconds_row) in enumerate(rows):
        y = 30 + i * row_h
        _el(root, "text", label, x="10", y=str(y + 15))
        for j, ev in enumerate(evs):
            t1 = evs[j + 1]["t"] if j + 1 < len(evs) else end
            x, w = label_w + ev["t"] * scale, max(1.0, (t1 - ev["t"]) * scale)
            fill = COLORS.get(ev["state"], "#999")
            rect = _el(root, "rect", x=f"{x:.1f}", y=str(y), width=f"{w:.1f}", height=str(row_h - 4), fill=fill)
            where = f" on {ev['node']}" if ev.get("node") else ""
            _el(rect, "title", f"{ev['state']} at {ev['t']}s{where}")
    _el(root, "text", f"0 s … {end:.1f} s", x=str(label_w), y=str(30 + len(rows) * row_h + 15))
    return _xml(root)


def write(report_dir: str, result: dict) -> dict:
    os.makedirs(report_dir, exist_ok=True)
    stem = os.path.join(report_dir, f"gang-smoke-{result.get('run_id', 'preflight')}")
    paths = {"json": stem + ".json", "junit": stem + ".xml", "svg": stem + ".svg"}
    with open(paths["json"], "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, sort_keys=True)
    with open(paths["junit"], "w", encoding="utf-8") as f:
        f.write(junit(result))
    with open(paths["svg"], "w", encoding="utf-8") as f:
        f.write(svg(result))
    return paths

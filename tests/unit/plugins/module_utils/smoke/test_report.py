"""The smoke test's reports: JUnit XML and SVG stay well-formed for any string a cluster can return
(control characters, ``]]>``, quotes, non-BMP characters, lone surrogates, very long text), an ``error``
verdict is an <error>, a wrong verdict a <failure>, and the testsuite's counts match its cases."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from ansible_collections.gangsched.kubeflow.plugins.module_utils.smoke import _report

HOSTILE = [
    "plain",
    "ansi \x1b[31mred\x1b[0m bell \x07 nul \x00 vt \x0b ff \x0c del \x7f",
    "cdata end ]]> and <![CDATA[ x ]]>",
    'quotes " \' &quot; &amp; & < > <tag attr="v"/>',
    "non-BMP 😀 𝄞 \U0010fffd, BMP edge \ufffd, not characters \ufffe \uffff",
    "lone surrogates \ud800 \udfff",
    "cr \r crlf \r\n tab \t newline \n",
    "x" * 200_000,
    "\x00" * 1000,
]


def expected_text(s: str) -> str:
    """What a parser reads back: forbidden characters as their escapes, line ends as LF."""
    return _report.xml_text(s)


def result(verdict="partial", ok=False, expected="running", cause=None, control=False, text="t"):
    gang = {
        "verdict": verdict,
        "seconds": 3.25,
        "bound": [f"pod-{text}-0"],
        "running": [],
        "unbound": [f"pod-{text}-1"],
        "timeline": [
            {"t": 0.0, "pod": f"pod-{text}-0", "state": "Pending", "node": None},
            {"t": 1.0, "pod": f"pod-{text}-0", "state": "Bound", "node": f"node-{text}"},
            {"t": 0.5, "pod": f"pod-{text}-1", "state": text[:50], "node": None},
        ],
    }
    r = {
        "workload": f"pods{text[:20]}",
        "gang_scheduler": "volcano",
        "expected": expected,
        "verdict": verdict,
        "ok": ok,
        "run_id": "abc123",
        "gang": gang,
    }
    if cause is not None:
        r["cause"] = cause
        gang["cause"] = cause
    if control:
        r["control"] = {**gang, "verdict": "partial", "seconds": 2.0}
    return r


def parse(text: str) -> ET.Element:
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    return ET.fromstring(text.encode("utf-8"))


@pytest.mark.parametrize("s", HOSTILE, ids=range(len(HOSTILE)))
def test_junit_is_well_formed_for_a_hostile_cause_and_keeps_it(s):
    suite = parse(_report.junit(result("error", cause=s, text=s)))
    (case,) = suite.findall("testcase")
    err = case.find("error")
    assert err is not None and case.find("failure") is None
    assert err.text == expected_text(s)
    assert err.get("type") == "error"
    assert len(err.get("message")) <= _report.MESSAGE_MAX
    assert expected_text(s)[:100] in err.get("message")
    # the timeline is JSON, whose escapes carry even what XML cannot: it reads back exactly
    timeline = json.loads(case.find("system-out").text)
    assert [e["pod"] for e in timeline] == [f"pod-{s}-0"] * 2 + [f"pod-{s}-1"]
    assert timeline[2]["state"] == s[:50]


@pytest.mark.parametrize("s", HOSTILE, ids=range(len(HOSTILE)))
def test_svg_is_well_formed_for_hostile_names(s):
    r = result("partial", text=s)
    r["gang_scheduler"] = s
    root = parse(_report.svg(r))
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any(expected_text(s) in t for t in texts)
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(expected_text(f"node-{s}") in t for t in titles)


def test_xml_text_leaves_allowed_characters_alone():
    s = "tab\tnl\n😀 é ü \u2028 \ud7ff \ue000 \ufffd \U0010ffff"
    assert _report.xml_text(s) == s
    assert _report.xml_text("\x1b\x00\ud800\ufffe") == "\\x1b\\x00\\ud800\\ufffe"
    assert _report.xml_text("a\r\nb\rc") == "a\nb\nc"
    assert _report.xml_text(42) == "42"


def counts(suite):
    return {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}


def test_expected_verdict_passes():
    suite = parse(_report.junit(result("gang_held_running", ok=True)))
    assert counts(suite) == {"tests": 1, "failures": 0, "errors": 0, "skipped": 0}
    case = suite.find("testcase")
    assert case.find("failure") is None and case.find("error") is None
    assert case.get("classname") == "gangsched.kubeflow.gang_smoke_test"
    assert case.get("name") == "podst volcano gang"
    assert float(case.get("time")) == 3.25


@pytest.mark.parametrize("verdict", ["partial", "timeout", "gang_held_pending", "inconclusive"])
def test_wrong_verdict_is_a_failure(verdict):
    suite = parse(_report.junit(result(verdict, ok=False, expected="running")))
    assert counts(suite) == {"tests": 1, "failures": 1, "errors": 0, "skipped": 0}
    failure = suite.find("testcase/failure")
    assert failure.get("message") == f"verdict {verdict}, expected running"
    assert failure.get("type") == verdict
    assert json.loads(failure.text) == {"bound": ["pod-t-0"], "running": [], "unbound": ["pod-t-1"]}


def test_error_verdict_is_an_error_not_a_failure():
    suite = parse(_report.junit(result("error", cause="Forbidden: may not create podgroups")))
    assert counts(suite) == {"tests": 1, "failures": 0, "errors": 1, "skipped": 0}
    assert suite.find("testcase/failure") is None
    assert suite.find("testcase/error").text == "Forbidden: may not create podgroups"


def test_error_before_the_gang_ran_still_gives_a_case():
    """scheduler not running: the verdict is error and there is no gang in the result."""
    r = result("error", cause="scheduler not running: no ready scheduler serves 'volcano'")
    del r["gang"]
    suite = parse(_report.junit(r))
    assert counts(suite) == {"tests": 1, "failures": 0, "errors": 1, "skipped": 0}
    assert suite.find("testcase/error").text.startswith("scheduler not running")
    assert float(suite.find("testcase").get("time")) == 0


def test_control_is_shown_not_asserted():
    suite = parse(_report.junit(result("partial", ok=False, control=True)))
    assert counts(suite) == {"tests": 2, "failures": 1, "errors": 0, "skipped": 0}
    gang, control = suite.findall("testcase")
    assert gang.find("failure") is not None
    assert control.get("name").endswith(" control")
    assert control.find("failure") is None and control.find("error") is None
    assert float(suite.get("time")) == pytest.approx(5.25)

    suite = parse(_report.junit(result("gang_held_pending", ok=True, expected="pending", control=True)))
    assert counts(suite) == {"tests": 2, "failures": 0, "errors": 0, "skipped": 0}


def test_svg_without_pods():
    root = parse(_report.svg({"workload": "pods", "gang_scheduler": "volcano"}))
    assert [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")] == ["no pods"]


def test_write_gives_three_readable_files(tmp_path):
    r = result("error", cause="bad \x1b[0m ]]> \ud800 😀 " + "y" * 5000, text="\x00<x>")
    paths = _report.write(str(tmp_path / "reports"), r)
    assert sorted(paths) == ["json", "junit", "svg"]
    assert paths["json"].endswith("gang-smoke-abc123.json")
    assert json.loads(open(paths["json"], encoding="utf-8").read())["cause"] == r["cause"]
    assert ET.parse(paths["junit"]).getroot().tag == "testsuite"
    assert ET.parse(paths["svg"]).getroot().tag == "{http://www.w3.org/2000/svg}svg"

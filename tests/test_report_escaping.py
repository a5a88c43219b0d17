"""A crafted history cannot inject markup into index.html or break junit.xml: hostile
strings through every field of run.json and events.jsonl come out as text, the page has
only the report's own elements and script, and junit.xml parses."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

# markup, a script end, attribute quotes, an entity, a CDATA end, a comment, controls
# (NUL, vertical tab, ESC, DEL) and a non-BMP character
HOSTILE = ("</script><script>alert(1)</script><img src=x onerror=\"alert(2)\"> "
           "' & &amp; ]]> <!-- --> \x00\x0b\x1b\x7f \U0001F600")
SURROGATE = "\ud800"  # json.loads reads it; no UTF-8 writer can write it
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4",
                "p", "table", "tr", "td", "th", "a", "section", "svg", "text", "rect",
                "polyline", "circle", "line", "br", "span", "i", "script"}
ALLOWED_ATTRS = {"charset", "id", "class", "style", "href", "title", "x", "y", "width",
                 "height", "xmlns", "font-size", "fill", "fill-opacity", "points", "stroke",
                 "stroke-width", "cx", "cy", "r", "x1", "x2", "y1", "y2"}
READY = "document.body.dataset.ready='yes';"


def h(tag: str) -> str:
    return f"{tag}:{HOSTILE}"


def _state(hwm: Any = 3, leader: Any = 1, isr: Any = None) -> dict[str, Any]:
    return {"leader": leader, "leader_epoch": 2, "replicas": [1, 2, 3],
            "isr": [1, 2] if isr is None else isr, "elr": [3], "last_known_elr": [],
            "hwm": hwm, "fenced": [], h("extra"): h("extra-value")}


def _events(run_id: str) -> list[dict[str, Any]]:
    topic = h("topic")
    return [
        {"kind": "run_start", "schema_version": "1.1", h("key"): h("value")},
        {"kind": "step", "index": 0, "phase": "start", "step": {h("step"): h("arg")}},
        {"kind": "fault", "action": h("action"), "params": {h("param"): h("value")}},
        {"kind": "prediction", "index": 0, "allowed": [_state()], "must_survive": [h("id")],
         "hwm_may_move": False, "profile": h("profile")},
        {"kind": "produce", "record_id": h("r1"), "topic": topic, "partition": 0,
         "acks": h("acks")},
        {"kind": "ack", "record_id": h("r1"), "topic": topic, "partition": 0, "acks": "all",
         "offset": 0, "error": None},
        {"kind": "ack", "record_id": h("r2"), "topic": topic, "partition": 0, "acks": "all",
         "offset": 1, "error": None},
        {"kind": "observation", "topic": topic, "partition": 0, "state": _state(), "source": 1},
        {"kind": "consume", "record_id": h("r1"), "topic": topic, "partition": 0, "offset": 0},
        {"kind": "read", "topic": topic, "partition": 0, "records": 1, "complete": True},
        {"kind": "quorum", "state": {h("quorum"): h("value")}},
        {"kind": "check", "name": h("check"), "ok": False, "details": [{h("k"): h("v")}]},
        {"kind": "verdict", "index": None, "verdict": "DIVERGES", "reason": h("reason"),
         "field": h("field")},
        {"kind": h("kind"), h("field"): h("value")},
        # hostile values where the schema has numbers or broker ids: malformed, not drawn
        {"kind": "observation", "topic": topic, "partition": 0, "source": 1,
         "state": _state(hwm=h("hwm"), leader=h("leader"), isr=[h("broker")])},
        {"kind": "fault", "action": "heal", "params": {}, "t_wall": h("t_wall")},
        {"kind": "run_end", "verdict": h("verdict")},
    ]


def _write_run(runs: Path, name: str, **meta: Any) -> Path:
    run_dir = runs / name
    run_dir.mkdir(parents=True)
    run_id = h("run_id")
    (run_dir / "run.json").write_text(json.dumps({
        "schema_version": "1.1", "run_id": run_id + SURROGATE,
        "scenario": {"name": h("scenario") + SURROGATE, "file": h("file")},
        "build": {"version": h("build"), "source": h("source"), "features": [h("feature")]},
        "backend": h("backend"), "seed": h("seed"), "profile": h("profile"),
        "started_wall": 1_795_000_000.5, "ended_wall": 1_795_000_030.5,
        "timings": {h("timing"): h("value")}, "verdict": h("verdict"),
        "versions": {h("library"): h("version")},
        "axes": {axis: {"verdict": h(axis), "reason": h("why"), "as_expected": False,
                        "expected": {"verdict": h("declared"), "reason": h("because")}}
                 for axis in ("release", "kip", "safety")}, **meta}))
    lines = []
    for seq, event in enumerate(_events(run_id)):
        lines.append(json.dumps({"run_id": run_id, "seq": seq, "t_wall": 1_795_000_001.0 + seq,
                                 "t_mono": 5.0 + seq, **event}))
    lines.append(json.dumps({"run_id": run_id, "seq": 99, "t_wall": 1.0, "t_mono": 1.0,
                             "kind": "fault", "action": SURROGATE}))  # orjson refuses it
    (run_dir / "events.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)

    def handle_comment(self, data: str) -> None:
        raise AssertionError(f"a comment got into the page: {data!r}")


def test_hostile_history_is_text_in_the_page_and_valid_xml_in_junit(tmp_path: Path) -> None:
    from harness.report.build import make_report
    from harness.report.text import clean
    runs = tmp_path / "runs"
    _write_run(runs, "crafted <img src=x onerror=alert(3)> & \"q\" 'a'")
    _write_run(runs, "cut-short", ended_wall=None, scenario={"name": h("cut"), "file": None})
    _write_run(runs, "bad-start", started_wall=h("started"))
    summary = make_report([runs], tmp_path / "out")

    verdicts = {Path(r["dir"]).name[:5]: r["verdict"] for r in summary["runs"]}
    # the headline: the worst axis neither clean nor as declared (an unknown verdict fails)
    assert verdicts == {"craft": h("release"), "cut-s": "INCOMPLETE"}
    skipped = {Path(s["dir"]).name: s["reason"] for s in summary["skipped"]}
    assert "started_wall" in skipped["bad-start"]  # named, not shown with a fake date
    assert summary["corrupt_lines"] == 2 * 3  # per run: bad observation, bad t_wall, surrogate

    page = _Page()
    page.feed((tmp_path / "out" / "index.html").read_text(encoding="utf-8"))
    page.close()
    assert {tag for tag, _ in page.tags} <= ALLOWED_TAGS
    assert {a for _, attrs in page.tags for a in attrs} <= ALLOWED_ATTRS
    assert [t for t, _ in page.tags].count("script") == 1 and page.scripts == [READY]
    assert all(attrs["href"].startswith("#run-") for t, attrs in page.tags if t == "a")
    text = "".join(page.text)
    assert "broker 1" in text and "broker 3" in text  # the valid observation is drawn
    shown = clean(HOSTILE)  # controls replaced by U+FFFD, the rest verbatim as text
    for field in ("scenario", "cut", "build", "run_id", "reason", "action", "backend",
                  "profile", "verdict", "r2", "topic"):
        assert f"{field}:{shown}" in text, field
    titles = [attrs.get("title") or "" for _, attrs in page.tags]
    assert any(f"release:{shown}" in t for t in titles)  # the trend cell's hover text

    junit = ET.fromstring((tmp_path / "out" / "junit.xml").read_bytes())
    cases = junit.findall("testcase")
    assert junit.get("tests") == "2" and junit.get("failures") == "2" and len(cases) == 2
    failures = [c.find("failure") for c in cases]
    assert all(f is not None for f in failures)
    messages = " ".join(f.get("message") or "" for f in failures if f is not None)
    assert f"INCOMPLETE (the history was cut short: no run_end): reason:{shown}" in messages
    assert all(shown in (f.get("message") or "") for f in failures if f is not None)
    assert all((c.get("classname") or "").startswith("kafka-chaos.build:") for c in cases)
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["runs"]


def test_report_out_pointing_at_a_file_is_refused_before_spark(tmp_path: Path) -> None:
    from harness.cli.app import main
    out = tmp_path / "a-file"
    out.write_text("x")
    assert main(["report", str(tmp_path), "--out", str(out)]) == 2
    assert out.read_text() == "x"

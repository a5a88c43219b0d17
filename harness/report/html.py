"""index.html: a self-contained page (inline CSS/SVG, no external resources).

Every value from a history goes through `escape` (harness.report.text.html_text); the
only numbers written raw are ones this module computed or that the loaders type-checked.
The page has no inline JSON: one that is added must escape `</` (and `<!--`) inside its
<script>."""

from __future__ import annotations

from typing import Any

from harness.report.text import html_text as escape

COLOURS = {"CONFORMS": "#2e7d32", "DIVERGES": "#c62828", "UNSUPPORTED": "#757575",
           "ERROR": "#6a1b9a", "INCOMPLETE": "#ef6c00", "SAFE": "#2e7d32", "UNSAFE": "#b71c1c",
           "DEVIATES": "#558b2f", "KIP-DIVERGES": "#c62828", "NOT-AS-DECLARED": "#e65100",
           # a run that passed because its failure is declared: never the CONFORMS green
           "KNOWN BUG": "#b71c1c", "DEVIATION": "#558b2f", "AS DECLARED": "#e65100",
           "ok": "#2e7d32", "note": "#757575"}
_CSS = """body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;
margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}
.v{color:#fff;font-weight:bold}a{color:inherit}section{border-top:2px solid #ddd;
margin-top:1.5em}.small{font-size:12px;color:#555}svg{background:#fafafa;border:1px solid #ddd}"""
_PARTLY = "#f9a825"  # some judged runs of the day did not conform
_HEALS = {"heal": None, "restart": "kill", "resume": "pause"}


def render(summary: dict[str, Any], timelines: dict[str, list[dict[str, Any]]]) -> str:
    """The page; `timelines` are keyed by run directory (run ids may repeat)."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>kafka-chaos report"
             f"</title><style>{_CSS}</style></head><body><h1>kafka-chaos conformance report</h1>",
             _overview(summary), _matrix(summary), _flakiness(summary), _trends(summary),
             _skipped(summary)]
    parts += [_run(r, timelines.get(r["dir"], [])) for r in summary["runs"]]
    parts.append("<script>document.body.dataset.ready='yes';</script></body></html>")
    return "\n".join(parts)


def _badge(verdict: str, anchor: str | None = None) -> str:
    text = escape(verdict)
    if anchor:
        text = f"<a href='#{escape(anchor)}'>{text}</a>"
    return f"<td class='v' style='background:{COLOURS.get(verdict, '#999')}'>{text}</td>"


def _overview(s: dict[str, Any]) -> str:
    return (f"<p>{len(s['runs'])} runs, {len(s['skipped'])} histories skipped, "
            f"{s['corrupt_lines']} unreadable or malformed event lines ignored.</p>")


def _matrix(s: dict[str, Any]) -> str:
    builds = sorted({b for cells in s["matrix"].values() for b in cells})
    head = "".join(f"<th>{escape(b)}</th>" for b in builds)
    rows = []
    for scenario, cells in sorted(s["matrix"].items()):
        tds = "".join(_cell(cells[b]) if b in cells else "<td></td>" for b in builds)
        rows.append(f"<tr><th>{escape(scenario)}</th>{tds}</tr>")
    return (f"<h2>Build × scenario</h2><p class='small'>Each cell: the run's verdict (the "
            "worst axis neither clean nor as the scenario declares for that build; else, "
            "when an axis failed as declared, what that is: KNOWN BUG or DEVIATION and its "
            "name, or AS DECLARED; else CONFORMS), then its three axes (release / kip / "
            "safety). Italics: as the scenario declares for that build; ✗: neither clean "
            "nor as declared.</p>"
            f"<table id='matrix'><tr><th>scenario</th>{head}</tr>" + "".join(rows) + "</table>")


def _cell(cell: dict[str, Any]) -> str:
    axes = cell.get("axes")
    if not axes:
        return _badge(cell["verdict"], cell["anchor"])
    spans = "".join(_axis_span(a, axes[a]) for a in ("release", "kip", "safety"))
    label = cell.get("label") or cell["verdict"]
    # A declared failure says what it is, in its colour and with its name (the headline
    # after the label), so no cell reads CONFORMS above a red axis.
    head = (f"<span class='v' style='background:{COLOURS.get(label, '#999')};padding:0 3px'>"
            f"{escape(label)}</span> {escape(cell.get('what') or '')}"
            if label != cell["verdict"] else escape(label))
    return (f"<td class='axes'><a href='#{escape(cell['anchor'])}' "
            f"title='{escape(cell['headline'])}'>{head}</a><br>{spans}</td>")



def _axis_span(axis: str, v: dict[str, Any]) -> str:
    style = "font-style:italic;" if v.get("expected") else ""
    mark = "" if v.get("as_expected") else " ✗"
    return (f"<span class='v' title='{escape(axis)}: {escape(v.get('reason') or '')}' "
            f"style='{style}background:{COLOURS.get(v['verdict'], '#999')};padding:0 3px;"
            f"margin-right:2px'>{escape(v['verdict'])}{mark}</span>")


def _flakiness(s: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{escape(f['scenario'])}</td><td>{escape(f['build'])}</td><td>{f['runs']}</td>"
        f"<td>{escape(', '.join(f'{k} {v}' for k, v in sorted(f['verdicts'].items())))}</td>"
        f"<td>{'FLAKY' if f['flaky'] else ''}</td></tr>" for f in s["flakiness"])
    return ("<h2>Repeated runs</h2><table><tr><th>scenario</th><th>build</th><th>runs</th>"
            f"<th>verdicts</th><th></th></tr>{rows}</table>")


def _trends(s: dict[str, Any]) -> str:
    rows = "".join(f"<tr><td>{escape(b)}</td>{''.join(map(_trend_cell, days))}</tr>"
                   for b, days in s["trends"].items())
    return ("<h2>Trends per build</h2><p>One cell per day with runs, oldest first: "
            "share of judged runs that conformed, every axis clean or as declared (hover "
            "for the verdicts).</p>"
            f"<table class='trends'>{rows}</table>")


def _trend_cell(day: dict[str, Any]) -> str:
    rate = day["conform_rate"]
    colour = ("#999" if rate is None else COLOURS["CONFORMS"] if rate == 1 else
              _PARTLY if rate >= 0.5 else COLOURS["DIVERGES"])
    label = "n/a" if rate is None else f"{rate:.0%}"
    detail = ", ".join(f"{k} {v}" for k, v in sorted(day["verdicts"].items()))
    return (f"<td class='v' style='background:{colour}' title='{escape(detail)}'>"
            f"{escape(day['day'])}<br>{label} of {day['runs']}</td>")


def _skipped(s: dict[str, Any]) -> str:
    if not s["skipped"]:
        return ""
    rows = "".join(f"<tr><td>{escape(x['dir'])}</td><td>{escape(x['reason'])}</td></tr>"
                   for x in s["skipped"])
    return f"<h2>Skipped histories</h2><table>{rows}</table>"


def _run(r: dict[str, Any], points: list[dict[str, Any]]) -> str:
    head = (f"<section id='{escape(r['anchor'])}'><h3>{escape(r['scenario'])} on "
            f"{escape(r['build'])}</h3><table><tr>{_badge(r.get('label') or r['verdict'])}<td>"
            f"{escape(r['headline'])}</td></tr></table><p class='small'>"
            f"{escape(r['lockstep'])}"
            + (f": {escape(r['first_divergence'])}" if r["first_divergence"] else "")
            + f"</p><p class='small'>run "
            f"{escape(r['run_id'])}, backend {escape(str(r['backend']))}, profile "
            f"{escape(str(r['profile']))}, {r['events']} events</p>")
    return (head + _axes(r) + _timeline(points, r.get("trace") or []) + _traffic(r)
            + _trace(r) + _checks(r["checks"]) + "</section>")


def _num(value: Any) -> str:
    """A number the report computed or type-checked (build.run_traffic), grouped."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def _traffic(r: dict[str, Any]) -> str:
    """The run's client traffic (docs/TRAFFIC.md), beside its timeline: throughput,
    acknowledged and lost records (the first lost ids), and each check's result; nothing
    for a run without traffic."""
    t = r.get("traffic")
    if not t:
        return ""
    tp = t.get("throughput") or {}
    lost = t.get("lost") or {}
    lc = lost.get("counts") or {}
    rows = [("sent", _num(tp.get("sent"))), ("acknowledged", _num(tp.get("acked"))),
            ("failed sends", _num(tp.get("failed"))), ("polled", _num(tp.get("polled"))),
            ("records/s sent", _num(tp.get("sent_per_s"))),
            ("records/s acknowledged", _num(tp.get("acked_per_s"))),
            ("acks=all records/s acknowledged", _num(tp.get("acked_all_per_s"))),
            ("producing, s", _num(tp.get("producing_s"))),
            ("lost (acknowledged, not in the final read)", _num(lc.get("lost"))),
            ("lost beyond the fault budget", _num(lc.get("counted"))),
            ("lost, excused (acks 0/1 or within the budget)", _num(lc.get("excused")))]
    table = "".join(f"<tr><th>{escape(k)}</th><td class='num'>{v}</td></tr>" for k, v in rows)
    ids = lost.get("ids") or []
    named = ""
    if ids:
        more = int(lc.get("lost") or 0) - len(ids)
        named = ("<p class='small traffic-lost'>lost ids: " + ", ".join(
            escape(i["id"]) + (" (excused)" if i.get("excused") else "") for i in ids)
            + (f" and {more:,} more" if more > 0 else "") + "</p>")
    checks = "".join(
        f"<tr><td>{escape(c['name'])}</td>"
        + _badge("ok" if c["ok"] else "UNSAFE" if c["unsafe"] else "note")
        + f"<td>{escape(', '.join(f'{k} {_num(v)}' for k, v in c['counts'].items()))}</td></tr>"
        for c in t.get("checks") or [])
    problems = "".join(f"<p class='small'>traffic problem: {escape(p)}</p>"
                       for p in t.get("problems") or [])
    source = ("re-judged now" if t.get("rejudged") else "as the run recorded them") + (
        f", {escape(t['engine'])}" if t.get("engine") else "") + (
        f", {_num(t['skipped_lines'])} ill-typed line(s) skipped" if t.get("skipped_lines")
        else "")
    return (f"<div class='traffic'><h4>client traffic</h4><table class='traffic-throughput'>"
            f"{table}</table>{named}{problems}<table class='traffic-checks'><tr><th>check</th>"
            f"<th>result</th><th>counts</th></tr>{checks}</table><p class='small'>checks "
            f"{source} (docs/TRAFFIC.md)</p></div>")


def _axes(r: dict[str, Any]) -> str:
    if not r.get("axes"):
        note = r.get("axes_note") or "no axes (an older or unfinished run)"
        return f"<p class='small'>axes: {escape(note)}</p>"
    rows = "".join(
        f"<tr><th>{escape(a)}</th>{_badge(v['verdict'])}<td>{escape(v['reason'])}"
        + (f" <i>(declared: {escape(str(v['expected'].get('verdict')))}: "
           f"{escape(str(v['expected'].get('reason')))})</i>" if v.get("expected") else "")
        + "</td></tr>" for a, v in r["axes"].items())
    return f"<table class='axes'>{rows}</table>"


def _trace(r: dict[str, Any]) -> str:
    found = r.get("trace") or []
    if not found:
        return ""
    rows = "".join(f"<tr><td>{escape(str(f.get('controller')))}</td><td>"
                   f"{escape(str(f.get('offset')))}</td><td>{escape(str(f.get('rule')))}</td>"
                   f"<td>{escape(str(f.get('detail')))}</td></tr>" for f in found[:200])
    return (f"<h4>trace violations: {len(found)}</h4><table><tr><th>controller</th>"
            f"<th>offset</th><th>rule</th><th>detail</th></tr>{rows}</table>")


def _checks(checks: dict[str, list[dict[str, Any]]]) -> str:
    out = []
    for name, items in sorted(checks.items()):
        if not items:
            continue
        cols = sorted({k for item in items for k in item})
        rows = "".join("<tr>" + "".join(f"<td>{escape(str(i.get(c)))}</td>" for c in cols)
                       + "</tr>" for i in items[:200])
        out.append(f"<h4>{escape(name)}: {len(items)}</h4><table><tr>"
                   + "".join(f"<th>{escape(c)}</th>" for c in cols) + f"</tr>{rows}</table>")
    return "".join(out) or "<p class='small'>data checks: no findings</p>"


def _timeline(points: list[dict[str, Any]],
              trace: list[dict[str, Any]] | None = None) -> str:
    partitions = {p.get("partition") for p in points if p["kind"] == "observation"} - {None}
    # One partition's lanes: the first (a topic of several partitions shows partition 0).
    points = [p for p in points if p.get("partition") in (None, 0)]
    obs = [p for p in points if p["kind"] == "observation" and p.get("state")]
    if not obs:
        return "<p class='small'>no observations</p>"
    note = "" if len(partitions) < 2 else (
        f"<p class='small'>partition 0 of {len(partitions)}: the timeline shows the first "
        "partition; the verdicts and checks cover every one</p>")
    t0 = min(p["t_wall"] for p in points)
    t1 = max(p["t_wall"] for p in points) or t0 + 1
    width, left = 900, 60
    brokers = sorted({b for p in obs for key in ("isr", "elr", "last_known_elr")
                      for b in (p["state"].get(key) or [])} |
                     {p["state"]["leader"] for p in obs if (p["state"].get("leader") or -1) >= 0})
    rows = len(brokers)
    height = 30 + rows * 22 + 110

    def x(t: float) -> float:
        return float(left + (t - t0) / max(t1 - t0, 1e-6) * (width - left - 10))

    svg = [f"<svg width='{width}' height='{height}' xmlns='http://www.w3.org/2000/svg'>"]
    svg += _fault_bands(points, x, height)
    for i, b in enumerate(brokers):
        y = 25 + i * 22
        svg.append(f"<text x='5' y='{y + 12}' font-size='11'>broker {escape(b)}</text>")
        for cur, nxt in zip(obs, obs[1:] + [None], strict=False):
            st = cur["state"]
            colour = _colour(st, b)
            if colour:
                x0, x1 = x(cur["t_wall"]), x(nxt["t_wall"] if nxt else t1)
                svg.append(f"<rect x='{x0:.1f}' y='{y}' width='{max(x1 - x0, 1):.1f}' "
                           f"height='16' fill='{colour}'/>")
    svg += _hwm_plot(points, obs, x, 30 + rows * 22, 90)
    svg += _trace_marks(trace or [], x, t0, t1, height)
    svg.append("</svg>")
    legend = ("<p class='small'>blue leader, green ISR, orange ELR, violet LastKnownELR; grey "
              "bands: faults; line: observed HWM, dots: predicted HWM; red lines: trace "
              "violations at the time of their metadata record</p>")
    return note + "".join(svg) + legend


def _colour(state: dict[str, Any], broker: int) -> str | None:
    if state.get("leader") == broker:
        return "#1565c0"
    for key, colour in (("isr", "#66bb6a"), ("elr", "#ffa726"), ("last_known_elr", "#ce93d8")):
        if broker in (state.get(key) or []):
            return colour
    return None


def _fault_bands(points: list[dict[str, Any]], x: Any, height: int) -> list[str]:
    out: list[str] = []
    open_at: list[float] = []
    for p in points:
        if p["kind"] != "fault":
            continue
        action = p.get("action") or ""
        if action in _HEALS and open_at:
            start = open_at.pop(0)
            band = max(x(p["t_wall"]) - x(start), 1)
            out.append(f"<rect x='{x(start):.1f}' y='0' width='{band:.1f}'"
                       f" height='{height}' fill='#000' fill-opacity='0.07'/>")
        elif action not in _HEALS:
            open_at.append(p["t_wall"])
        out.append(f"<text x='{x(p['t_wall']):.1f}' y='10' font-size='9'>{escape(action)}</text>")
    return out


def _hwm_plot(points: list[dict[str, Any]], obs: list[dict[str, Any]], x: Any, top: int,
              h: int) -> list[str]:
    seen = [(p["t_wall"], p["state"]["hwm"]) for p in obs if p["state"].get("hwm") is not None]
    predicted = [(p["t_wall"], a[0]["hwm"]) for p in points if p["kind"] == "prediction"
                 for a in [p.get("allowed") or []] if a and a[0].get("hwm") is not None]
    values = [v for _, v in seen + predicted] or [0]
    hi = max(values) or 1

    def y(v: float) -> float:
        return top + h - 10 - v / hi * (h - 20)

    out = [f"<text x='5' y='{top + 15}' font-size='11'>HWM (max {hi})</text>"]
    if seen:
        pts = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in seen)
        out.append(f"<polyline points='{pts}' fill='none' stroke='#333' stroke-width='1.5'/>")
    out += [f"<circle cx='{x(t):.1f}' cy='{y(v):.1f}' r='3' fill='#c62828'/>"
            for t, v in predicted]
    return out


def _trace_marks(trace: list[dict[str, Any]], x: Any, t0: float, t1: float,
                 height: int) -> list[str]:
    """A red line per trace violation at its record's append time (clamped to the plot)."""
    out = []
    for f in trace[:200]:
        t = f.get("t_wall")
        if not isinstance(t, int | float) or isinstance(t, bool):
            continue
        xv = x(min(max(float(t), t0), t1))
        out.append(f"<line x1='{xv:.1f}' x2='{xv:.1f}' y1='0' y2='{height}' stroke='#d50000' "
                   f"stroke-width='2'><title>{escape(str(f.get('rule')))} at offset "
                   f"{escape(str(f.get('offset')))}: {escape(str(f.get('detail')))}</title>"
                   "</line>")
    return out

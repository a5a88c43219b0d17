"""certify.md, certify.json, certify.html and junit.xml of a certify campaign: the release's
answer at the top (compare.headline_lines), then each part. A cell whose run failed as
declared shows its label (KNOWN BUG id / DEVIATION id / AS DECLARED), never CONFORMS."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from harness.certify import compare, confirm, plan, rejudge, rereplay
from harness.certify.state import CertifyState


def where(m: Mapping[str, Any]) -> str:
    """Where the campaign's calls ran: one machine (one cluster at a time) or a Spark
    master (``--master``), in call order; a campaign from before this line: not recorded."""
    calls = m.get("where") or []
    if not calls:
        return "Where: not recorded (a campaign from before this line)."
    said = [c if c == "one machine" else f"Spark {c}" for c in calls]
    slots = m.get("slots")
    how = ["one machine runs one cluster at a time"] if "one machine" in calls else []
    if any(c != "one machine" for c in calls):
        how.append("Spark runs as many as its executors' slots"
                   + (f", {slots} when the plan was made" if slots else ""))
    return f"Where: {len(calls)} call(s): {', '.join(said)} ({'; '.join(how)})."


def shown(cell: Mapping[str, Any] | None) -> str:
    return "-" if cell is None else compare.shown(cell)


def split(state: CertifyState) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cells = [r for k, r in state.items.items()
             if k.split("/")[0] in ("matrix", "matrix-confirm", "upgrade")]
    searches = [r for k, r in state.items.items() if k.split("/")[0] in ("diff", "hunt")]
    return cells, searches


def rejudged(search: Mapping[str, Any],
             now: Mapping[tuple[str, str], Mapping[str, Any]] | None = None
             ) -> dict[str, Any]:
    """A diff record with each finding no known bug named when it was recorded looked up
    in today's catalog (reference/releases/known_bugs.py ``naming_diff_finding``, on the
    finding file's signature and detail): a report written again after the catalog learned
    a bug says so ("named by the catalog now"), as `report --campaign` does. One still
    unnamed that today's code replayed (``now``: role, key -> that record,
    certify/rereplay.py): ``compare.GONE`` when its class did not come again, else looked
    up again with today's signature and detail. Other records as they are; a finding file
    gone or unreadable: as recorded."""
    if search.get("part") == "hunt":  # recorded before compare.hunt_bug: "known" for its id
        return {**search, "findings": [
            {**f, "known_bug": compare.hunt_bug(str(f.get("why")))}
            if f.get("known_bug") == "known"
            else f for f in search.get("findings", ())]}
    if search.get("part") != "diff":
        return dict(search)
    from harness.cluster.builds import version_tuple
    from reference.releases.known_bugs import naming_diff_finding
    out = []
    for f in search.get("findings", ()):
        if not f.get("known_bug") and f.get("file"):
            try:
                doc = json.loads(Path(f["file"]).read_text())["finding"]
                bug = naming_diff_finding(version_tuple(str(search["build"])),
                                          str(doc["signature"]), doc.get("detail"))
            except (OSError, ValueError, KeyError, TypeError):
                bug = None
            if bug is not None:
                f = {**f, "known_bug": bug.id, "cls": "known-bug", "rejudged": True}
        rec = (now or {}).get((str(search["role"]), str(f["key"])))
        if rec is not None and not f.get("known_bug"):
            f = _replayed_now(f, rec, version_tuple(str(search["build"])))
        out.append(f)
    return {**search, "findings": out}


def _replayed_now(f: Mapping[str, Any], rec: Mapping[str, Any], version: Any
                  ) -> dict[str, Any]:
    """An unnamed finding as its replay with today's code says (rejudged)."""
    from reference.releases.known_bugs import naming_diff_finding
    if rec.get("reproduced") is False:
        return {**f, "cls": compare.GONE, "rejudged": True, "now": rec.get("text")}
    bug = naming_diff_finding(version, str(rec["signature"]), rec.get("detail")) \
        if rec.get("reproduced") and rec.get("signature") else None
    if bug is None:
        return dict(f)
    return {**f, "known_bug": bug.id, "cls": "known-bug", "rejudged": True,
            "now": f"named by today's replay ({rec.get('text')})"}


def model(state: CertifyState) -> dict[str, Any]:
    """Everything the report shows, as certify.json holds it."""
    builds = {"old": state.settings["old"], "new": state.settings["new"]}
    cells, searches = split(state)
    cells = [rejudge.cell(c) for c in cells]
    searches = [rejudged(s, rereplay.current(state.items, rereplay.code_id()))
                for s in searches]
    confirms = confirm.records(state.items)
    a = compare.answer(cells, searches, builds, confirms)
    incomplete = [p for p in plan.PARTS if not state.part(p)["done"]]
    return {"builds": builds, "settings": state.settings, "sessions": state.sessions,
            "incomplete_parts": incomplete, "top": compare.headline_lines(a, builds),
            "answer": a.to_json(), "budget": state.plan.get("split"),
            "rule": state.plan.get("rule", []), "parts": state.parts,
            "where": state.plan.get("where", []),
            "left_out": state.plan.get("left_out", {}), "cells": cells,
            "searches": searches, "confirms": confirms}


def checked(m: Mapping[str, Any], part: str, role: str, key: str) -> str:
    """What the confirmation of a finding one build met says (certify/confirm.py), for the
    per-part sections: "" when it was not confirmed (met on both builds, or not yet)."""
    runs = compare.confirmation_table(m.get("confirms", ())).get((part, key), {})
    how = compare.confirmation(runs, role)
    if not runs:
        return ""
    b = m["builds"]
    said = "; ".join(f"{b[r]} {runs[r]['text']}" for r in ("old", "new") if r in runs)
    return f"{how or 'confirming'}: {said}"


def _pairs(cells: list[dict[str, Any]], part: str) -> list[tuple[str, dict[str, Any]]]:
    out: dict[str, dict[str, Any]] = {}
    for c in cells:
        if c["part"] == part and not c.get("confirm"):  # re-runs: in the answer's lines
            out.setdefault(c["scenario"], {})[c["role"]] = c
    return sorted(out.items())


def markdown(m: dict[str, Any]) -> str:
    b = m["builds"]
    lines = [f"# kafka-chaos certify: Kafka {b['new']} against {b['old']}", ""]
    if m["incomplete_parts"]:
        lines += [f"**INCOMPLETE**: parts not finished: {', '.join(m['incomplete_parts'])} "
                  "(run the same command again to resume)", ""]
    lines += [f"- {t}" if i else f"**{t}**" for i, t in enumerate(m["top"])]
    lines += ["", "## Budget", "", *(f"    {r}" for r in m["rule"]), "", where(m), ""]
    for part in ("matrix", "upgrade"):
        lines += [f"## {part}", "", f"| scenario | {b['old']} | {b['new']} |", "|---|---|---|"]
        for name, pair in _pairs(m["cells"], part):
            lines.append(f"| {name} | {shown(pair.get('old'))} | {shown(pair.get('new'))} |")
        for name, why in m["left_out"].get(part, {}).items():
            lines.append(f"| {name} | not planned: {why} | not planned: {why} |")
        lines += [""]
    for part in ("diff", "hunt"):
        lines += [f"## {part}", ""]
        for s in (s for s in m["searches"] if s["part"] == part):
            lines.append(f"- **{s['build']}**: {json.dumps(s['stats'])}; deviations needed: "
                         f"{', '.join(s['deviations']) or 'none'}"
                         + (f"; coverage {s['coverage']}" if s.get("coverage") else ""))
            for f in s["findings"]:
                again = checked(m, part, s["role"], f["key"])
                lines.append(f"  - `{f['key']}`: {f.get('known_bug') or f.get('cls')}; "
                             f"{f.get('repro', '')}"
                             + (f"; **checked on both builds: {again}**" if again else ""))
        lines.append("")
    return "\n".join(lines) + "\n"


def page(m: dict[str, Any]) -> str:
    b = m["builds"]
    e = html.escape
    top = m["top"]
    css = ("body{font-family:sans-serif;margin:1.5em;max-width:75em}"
           "#answer{border:2px solid #333;padding:.6em 1em;font-size:1.05em}"
           "#answer p{margin:.25em 0}.reg{color:#a00;font-weight:bold}.fix{color:#060}"
           "table{border-collapse:collapse}td,th{border:1px solid #aaa;padding:2px 6px}"
           ".clean{background:#dfd}.declared{background:#ffd}.failing{background:#fcc}"
           ".unjudged{background:#eee}pre{white-space:pre-wrap}")
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>certify {e(b['new'])} "
           f"against {e(b['old'])}</title><style>{css}</style></head><body data-ready='yes'>",
           f"<h1>{e(top[0])}</h1>"]
    if m["incomplete_parts"]:
        out.append(f"<p class='reg'>INCOMPLETE: parts not finished: "
                   f"{e(', '.join(m['incomplete_parts']))}</p>")
    out.append("<div id='answer'>")
    for t in top[1:]:
        cls = "reg" if t.startswith("REGRESSIONS") and not t.startswith("REGRESSIONS (0)") \
            else "fix" if t.startswith("FIXES") else ""
        out.append(f"<p class='{cls}'>{e(t)}</p>")
    out.append("</div><h2>Budget</h2><pre>" + e("\n".join(m["rule"])) + "</pre>"
               f"<p>{e(where(m))}</p>")
    for part in ("matrix", "upgrade"):
        out.append(f"<h2>{part}</h2><table id='{part}'><tr><th>scenario</th>"
                   f"<th>{e(b['old'])}</th><th>{e(b['new'])}</th></tr>")
        for name, pair in _pairs(m["cells"], part):
            tds = []
            for role in ("old", "new"):
                c = pair.get(role)
                st = compare.cell_status(c["verdict"], c.get("label", "")) if c else "unjudged"
                tds.append(f"<td class='{st}' title={quoteattr(c.get('text', '') if c else '')}>"
                           f"{e(shown(c))}</td>")
            out.append(f"<tr><td>{e(name)}</td>{''.join(tds)}</tr>")
        out.append("</table>")
    for part in ("diff", "hunt"):
        out.append(f"<h2>{part}</h2><ul>")
        for s in (s for s in m["searches"] if s["part"] == part):
            items = "".join(f"<li><code>{e(f['key'])}</code>: "
                            f"{e(str(f.get('known_bug') or f.get('cls')))}"
                            + (f"; <b>checked on both builds: {e(again)}</b>"
                               if (again := checked(m, part, s["role"], f["key"])) else "")
                            + "</li>" for f in s["findings"])
            out.append(f"<li><b>{e(s['build'])}</b>: {e(json.dumps(s['stats']))}; deviations "
                       f"needed: {e(', '.join(s['deviations']) or 'none')}<ul>{items}</ul></li>")
        out.append("</ul>")
    return "\n".join(out) + "</body></html>\n"


def junit(m: dict[str, Any]) -> str:
    """One testcase per scenario cell pair and per search finding on NEW: a regression or a
    new (unexplained) finding fails; a cell not judged is skipped."""
    a = m["answer"]
    cases = []
    for part in ("matrix", "upgrade"):
        for name, pair in _pairs(m["cells"], part):
            fail = [r for r in a["regressions"] if r.startswith(f"{part} {name}:")] + \
                   [f for f in a["new_findings"] if f.startswith(f"{part} {name} on")]
            body = "".join(f"<failure message={quoteattr(t)}/>" for t in fail)
            if not fail and all(compare.cell_status(c["verdict"], c.get("label", ""))
                                == compare.UNJUDGED for c in pair.values()):
                body = f"<skipped message={quoteattr(shown(pair.get('new')))}/>"
            cases.append(f"<testcase classname='certify.{part}' name={quoteattr(name)}>"
                         f"{body}</testcase>")
    for line in [r for r in a["regressions"] if " finding on " in r or
                 r.startswith("known bug")] + \
            [f for f in a["new_findings"] if f.startswith(("diff", "hunt"))]:
        cases.append(f"<testcase classname='certify.search' name={quoteattr(line[:120])}>"
                     f"<failure message={quoteattr(line)}/></testcase>")
    failures = sum("<failure" in c for c in cases)
    skipped = sum("<skipped" in c for c in cases)
    return (f"<?xml version='1.0' encoding='utf-8'?>\n<testsuite name='certify "
            f"{m['builds']['new']} against {m['builds']['old']}' tests='{len(cases)}' "
            f"failures='{failures}' skipped='{skipped}'>\n" + "\n".join(cases)
            + "\n</testsuite>\n")


def write(directory: Path, state: CertifyState) -> dict[str, Any]:
    m = model(state)
    (directory / "certify.json").write_text(json.dumps(m, indent=1, sort_keys=True) + "\n")
    (directory / "certify.md").write_text(markdown(m))
    (directory / "certify.html").write_text(page(m))
    (directory / "junit.xml").write_text(junit(m))
    return m

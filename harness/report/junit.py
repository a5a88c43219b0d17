"""junit.xml: one testcase per scenario x build; failures carry the first divergence.

Only CONFORMS passes and UNSUPPORTED is skipped: any other verdict (DIVERGES, ERROR,
INCOMPLETE, none, or one this report does not know) fails, so an odd run.json cannot
turn into a green build. A conforming run fails too when one of its three axes (release,
kip, safety) is neither clean nor the verdict its scenario declares for the build.
Every value from a history is escaped for XML."""

from __future__ import annotations

from typing import Any

from harness.report.text import xml_attr, xml_text


def render(summary: dict[str, Any]) -> str:
    cases = []
    failures = skipped = 0
    for scenario, builds in sorted(summary["matrix"].items()):
        for build, cell in sorted(builds.items()):
            body = ""
            if cell["verdict"] == "UNSUPPORTED":
                skipped += 1
                body = f"<skipped message={xml_attr(cell['reason'] or 'UNSUPPORTED')}/>"
            elif cell["verdict"] != "CONFORMS" or _axis_failures(cell):
                failures += 1
                why = "; ".join(x for x in (f"{cell['verdict']}: {cell['reason'] or 'see run'}",
                                            _axis_failures(cell)) if x)
                body = (f"<failure message={xml_attr(why)}>run {xml_text(cell['run_id'])}"
                        "</failure>")
            cases.append(f"  <testcase classname={xml_attr('kafka-chaos.' + build)} "
                         f"name={xml_attr(f'{scenario} [{build}]')}>{body}</testcase>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuite name="kafka-chaos" tests="{len(cases)}" failures="{failures}" '
            f'skipped="{skipped}">\n' + "\n".join(cases) + "\n</testsuite>\n")


def _axis_failures(cell: dict[str, Any]) -> str:
    axes = cell.get("axes") or {}
    return "; ".join(f"{a} {v['verdict']}: {v['reason'] or 'see run'}"
                     for a, v in sorted(axes.items()) if not v.get("as_expected"))

"""junit.xml: one testcase per scenario x build, judged by the run's headline
(harness/judge/headline.py: from its three axes and the scenario's declarations).

Only CONFORMS passes and UNSUPPORTED is skipped: any other headline (UNSAFE, DIVERGES,
KIP-DIVERGES, NOT-AS-DECLARED, ERROR, INCOMPLETE, none, or one this report does not know)
fails, with the headline and each failing axis's reason as its message, so an odd
run.json cannot turn into a green build. Every value from a history is escaped for XML."""

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
                body = f"<skipped message={xml_attr(cell['headline'])}/>"
            elif cell["verdict"] != "CONFORMS" or not cell["passed"]:
                failures += 1
                body = (f"<failure message={xml_attr(cell['message'])}>run "
                        f"{xml_text(cell['run_id'])}</failure>")
            cases.append(f"  <testcase classname={xml_attr('kafka-chaos.' + build)} "
                         f"name={xml_attr(f'{scenario} [{build}]')}>{body}</testcase>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuite name="kafka-chaos" tests="{len(cases)}" failures="{failures}" '
            f'skipped="{skipped}">\n' + "\n".join(cases) + "\n</testsuite>\n")

"""junit.xml: one testcase per scenario x build; failures carry the first divergence."""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import quoteattr


def render(summary: dict[str, Any]) -> str:
    cases = []
    failures = skipped = 0
    for scenario, builds in sorted(summary["matrix"].items()):
        for build, cell in sorted(builds.items()):
            name = quoteattr(f"{scenario} [{build}]")
            body = ""
            if cell["verdict"] in ("DIVERGES", "ERROR", "DID NOT FINISH"):
                failures += 1
                msg = quoteattr(f"{cell['verdict']}: {cell['reason'] or 'see run'}")
                body = f"<failure message={msg}>run {cell['run_id']}</failure>"
            elif cell["verdict"] == "UNSUPPORTED":
                skipped += 1
                body = f"<skipped message={quoteattr(cell['reason'] or 'UNSUPPORTED')}/>"
            cases.append(f'  <testcase classname="kafka-chaos.{build}" name={name}>{body}'
                         "</testcase>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuite name="kafka-chaos" tests="{len(cases)}" failures="{failures}" '
            f'skipped="{skipped}">\n' + "\n".join(cases) + "\n</testsuite>\n")

"""The draft's impact (the acks=all records lost, the other safety rules broken) and how the
harness found it."""

from __future__ import annotations

from typing import Any

from harness.judge.headline import headline
from harness.report.finding.actual import SHOW
from harness.report.finding.runs import Evidence


def _lost_all(ev: Evidence) -> list[dict[str, Any]]:
    for d in ev.result.axes["safety"].details:
        if d.get("rule") == "acked-record-durable":
            return list(d.get("records") or [])
    return []


def _impact(ev: Evidence, lost: list[dict[str, Any]]) -> list[str]:
    out = []
    if lost:
        ids = ", ".join(f"`{r['record_id']}`" for r in lost[:SHOW * 4])
        out.append(f"- {len(lost)} record(s) acknowledged to acks=all producers are gone from "
                   f"every replica: {ids}.")
    for d in ev.result.axes["safety"].details:
        if d.get("rule") != "acked-record-durable":
            out.append(f"- safety {d.get('rule')}: {d.get('why')}")
    if not out:
        out.append("- No safety rule broken in the run: "
                   + "; ".join(f"{a} {ev.result.axes[a].verdict}" for a in ev.failing))
    return out


def _how_found(ev: Evidence) -> list[str]:
    how = ("a generated schedule of `kafka-chaos fuzz`, shrunk to the steps above"
           if ev.minimal is not None else f"the scenario `{ev.result.scenario}`")
    return [f"kafka-chaos (a harness that runs real KRaft clusters, injects faults and judges "
            f"each run against a reference model of KIP-966) ran {how} on Kafka {ev.version} "
            f"(run `{ev.run_dir.name}`). Each step's settled state was compared with the "
            f"build's own profile ({ev.result.profile}) and with the accepted KIP (kip966); "
            "the controller's metadata log was archived and every committed record replayed "
            "against the KIP's invariants; acknowledged records were read back at the end.",
            "", f"Headline: {headline(ev.result.axes).text}."]

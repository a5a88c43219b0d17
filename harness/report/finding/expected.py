"""The draft's expected behaviour: every failing axis with the rules it broke and their
citations (the trace rules of reference.trace.rules, the cited deviations, the KIP-966
sentences behind the data checks and safety rules)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from harness.report.finding.runs import Evidence
from reference.trace.rules import RULES

#: What a data check or safety rule rests on in KIP-966 (seeds/003), for the rules that
#: are not trace rules (those carry their own citation: reference.trace.rules.RULES).
KIP_GOAL = ("seeds/003 'Eligible Leader Replicas': \"Our ultimate goal is to elect a leader "
            "without data loss or HWM moving backward when we only have min ISR - 1 unclean "
            "shutdowns.\"")
SAFETY_CITATIONS: dict[str, str] = {
    "acked-record-durable": KIP_GOAL + " 'ELR invariants': \"The member of ELR should have "
                            "the data at least to HWM.\"",
    "acked-record-hidden": KIP_GOAL + " (the HWM moved back below acked records, which a "
                           "healed cluster then showed)",
    "consumer-hwm-monotonic": KIP_GOAL,
    "HwmMonotonic": KIP_GOAL,
    "nothing-visible-above-hwm": "seeds/003 'Proposed Changes': the high watermark \"represents "
                                 "the highest offset of the replicated log known to be "
                                 "committed\"; consumers read below it only.",
    "sampled-state-invariants": "the observed-state invariants (reference/model/invariants.py "
                                "OBSERVED), each cited below by its trace rule.",
    "trace-invariants": "the KIP-966 invariants of the committed metadata (reference/trace/"
                        "rules.py), each cited below.",
}


def _expected(ev: Evidence) -> list[str]:
    out = ["The KIP-966 rules the run broke, per failing axis (README 'Three verdicts per "
           "run'), each with its citation (seeds/003 is the accepted KIP text):", ""]
    for axis in ev.failing:
        v = ev.result.axes[axis]
        out.append(f"### {axis}: {v.verdict}")
        if v.expected is not None:
            out.append("Declared for this build by the scenario (`expect:`): "
                       f"{v.expected['verdict']} ({v.expected['reason']}).")
        out.append("")
        for name, citation in _rules(axis, v.reason, v.details):
            out.append(f"- **{name}**: {citation}")
        out.append("")
    return out


def _rules(axis: str, reason: str, details: Iterable[Mapping[str, Any]]
           ) -> list[tuple[str, str]]:
    """(rule name, citation) of an axis's verdict, each once, in order of appearance."""
    seen: dict[str, str] = {}
    details = list(details)
    if axis == "release":
        step = re.match(r"step (\d+) (\w+): (.*)", reason)
        if step:
            seen[f"lockstep step {step.group(1)} ({step.group(2)})"] = (
                f"{step.group(3)}: the build's own profile ({axis} axis) predicts otherwise")
        for d in details:
            seen.setdefault(d["rule"], _citation(d["rule"], d.get("citation")))
    elif axis == "kip":
        m = re.search(r"trace: (\w+) at offset", reason)
        if m:
            seen[m.group(1)] = _citation(m.group(1))
        elif reason:
            seen["kip966 lockstep"] = f"{reason}: the accepted KIP (profile kip966) predicts " \
                                      "otherwise and no cited deviation of the build explains it"
        for d in details:
            seen.setdefault(f"deviation {d['deviation']}",
                            f"{d.get('summary', '')} ({d.get('cite')}); KIP difference: "
                            f"{d.get('kip_difference')}")
    else:
        for d in details:
            rule = str(d["rule"])
            seen.setdefault(rule, _citation(rule))
            for r in d.get("records") or []:
                name = r.get("invariant") or r.get("rule")
                if name:
                    seen.setdefault(str(name), _citation(str(name), r.get("citation")))
    return list(seen.items())


def _citation(rule: str, given: str | None = None) -> str:
    if given:
        return given
    if rule in RULES:
        return RULES[rule].citation
    return SAFETY_CITATIONS.get(rule, "(no citation recorded)")

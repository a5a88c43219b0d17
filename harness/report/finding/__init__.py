"""A finding's first draft from runs with a failing axis (`kafka-chaos finding RUN_DIR...`).

Each run is re-judged from its files alone (harness.judge.audit, as `kafka-chaos audit`
does) and its verdict is the headline of its three axes (harness.judge.headline). A run
whose axes are all clean (CONFORMS, CONFORMS/DEVIATES, SAFE) or UNSUPPORTED is no finding;
a run that ended in ERROR or was cut short (INCOMPLETE) is a harness failure, not
evidence: both are refused, with the reason. A declared failure (the scenario's
``expect:``) still fails its axis: a known bug is still a bug to report.

The draft has the form of a Kafka ticket: title, affected versions (the builds measured,
with each run's verdicts), environment, steps to reproduce (the scenario, shrunk when the
run directory holds a shrink: ``minimal.yaml`` and ``shrink.json`` from ``kafka-chaos
fuzz``, and the command that runs it), expected (every failing axis with its rule names
and their citations: the trace rules of reference.trace.rules, the cited deviations, the
KIP-966 sentences behind the data checks), actual (the first violating metadata record
of each rule, decoded, with the partition before and after it; the data checks that
failed with the records named; the sampled states that broke an invariant), impact, a
suggested fix and how the harness found it. What only a person can write is marked
``TO WRITE``.

Runs of several scenarios give one draft per scenario; runs of one scenario on several
builds share a draft: the affected-versions table lists every run, the details come from
the run on the newest build.

The jobs, one module each:

- runs.py: reading and re-judging the runs (Evidence, LeftOut, NotAFinding);
- reproduce.py: environment and steps to reproduce;
- expected.py: the rules broken and their citations;
- actual.py: what the run did, decoded;
- impact.py: impact and how the harness found it;
- render.py: the drafts put together (``render``, ``finding_text``).
"""

from harness.report.finding.actual import DATA_CHECK_RULE, PARTITION_RECORDS, SHOW, record_name
from harness.report.finding.expected import KIP_GOAL, SAFETY_CITATIONS
from harness.report.finding.render import finding_text, render
from harness.report.finding.runs import (
    Evidence,
    LeftOut,
    NotAFinding,
    examine,
    failing_axes,
    gather,
)

__all__ = ["DATA_CHECK_RULE", "KIP_GOAL", "PARTITION_RECORDS", "SAFETY_CITATIONS", "SHOW",
           "Evidence", "LeftOut", "NotAFinding", "examine", "failing_axes", "finding_text",
           "gather", "record_name", "render"]

"""The driver's oracles that need no model, as findings (issue 44 item 1).

After every event the driver checks the build's state against itself
(``java/DriverOracleChecks.java``) and lists in the answer's ``oracles`` each disagreement
the event brought (one that lasts is not listed again):

- **index** (``DriverIndexOracle``): every index the managers keep, recomputed from the
  registrations it indexes and compared with the build's own object: ``brokersToIsrs``,
  ``brokersToElrs``, ``reassigningTopics``, ``imbalancedPartitions``,
  ``directoriesToPartitions``, ``topicsByName``, ``topicsWithCollisionChars``,
  ``registerBrokerRecordOffsets``, ``heartbeatManager`` (and its ``active`` set),
  ``directoryToBroker``;
- **image** (``DriverImageOracle``): the ``MetadataImage`` a broker would build from the
  records the controller wrote against the managers: topics, every partition's registration
  (named by its first differing field: ``leader``, ``isr``, ``elr``, ``lastKnownElr``,
  ``leaderEpoch``, ...), broker registrations (``broker.fenced``, ...), ``features``,
  ``metadataVersion``; ``replay`` when the image cannot replay a record.

Each is a finding of its own class, ``index:<index>:<op>:<profile>`` and
``image:<field>:<op>:<profile>``, whatever the model says (the model is not asked about
them); ``Comparator.step`` adds them to its report, so the campaign records, shrinks and
writes them as it does the model's findings and the faults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.differential.protocol import Answer

#: The oracles' axes (the first part of a finding's signature).
AXES = ("index", "image")

_WHAT = {"index": "an index the controller keeps disagrees with the registrations it indexes",
         "image": "the metadata image replayed from the controller's records disagrees with "
                  "the controller"}


@dataclass(frozen=True, slots=True)
class Report:
    """One disagreement the driver reported: compare.Finding's axis, name, where, detail
    and records."""

    axis: str
    name: str
    where: str
    detail: str
    records: tuple[Mapping[str, Any], ...]


def _records(answer: Answer, where: str) -> tuple[Mapping[str, Any], ...]:
    topic = where.rpartition("-")[0] if "-" in where else None
    if where.startswith("topic "):
        topic = where.split(" ", 1)[1]
    if topic is None:
        return answer.records
    return tuple(r for r in answer.records if r.get("topic") in (None, topic))


def reports_of(answer: Answer) -> list[Report]:
    """The answer's ``oracles``, each with the records of its topic."""
    out: list[Report] = []
    raw = answer.raw.get("oracles")
    if not isinstance(raw, list):
        return out
    for o in raw:
        if not isinstance(o, Mapping) or o.get("oracle") not in AXES:
            continue
        axis = str(o["oracle"])
        where = str(o.get("where") or "event")
        out.append(Report(axis, str(o.get("name") or axis), where,
                          f"{o.get('detail')} ({_WHAT[axis]})", _records(answer, where)))
    return out

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

- **oracle-error**: an oracle itself failed (the answer's ``oracleError``,
  ``DriverOracleChecks.check``: e.g. a member a build lacks read by reflection); the event's
  checks were not made. A failure of the harness, not of the build, but never dropped: a
  finding ``oracle-error:<exception class>:<op>:<profile>``, counted and written (not
  shrunk: shrink.py) like the others, so a campaign whose oracles stopped looking says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.differential.protocol import Answer

#: The oracles' axes (the first part of a finding's signature).
AXES = ("index", "image")
#: The class of an oracle's own failure (the answer's ``oracleError``).
ORACLE_ERROR = "oracle-error"

_WHAT = {"index": "an index the controller keeps disagrees with the registrations it indexes",
         "image": "the metadata image replayed from the controller's records disagrees with "
                  "the controller",
         ORACLE_ERROR: "an oracle of the driver failed, so the event's index and image "
                       "checks were not made: a failure of the harness, not of the build"}


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
    """The answer's ``oracles``, each with the records of its topic, and its
    ``oracleError`` (``ORACLE_ERROR``) if any."""
    out: list[Report] = []
    error = answer.raw.get("oracleError")
    if error is not None:
        text = str(error)
        # DriverProtocol.describe: "<class name>[: <message>]"
        name = text.split(":", 1)[0].rsplit(".", 1)[-1].strip() or "error"
        out.append(Report(ORACLE_ERROR, name, "event", f"{text} ({_WHAT[ORACLE_ERROR]})",
                          answer.records))
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

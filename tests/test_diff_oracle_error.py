"""An oracle of the driver that fails (the answer's ``oracleError``,
harness/differential/java/DriverOracleChecks.java ``check``) is a finding of its own class,
``oracle-error:<exception class>:<op>:<profile>`` (harness/differential/oracles.py): never
dropped, counted in the campaign summary, written unshrunk. Crafted answers, no JVM."""

from __future__ import annotations

from typing import Any

import pytest
from test_diff_oracles import _Campaign  # what summary_lines and the shrinker read

from harness.differential.campaign import Found
from harness.differential.campaign.shrink import Shrinker
from harness.differential.campaign.write import finding_classes, summary_lines
from harness.differential.compare import Comparator, Finding, findings_of
from harness.differential.model import initial
from harness.differential.oracles import ORACLE_ERROR, reports_of
from harness.differential.protocol import Answer

#: What DriverProtocol.describe writes for the throwable the checks caught.
ERROR = "java.lang.NoSuchFieldException: brokersToElrs"


def _answer(raw_extra: dict[str, Any], op: str = "alterConfig") -> Answer:
    records = ({"type": "ConfigRecord", "name": "min.insync.replicas"},)
    raw: dict[str, Any] = {"seq": 1, "op": op, "ok": True, **raw_extra}
    return Answer(seq=1, op=op, ok=True, unsupported=None, error=None, error_name=None,
                  exception=None, records=records, partitions={}, brokers={}, notes=(),
                  raw=raw)


def test_an_oracle_error_is_a_finding_of_its_own_class() -> None:
    (f,) = findings_of("alterConfig", _answer({"oracleError": ERROR}), "kafka-4.3")
    assert f.axis == ORACLE_ERROR
    assert f.signature == "oracle-error:NoSuchFieldException:alterConfig:kafka-4.3"
    assert ERROR in f.detail and "not of the build" in f.detail
    assert f.where == "event" and f.records  # the event's records kept
    assert findings_of("alterConfig", _answer({}), "kafka-4.3") == []


def test_it_comes_beside_the_oracles_reports_of_the_same_answer() -> None:
    stale = {"oracle": "index", "name": "brokersToElrs", "where": "k3t1-0", "detail": "x"}
    axes = [r.axis for r in reports_of(_answer({"oracleError": "java.lang.IllegalStateException",
                                                 "oracles": [stale]}))]
    assert axes == [ORACLE_ERROR, "index"]
    (r,) = reports_of(_answer({"oracleError": "java.lang.IllegalStateException"}))
    assert r.name == "IllegalStateException"  # a describe() without a message


def test_the_comparator_reports_it_whatever_the_model_says() -> None:
    c = Comparator((4, 4, 0), True, initial({}, {}, min_isr=2, unclean=False, elr=True))
    rep = c.step({"op": "state"}, _answer({"oracleError": ERROR}, op="state"))
    assert [f.signature for f in rep.findings] == [
        f"oracle-error:NoSuchFieldException:state:{c.release.name}"]



def test_the_campaign_counts_it_and_does_not_shrink_it() -> None:
    f = Finding(ORACLE_ERROR, "NoSuchFieldException", "alterConfig", "kafka-4.3", ERROR)
    found = Found(f, 3, 7, 0.5, [{"op": "alterConfig"}])
    c: Any = _Campaign({f.signature: found})
    assert finding_classes(c) == {"oracle-error": 1}
    lines = list(summary_lines(c))
    assert "findings by class: oracle-error 1" in lines
    assert any(line.startswith("FINDING oracle-error:NoSuchFieldException") for line in lines)
    Shrinker._shrink(c, found)
    assert found.shrunk is None and "not shrunk" in found.shrink_note


@pytest.mark.parametrize("error", ["", None])
def test_an_empty_or_absent_error_is_no_finding_or_a_named_one(error: str | None) -> None:
    reports = reports_of(_answer({} if error is None else {"oracleError": error}))
    assert [r.name for r in reports] == ([] if error is None else ["error"])

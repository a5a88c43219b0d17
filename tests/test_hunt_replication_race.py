"""The hunt's class for the replication-race model gap (classify rule 5c,
docs/KNOWN-DEVIATIONS.md#new-leader-hwm-lag gaps 2a/2b): an HWM-only divergence after acks
0/1 records is a model gap, not a Kafka candidate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.search import hunt
from harness.search.hunt import classify, replication_race

#: fuzz-s4343-5 (4.3.1) and fuzz-s45-21 (4.4.0) as the hunt signed them.
SIG_HWM: Any = (("kip", "KIP-DIVERGES", ("hwm",)), ("release", "DIVERGES", ("hwm",)))
DEVS = (hunt.HWM_LAG, "no-elr")

SCENARIO = """version: 1
name: race
seed: 1
cluster: {brokers: 3, controllers: 1, elr: true}
topic: {name: t, replicas: [2, 3, 1], min_insync_replicas: 2}
steps:
- kill: {broker: 2}
- produce: {count: 3, acks: %s}
- pause: {node: 3}
- restart: {broker: 2}
- resume: {node: 3}
"""


def _run(tmp: Path, acks: str, reason: str) -> Path:
    tmp.mkdir()
    (tmp / "scenario.yaml").write_text(SCENARIO % acks)
    axis = {"verdict": "KIP-DIVERGES", "reason": reason}
    (tmp / "run.json").write_text(json.dumps({"axes": {
        "kip": axis, "release": {"verdict": "DIVERGES", "reason": reason.split(": ", 1)[1]}}}))
    return tmp


def test_an_hwm_divergence_after_acks_0_or_1_records_is_the_replication_race(
        tmp_path: Path) -> None:
    below = replication_race(_run(tmp_path / "a", "0",
                                  "step 5: hwm: predicted one of [3], observed 0"))
    assert below == "step 5 observed HWM 0, below the predicted [3], after acks 0/1 records"
    above = replication_race(_run(tmp_path / "b", "1",
                                  "step 5: hwm: predicted one of [0, 1], observed 8"))
    assert above is not None and "above the predicted [0, 1]" in above
    c = classify(SIG_HWM, None, "KIP-DIVERGES", (), DEVS, race=above)
    assert c.cls == "model-gap" and "replication race" in c.why and hunt.HWM_LAG in c.why
    # Without it, the same signature stays a Kafka candidate (the rule before this one).
    assert classify(SIG_HWM, None, "KIP-DIVERGES", (), DEVS).cls == "kafka-candidate"


def test_no_replication_race_without_acks_0_1_records_or_beyond_the_hwm(tmp_path: Path) -> None:
    # acks=all records only: the HWM moving over them shows the followers' fetches.
    assert replication_race(_run(tmp_path / "a", "all",
                                 "step 5: hwm: predicted one of [3], observed 0")) is None
    # Another field diverged: not this gap.
    assert replication_race(_run(tmp_path / "b", "0",
                                 "step 5: leader: predicted one of [1], observed 3")) is None
    # The records came after the diverging step.
    assert replication_race(_run(tmp_path / "c", "1",
                                 "step 2: hwm: predicted one of [3], observed 0")) is None
    assert replication_race(tmp_path / "missing") is None
    # A safety failure, or a signature naming more than the HWM, is never this class.
    race = "step 5 observed HWM 0, below the predicted [3], after acks 0/1 records"
    unsafe: Any = (*SIG_HWM, ("safety", "UNSAFE", ("acked-record-durable",)))
    assert classify(unsafe, None, "KIP-DIVERGES", (), DEVS, race=race).cls == "kafka-candidate"
    more: Any = (("kip", "KIP-DIVERGES", ("hwm", "isr")), ("release", "DIVERGES", ("hwm",)))
    assert classify(more, None, "KIP-DIVERGES", (), DEVS, race=race).cls == "kafka-candidate"


def test_an_hwm_below_every_prediction_without_acks_0_1_is_the_lag_outliving_its_window(
        tmp_path: Path) -> None:
    from harness.search.hunt import hwm_lag_outlived
    run = _run(tmp_path / "a", "all", "step 5: hwm: predicted one of [4, 5], observed 3")
    assert replication_race(run) is None
    lag = hwm_lag_outlived(run)
    assert lag == "step 5 observed HWM 3, below the predicted [4, 5]"
    c = classify(SIG_HWM, None, "KIP-DIVERGES", (), DEVS, lag=lag)
    assert c.cls == "model-gap" and "gap 1" in c.why
    # A build whose profiles do not carry the deviation, or an HWM above
    # the predictions: a candidate.
    assert classify(SIG_HWM, None, "KIP-DIVERGES", (), ("no-elr",), lag=lag).cls \
        == "kafka-candidate"
    above = _run(tmp_path / "b", "all", "step 5: hwm: predicted one of [4, 5], observed 6")
    assert hwm_lag_outlived(above) is None

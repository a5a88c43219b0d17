"""Client traffic in the judges (harness/judge/traffic.py): the traffic checks feed the
safety axis against the fault budget, the HWM is held to bounds under traffic, and
`audit` re-judges a finished run with its traffic.jsonl. Crafted histories, no cluster.

tests/data/traffic-run-4.3.1 is a real run of fixtures/scenarios/traffic-last-replica-
standing.yaml on Kafka 4.3.1 (run.json, events.jsonl, scenario.yaml, the controller's
metadata log) without its 26 MB traffic.jsonl: each test writes the traffic it judges."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.judge.audit import audit
from harness.judge.axes import ERROR, SAFE, UNSAFE, AxisVerdict
from harness.judge.traffic import apply_traffic, budget_of, hwm_bound_findings
from harness.scenario.loader import parse_scenario
from harness.traffic.history import TrafficWriter

RUN = Path(__file__).resolve().parent / "data" / "traffic-run-4.3.1"

SCENARIO = parse_scenario("""\
version: 1
name: crafted
cluster: {brokers: 3}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
traffic:
  producers: [{acks: all}]
steps:
  - kill: {broker: 3}
""", "crafted.yaml")


def lose(node: int) -> dict[str, object]:
    return {"seq": node, "kind": "fault", "action": "lose_unflushed", "t_mono": 1.0,
            "params": {"node": node, "topic": "t", "partition": 0, "offset": 0}}


def axes() -> dict[str, AxisVerdict]:
    return {"release": AxisVerdict("release", "CONFORMS"), "kip": AxisVerdict("kip", "CONFORMS"),
            "safety": AxisVerdict("safety", SAFE)}


def history(run_dir: Path, lost: tuple[int, ...] = (), acks: str = "all",
            idempotent: bool = True, twice: tuple[int, ...] = (), records: int = 5,
            clock: Callable[[], float] | None = None) -> None:
    """One producer writing ``records`` records to t-0 at offsets 0.., every one acked;
    the final read holds all but ``lost`` and holds ``twice`` at a second offset too."""
    with TrafficWriter(run_dir, "crafted", **({"clock": clock} if clock else {})) as w:
        w.producer("p0", acks, idempotent)
        for seq in range(records):
            w.send("p0", seq, f"p0-{seq}", "t", 0)
            w.ack("p0", seq, f"p0-{seq}", "t", 0, seq)
        offset = 0
        for seq in range(records):
            if seq not in lost:
                w.final_read("t", 0, offset, f"p0-{seq}")
            offset += 1
        for seq in twice:
            w.final_read("t", 0, offset, f"p0-{seq}")
            offset += 1
        w.final_read_end("t", 0, True)


# --- the safety axis -----------------------------------------------------------------------

def test_an_acked_record_lost_beyond_the_budget_is_unsafe_and_named(tmp_path: Path) -> None:
    history(tmp_path, lost=(3,))
    got = axes()
    verdict = apply_traffic(got, tmp_path, SCENARIO, [lose(1)])
    assert verdict is not None
    assert got["safety"].verdict == UNSAFE
    assert "1 acknowledged acks=all record(s) lost beyond the fault budget" in got["safety"].reason
    assert "p0-3" in got["safety"].reason
    (finding,) = got["safety"].details
    assert finding["rule"] == "traffic-lost_writes"
    assert [r["id"] for r in finding["records"]] == ["p0-3"]


def test_the_same_loss_within_the_budget_is_safe(tmp_path: Path) -> None:
    """Two replicas lost unflushed data with min ISR 2: beyond min ISR - 1, the faults may
    lose anything (LossBudget.for_lost_replicas); the loss is said, not UNSAFE."""
    history(tmp_path, lost=(3,))
    got = axes()
    apply_traffic(got, tmp_path, SCENARIO, [lose(1), lose(2)])
    assert got["safety"].verdict == SAFE
    assert "1 lost record(s) excused" in got["safety"].reason
    assert budget_of(SCENARIO, [lose(1), lose(2)]).unlimited
    assert not budget_of(SCENARIO, [lose(1)]).unlimited


def test_no_loss_is_safe_and_the_wiring_is_not_blind(tmp_path: Path) -> None:
    """The clean history is SAFE; the one record taken out of it (same budget) is UNSAFE:
    each verdict fails the other's assertion."""
    clean, lossy = tmp_path / "clean", tmp_path / "lossy"
    clean.mkdir()
    lossy.mkdir()
    history(clean)
    history(lossy, lost=(0,))
    a, b = axes(), axes()
    apply_traffic(a, clean, SCENARIO, [lose(1)])
    apply_traffic(b, lossy, SCENARIO, [lose(1)])
    assert (a["safety"].verdict, b["safety"].verdict) == (SAFE, UNSAFE)


def test_acks_1_losses_are_excused(tmp_path: Path) -> None:
    history(tmp_path, lost=(1, 2), acks="1", idempotent=False)
    got = axes()
    apply_traffic(got, tmp_path, SCENARIO, [])
    assert got["safety"].verdict == SAFE
    assert "2 lost record(s) excused" in got["safety"].reason


def test_other_anomalies_are_findings_too(tmp_path: Path) -> None:
    history(tmp_path, twice=(2,))
    got = axes()
    apply_traffic(got, tmp_path, SCENARIO, [])
    assert got["safety"].verdict == UNSAFE
    assert [d["rule"] for d in got["safety"].details] == ["traffic-duplicates"]
    # without idempotence a retry may write twice: allowed
    shutil.rmtree(tmp_path)
    tmp_path.mkdir()
    history(tmp_path, twice=(2,), acks="1", idempotent=False)
    got = axes()
    apply_traffic(got, tmp_path, SCENARIO, [])
    assert got["safety"].verdict == SAFE


def test_an_axis_not_judged_stays_and_missing_traffic_is_an_error(tmp_path: Path) -> None:
    history(tmp_path, lost=(3,))
    got = axes()
    got["safety"] = AxisVerdict("safety", ERROR, "harness failed")
    apply_traffic(got, tmp_path, SCENARIO, [lose(1)])
    assert (got["safety"].verdict, got["safety"].reason) == (ERROR, "harness failed")
    empty = tmp_path / "none"
    empty.mkdir()
    got = axes()
    assert apply_traffic(got, empty, SCENARIO, []) is None
    assert got["safety"].verdict == ERROR
    assert "recorded no traffic.jsonl" in got["safety"].reason


def test_a_failed_traffic_thread_is_a_harness_error(tmp_path: Path) -> None:
    history(tmp_path)
    got = axes()
    stop = {"seq": 9, "kind": "traffic", "phase": "stop", "t_mono": 2.0,
            "problems": ["traffic c0.0: KafkaException: boom"]}
    apply_traffic(got, tmp_path, SCENARIO, [stop])
    assert got["safety"].verdict == ERROR
    assert got["safety"].reason == "traffic: traffic c0.0: KafkaException: boom"
    got = axes()
    apply_traffic(got, tmp_path, SCENARIO, [{**stop, "problems": []}])
    assert got["safety"].verdict == SAFE


def test_spark_above_the_threshold_gives_the_same_verdict(tmp_path: Path) -> None:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: Spark cannot start")
    history(tmp_path, lost=(3,))
    a, b = axes(), axes()
    local = apply_traffic(a, tmp_path, SCENARIO, [lose(1)])
    spark = apply_traffic(b, tmp_path, SCENARIO, [lose(1)], threshold_bytes=0)
    assert local is not None and spark is not None and spark.engine == "spark"
    assert [s.to_json() for s in spark.summaries] == [s.to_json() for s in local.summaries]
    assert (a["safety"].verdict, a["safety"].reason) == (b["safety"].verdict, b["safety"].reason)


# --- audit of a real run with crafted traffic ------------------------------------------------

def _events() -> list[dict[str, object]]:
    return [json.loads(line) for line in (RUN / "events.jsonl").read_text().splitlines()]


def _run_copy(tmp_path: Path) -> Path:
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)
    return run


def _first_step_t() -> float:
    return min(float(e["t_mono"]) for e in _events() if e["kind"] == "step")


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _crafted(run: Path, lost: tuple[int, ...] = (), idempotent: bool = False,
             ack_offset: int | None = None, timed_out_sent: float | None = None) -> None:
    """Ten records acked before the first step (an acks=1 non-idempotent producer by
    default: the HWM's upper bound is then not judged), read back but ``lost``; with
    ``timed_out_sent``, an 11th record sent at that time times out (_MSG_TIMED_OUT)."""
    clock = Clock(_first_step_t() - 1.0)
    with TrafficWriter(run, "crafted", clock=clock) as w:
        w.producer("p0", "all", idempotent, "librdkafka 2.16.0")
        for seq in range(10):
            w.send("p0", seq, f"p0-{seq}", "t", 0)
            w.ack("p0", seq, f"p0-{seq}", "t", 0, seq if ack_offset is None else ack_offset)
            w.poll("c0", 0, "t", 0, seq, f"p0-{seq}")
        if timed_out_sent is not None:
            clock.t = timed_out_sent
            w.send("p0", 10, "p0-10", "t", 0)
            clock.t += 12.0
            w.send_error("p0", 10, "p0-10", "t", "_MSG_TIMED_OUT", 0)
        clock.t = max(float(e["t_mono"]) for e in _events()) + 1.0
        for seq in range(10):
            if seq not in lost:
                w.final_read("t", 0, seq, f"p0-{seq}")
        w.final_read_end("t", 0, True)


def test_audit_rejudges_a_run_with_its_traffic(tmp_path: Path) -> None:
    run = _run_copy(tmp_path)
    _crafted(run)
    clean = audit(run)
    assert clean.axes["safety"].verdict == SAFE, clean.axes["safety"].reason
    assert clean.axes["release"].verdict == "CONFORMS", clean.axes["release"].reason
    assert clean.as_expected and clean.traffic is not None
    (run / "traffic.jsonl").unlink()
    _crafted(run, lost=(4, 7))
    lossy = audit(run)
    assert lossy.axes["safety"].verdict == UNSAFE
    assert "p0-4, p0-7" in lossy.axes["safety"].reason
    assert not lossy.as_expected  # 4.3.1 declares nothing: SAFE is expected


def test_the_hwm_ceiling_ends_at_the_send_of_a_record_that_timed_out(tmp_path: Path) -> None:
    """librdkafka's epoch bump after a message timeout may write records twice
    (harness/traffic/checks.py client_epoch_bump): the ceiling of the records sent is not
    judged from the send of the first record that timed out, and still is before it."""
    run = _run_copy(tmp_path)
    _crafted(run, idempotent=True, timed_out_sent=_first_step_t() - 0.5)
    assert audit(run).axes["release"].verdict == "CONFORMS"
    (run / "traffic.jsonl").unlink()
    last = max(float(e["t_mono"]) for e in _events())
    _crafted(run, idempotent=True, timed_out_sent=last + 0.5)  # after every observation
    result = audit(run)
    assert result.axes["release"].verdict == "DIVERGES"
    assert "above the 10 record(s) sent to it" in result.axes["release"].reason


def test_audit_without_the_traffic_file_says_so(tmp_path: Path) -> None:
    run = _run_copy(tmp_path)
    result = audit(run)
    assert result.axes["safety"].verdict == ERROR
    assert "recorded no traffic.jsonl" in result.axes["safety"].reason


def test_the_hwm_is_held_to_its_bounds_under_traffic(tmp_path: Path) -> None:
    """Above the records sent (judged when every producer is idempotent) or below the last
    acks=all acknowledgement before a step: a release divergence naming the step."""
    run = _run_copy(tmp_path)
    _crafted(run, idempotent=True)  # 10 records sent; the run observed HWMs in thousands
    result = audit(run)
    assert result.axes["release"].verdict == "DIVERGES"
    assert "above the 10 record(s) sent to it" in result.axes["release"].reason
    assert result.axes["release"].reason.startswith("step 1: hwm: observed HWM")
    (run / "traffic.jsonl").unlink()
    _crafted(run, ack_offset=10**8)  # acked far beyond any HWM the run saw
    found = hwm_bound_findings(_events(), run / "traffic.jsonl", SCENARIO)
    assert found and all("floor" in f for f in found)
    assert found[0]["floor"] == 10**8 + 1
    result = audit(run)
    assert result.axes["release"].verdict == "DIVERGES"
    assert "below 100000001, 1 + the last acks=all acknowledgement" in \
        result.axes["release"].reason
    # after the lose_unflushed fault the floor starts again: no finding after it
    loss_t = next(float(e["t_mono"]) for e in _events() if e.get("action") == "lose_unflushed")
    assert all(next(float(e["t_mono"]) for e in _events() if e["seq"] == f["seq"]) < loss_t
               for f in found)

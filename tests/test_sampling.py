"""Checks on every step: the observed-state invariants at every sampled state, judged on
the safety axis from the history's `sample` events (live and by the audit alike)."""

from __future__ import annotations

import contextlib
from typing import Any

from harness.judge.axes import SAFE, UNSAFE, judge_safety, sampled_findings
from harness.judge.datachecks import run_checks
from reference.model.invariants import observed_violations
from reference.model.state import PartitionState


def _sample(seq: int, index: int, leader: int, isr: list[int], hwm: int | None,
            elr: list[int] | None = None) -> dict[str, Any]:
    return {"seq": seq, "t_wall": 1000.0 + seq / 10, "kind": "sample", "index": index,
            "topic": "t", "partition": 0,
            "state": {"leader": leader, "leader_epoch": 1, "replicas": [1, 2, 3], "isr": isr,
                      "elr": elr or [], "last_known_elr": [], "hwm": hwm, "fenced": []}}


def _good_run() -> list[dict[str, Any]]:
    return [_sample(0, 0, 1, [1, 2, 3], 5), _sample(1, 0, 1, [1, 2], 5),
            _sample(2, 1, 2, [2], None), _sample(3, 1, 2, [1, 2, 3], 7)]


def test_clean_samples_are_safe() -> None:
    ev = _good_run()
    assert sampled_findings(ev) == []
    assert judge_safety(ev, run_checks(ev), min_isr=2).verdict == SAFE


def test_a_transient_violation_between_settled_states_is_unsafe() -> None:
    ev = _good_run()
    # One sample in the middle of step 2: the leader is outside the ISR, repaired by the
    # next sample (the settled state the step's prediction checks is fine).
    ev.insert(3, _sample(9, 1, 3, [1, 2], 5))
    found = sampled_findings(ev)
    assert [(f["invariant"], f["index"], f["seq"]) for f in found] == [("LeaderInIsr", 1, 9)]
    v = judge_safety(ev, run_checks(ev), min_isr=2)
    assert v.verdict == UNSAFE and v.details[-1]["rule"] == "sampled-state-invariants"
    assert "step 2 LeaderInIsr" in v.reason


def test_a_sampled_hwm_going_back_is_unsafe() -> None:
    ev = _good_run() + [_sample(4, 2, 2, [1, 2, 3], 6)]
    assert [f["invariant"] for f in sampled_findings(ev)] == ["HwmMonotonic"]
    assert judge_safety(ev, run_checks(ev), min_isr=2).verdict == UNSAFE


def test_each_observed_invariant_fails_on_its_own_state() -> None:
    def state(**kw: Any) -> PartitionState:
        base = {"leader": 1, "leader_epoch": 1, "replicas": [1, 2, 3], "isr": [1, 2],
                "elr": [], "last_known_elr": [], "hwm": 3, "fenced": []}
        return PartitionState.from_json({**base, **kw})

    assert observed_violations(state(), 3) == []
    assert observed_violations(state(leader=-1, isr=[]), None) == []
    assert [n for n, _ in observed_violations(state(leader=3), None)] == ["LeaderInIsr"]
    assert [n for n, _ in observed_violations(state(isr=[1, 4]), None)] == [
        "IsrElrWithinReplicas"]
    assert [n for n, _ in observed_violations(state(elr=[2]), None)] == ["ElrIsrDisjoint"]
    assert [n for n, _ in observed_violations(state(last_known_elr=[7]), None)] == [
        "IsrElrWithinReplicas"]
    assert [n for n, _ in observed_violations(state(hwm=2), 3)] == ["HwmMonotonic"]


def test_the_sampler_records_every_sample_a_transient_violation_and_its_rate(tmp_path) -> None:

    from harness.infra.history import History, read_events

    good = {"leader": 1, "leader_epoch": 1, "replicas": [1, 2, 3], "isr": [1, 2, 3],
            "elr": [], "last_known_elr": [], "hwm": 5, "fenced": None}
    states = [good, good, {**good, "leader": 3, "isr": [1, 2]}] + [good] * 1000  # 2: bad

    class Fake:
        calls = 0

        def one_look(self) -> contextlib.nullcontext[None]:
            return contextlib.nullcontext()

        def partition_state(self, topic: str, partition: int = 0) -> tuple[dict[str, Any], int]:
            Fake.calls += 1
            if Fake.calls == 4:
                raise RuntimeError("no current broker")
            return dict(states[Fake.calls]), 1

        def close(self) -> None:
            pass

    history = History(tmp_path / "run")
    summary = _sample_step_0(Fake(), history, lambda: Fake.calls >= 30, 5)
    events = list(read_events(tmp_path / "run"))
    samples = [e for e in events if e["kind"] == "sample"]
    assert summary["samples"] == len(samples) >= 20 and summary["failed"] == 1
    assert summary["violations"] == 1 and summary["rate_per_s"] >= 5
    bad = [e for e in events if e["kind"] == "sample_violation"]
    assert [(e["invariant"], e["index"]) for e in bad] == [("LeaderInIsr", 0)]
    assert [f["invariant"] for f in sampled_findings(events)] == ["LeaderInIsr"]
    (step,) = [e for e in events if e["kind"] == "sampling"]
    # a sample may still land between step(None) and stop(), outside step 0
    assert step["index"] == 0 and step["samples"] == len([s for s in samples if s["index"] == 0])
    assert history.meta["sampling"]["violations"] == 1


def test_the_audit_rejudges_a_transient_violation_from_the_samples(tmp_path) -> None:
    import json
    import shutil
    from pathlib import Path

    from harness.judge.audit import audit

    src = (Path(__file__).resolve().parent.parent / "fixtures" / "histories"
           / "last-replica-standing-20261122T152321-517cc5")
    run = tmp_path / src.name
    shutil.copytree(src, run)
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    at = next(i for i, e in enumerate(events) if e["kind"] == "observation")
    sample = {**events[at], "kind": "sample", "index": 0}
    sample["state"] = {**sample["state"], "elr": [sample["state"]["isr"][0]]}  # ELR ∩ ISR
    events.insert(at + 1, sample)
    for seq, e in enumerate(events):
        e["seq"] = seq
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    r = audit(run)
    assert r.axes["release"].verdict == "CONFORMS"  # the settled states are untouched
    assert r.axes["safety"].verdict == "UNSAFE"
    assert r.axes["safety"].details[-1]["rule"] == "sampled-state-invariants"
    assert r.axes["safety"].details[-1]["records"][0]["invariant"] == "ElrIsrDisjoint"


def test_the_sampler_counts_the_steps_it_sampled_below_its_floor(tmp_path) -> None:
    import time

    from harness.infra.history import History
    from harness.run.sampler import MIN_RATE

    state = {"leader": 1, "leader_epoch": 1, "replicas": [1], "isr": [1], "elr": [],
             "last_known_elr": [], "hwm": 0, "fenced": None}

    class Slow:
        looks = 0

        def one_look(self) -> contextlib.nullcontext[None]:
            return contextlib.nullcontext()

        def partition_state(self, topic: str, partition: int = 0) -> tuple[dict[str, Any], int]:
            Slow.looks += 1
            time.sleep(1.5 / MIN_RATE)  # a look slower than the floor allows
            return dict(state), 1

        def close(self) -> None:
            pass

    summary = _sample_step_0(Slow(), History(tmp_path / "run"), lambda: Slow.looks >= 5, 10)
    assert summary["slowest_step_rate_per_s"] < MIN_RATE
    assert summary["steps_below_min_rate"] == 1


def _sample_step_0(observer: Any, history: Any, done: Any, timeout_s: float) -> Any:
    """Samples with ``observer`` as step 0 until ``done()`` (bounded), then stops; the
    sampler's summary."""
    import time

    from harness.run.sampler import Sampler

    sampler = Sampler(observer, history, [("t", 0)], interval_s=0.01)
    sampler.step(0)
    sampler.start()
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.step(None)
    summary = sampler.stop()
    history.close("CONFORMS")
    return summary

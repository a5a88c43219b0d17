"""Traffic between named steps (fixtures/scenarios/FORMAT.md "Traffic"): step names, a
traffic entry's ``from``/``until`` and every error with its line, the points where the
clients start and stop, and the judges' rule: the model's tick only for steps some producer
runs during, the HWM compared exactly until the topic's producers start and held to bounds
from then on. No cluster."""

from __future__ import annotations

import dataclasses
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from harness.client import traffic as client
from harness.client.traffic import ConsumerSpec, ProducerSpec, Traffic, TrafficSpec
from harness.judge.compare import model_for, observed_state
from harness.judge.datachecks import run_checks
from harness.judge.lockstep import Lockstep
from harness.judge.traffic import hwm_bound_findings, hwm_bounded, model_view, tick_step
from harness.run.runner import Runner
from harness.scenario.loader import Scenario, ScenarioError, load_scenario, parse_scenario
from harness.traffic.history import TrafficWriter
from reference import PROFILES

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "scenarios" / "traffic-leader-kill-window.yaml"

BASE = """\
version: 1
name: windows
cluster: {brokers: 3}
topics:
  - {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
  - {name: u, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
  - produce: {count: 2, topic: t}
  - {kill: {broker: 3}, name: down}
  - restart: {broker: 3}
    name: up
  - await: {isr: [1, 2, 3]}
"""


def load(traffic: str, steps: str = "") -> Scenario:
    return parse_scenario(BASE + steps + "traffic:\n" + traffic, "s.yaml")


# --- step names ----------------------------------------------------------------------

def test_steps_take_a_name_beside_their_kind_in_either_style() -> None:
    sc = parse_scenario(BASE, "s.yaml")
    assert [s.name for s in sc.steps] == [None, "down", "up", None]
    # the name is not part of the step: its mapping is its kind and parameters, as before
    assert [dict(s.mapping) for s in sc.steps[1:3]] == [{"kill": {"broker": 3}},
                                                       {"restart": {"broker": 3}}]
    assert sc.steps[1].kind == "kill" and sc.steps[2].line == 10


BAD_NAMES = [
    ("  - {heal: {}, name: Down}\n", 13, "steps[4].name: step name 'Down' must be"),
    ("  - {heal: {}, name: down}\n", 13,
     "steps[4].name: 'down' already names steps[1]: step names are unique"),
    ("  - {name: x}\n", 13, "steps[4]: a step is a mapping with exactly one key, its kind"),
    ("  - {heal: {}, name: [x]}\n", 13, "steps[4].name: expected a single value"),
    ("  - {heal: {}, name: " + "x" * 101 + "}\n", 13, "steps[4].name: step name"),
]


@pytest.mark.parametrize(("steps", "line", "message"), BAD_NAMES, ids=[b[2] for b in BAD_NAMES])
def test_bad_step_names_are_named_with_their_line(steps: str, line: int, message: str) -> None:
    with pytest.raises(ScenarioError, match=rf"^s\.yaml:{line}: {re.escape(message)}"):
        parse_scenario(BASE + steps, "s.yaml")


def test_every_scenario_file_still_loads() -> None:
    for path in sorted((ROOT / "fixtures" / "scenarios").glob("*.yaml")):
        load_scenario(path)


# --- from / until ----------------------------------------------------------------------

def test_from_and_until_name_steps() -> None:
    sc = load("  producers:\n"
              "    - {from: down, until: up}\n"
              "    - {until: down, topic: u}\n"
              "    - {}\n"
              "  consumers:\n"
              "    - {from: up}\n")
    assert sc.traffic is not None
    (p0, p1, p2), (c0,) = sc.traffic.producers, sc.traffic.consumers
    assert (p0.from_step, p0.until_step) == (1, 2)
    assert (p1.from_step, p1.until_step) == (None, 1)
    assert (p2.from_step, p2.until_step) == (None, None)
    assert (c0.from_step, c0.until_step) == (2, None)
    # p0 runs during step 2 only: it starts after step 1 and stops after step 2
    assert [p0.runs_during(i) for i in range(4)] == [False, False, True, False]
    assert [p1.runs_during(i) for i in range(4)] == [True, True, False, False]
    assert [c0.runs_during(i) for i in range(4)] == [False, False, False, True]
    assert [p0.started_by(i) for i in range(4)] == [False, False, True, True]


P = "  producers:\n    - "
BAD_WINDOWS = [
    (P + "{from: nowhere}\n", 15, "traffic.producers[0].from: no step named 'nowhere' "
     "(named steps: down, up; name one with name: beside its kind"),
    (P + "{until: 3}\n", 15, "traffic.producers[0].until: expected a string"),
    (P + "{from: up, until: down}\n", 15, "traffic.producers[0].until: until 'down' "
     "(steps[1]) must come after from 'up' (steps[2])"),
    (P + "{from: up, until: up}\n", 15, "traffic.producers[0].until: until 'up' (steps[2]) "
     "must come after from 'up' (steps[2])"),
    ("  consumers:\n    - {until: gone}\n", 15, "traffic.consumers[0].until: no step named "
     "'gone'"),
]


@pytest.mark.parametrize(("traffic", "line", "message"), BAD_WINDOWS,
                         ids=[b[2][:60] for b in BAD_WINDOWS])
def test_bad_windows_are_named_with_their_line(traffic: str, line: int, message: str) -> None:
    with pytest.raises(ScenarioError, match=rf"^s\.yaml:{line}: {re.escape(message)}"):
        load(traffic)


def test_from_the_last_step_and_no_named_step_are_refused() -> None:
    with pytest.raises(ScenarioError, match=r"^s\.yaml:16: traffic\.producers\[0\]\.from: "
                                            r"'last' is the last step: the client would run "
                                            r"during no step"):
        load(P + "{from: last}\n", "  - {heal: {}, name: last}\n")
    plain = BASE.replace("{kill: {broker: 3}, name: down}", "kill: {broker: 3}") \
        .replace("    name: up\n", "")
    with pytest.raises(ScenarioError, match=r"^s\.yaml:14: traffic\.producers\[0\]\.from: no "
                                            r"step named 'down' \(no step is named; name one"):
        parse_scenario(plain + "traffic:\n" + P + "{from: down}\n", "s.yaml")


def test_consume_and_await_hwm_are_judged_before_the_topics_producers_start() -> None:
    """Before a producer of the topic starts the model knows every record: consume and
    await.hwm are allowed; from its start on (even after it stopped) they are refused;
    a topic no producer has started on takes them throughout."""
    windowed = "  producers: [{from: up, until: last, topic: t}]\n"
    sc = load(windowed.replace("from: up", "from: read"),
              "  - consume: {topic: t}\n  - {await: {hwm: 2, topic: t}, name: read}\n"
              "  - consume: {topic: u}\n  - {heal: {}, name: last}\n")
    assert sc.traffic is not None and sc.traffic.producers[0].from_step == 5
    with pytest.raises(ScenarioError, match=r"^s\.yaml:14: steps\[5\]\.await\.hwm: under "
                                            r"traffic the HWM is judged by bounds, not "
                                            r"awaited \(traffic\.producers\[0\] has started"):
        load(windowed, "  - {heal: {}, name: last}\n  - await: {hwm: 2, topic: t}\n")
    with pytest.raises(ScenarioError, match=r"^s\.yaml:14: steps\[5\]\.consume: under traffic "
                                            r"records are read by the traffic's consumers"):
        load(windowed, "  - {heal: {}, name: last}\n  - consume: {}\n")  # after until too
    with pytest.raises(ScenarioError, match=r"^s\.yaml:13: steps\[4\]\.consume"):
        load(windowed, "  - consume: {}\n  - {heal: {}, name: last}\n")  # t's producer runs


# --- where the clients start and stop ---------------------------------------------------------

class _FakeCluster:
    history = type("H", (), {"run_id": "windows"})()

    def client_bootstrap(self) -> str:
        return "127.0.0.1:1"


def test_the_clients_start_and_stop_at_their_steps(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    """``Traffic`` as the runner drives it: ``start(None)`` before the first step,
    ``between(i)`` after step i, ``stop()`` at the end; each client runs exactly during
    its window, producers are stopped before consumers are drained."""
    log: list[tuple[str, str, int]] = []
    step = [-1]

    def body(self: Any, stop: threading.Event) -> None:
        stop.wait(30)
        log.append(("stop", self.name, step[0]))  # before between()/stop() joined it

    monkeypatch.setattr(client.ProducerLoop, "run", body)
    monkeypatch.setattr(client.ConsumerLoop, "run", body)
    monkeypatch.setattr(client, "DRAIN_QUIET_S", 0.0)
    spec = TrafficSpec(
        producers=(ProducerSpec("t", from_step=1, until_step=2), ProducerSpec("t", count=2)),
        consumers=(ConsumerSpec("t", until_step=0), ConsumerSpec("t", from_step=0)))
    with TrafficWriter(tmp_path, "windows") as rec:
        traffic = Traffic(spec, _FakeCluster(), rec, lambda topic: 1)  # type: ignore[arg-type]
        assert traffic.start(None) == ["p1.0", "p1.1", "c0.0"]
        seen = []
        for i in range(4):
            step[0] = i
            seen.append(traffic.between(i))
        assert seen == [(["c0.0"], ["c1.0"]), ([], ["p0.0"]), (["p0.0"], []), ([], [])]
        step[0] = 99
        assert traffic.stop() == []
    stopped = {name: at for what, name, at in log if what == "stop"}
    assert stopped == {"c0.0": 0, "p0.0": 2, "p1.0": 99, "p1.1": 99, "c1.0": 99}
    assert all(w.thread.ident is not None and not w.thread.is_alive() for w in traffic._workers)


def test_a_client_whose_step_never_ran_is_never_started(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    """The schedule ended early (a divergence): a client starting after a later step never
    starts, and stop() ends the others."""
    monkeypatch.setattr(client.ProducerLoop, "run", lambda self, stop: stop.wait(30))
    spec = TrafficSpec(producers=(ProducerSpec("t", from_step=3), ProducerSpec("t")))
    with TrafficWriter(tmp_path, "windows") as rec:
        traffic = Traffic(spec, _FakeCluster(), rec, lambda topic: 1)  # type: ignore[arg-type]
        traffic.start(None)
        assert traffic.stop() == []
    assert traffic._workers[0].thread.ident is None
    assert traffic.summary()["sent"] == 0


def test_the_runner_records_each_change_of_clients() -> None:
    recorded: list[dict[str, Any]] = []

    class FakeTraffic:
        def between(self, index: int) -> tuple[list[str], list[str]]:
            return {1: ([], ["p0.0"]), 3: (["p0.0"], [])}.get(index, ([], []))

    class FakeHistory:
        def record(self, kind: str, **fields: Any) -> None:
            recorded.append({"kind": kind, **fields})

    runner = Runner.__new__(Runner)
    runner._traffic = FakeTraffic()
    for i in range(5):
        runner._traffic_between(i, FakeHistory())  # type: ignore[arg-type]
    assert recorded == [
        {"kind": "traffic", "phase": "clients", "after_step": 1, "stopped": [],
         "started": ["p0.0"]},
        {"kind": "traffic", "phase": "clients", "after_step": 3, "stopped": ["p0.0"],
         "started": []}]


# --- the judges --------------------------------------------------------------------------

def _whole_schedule(sc: Scenario) -> Scenario:
    assert sc.traffic is not None
    return dataclasses.replace(sc, traffic=dataclasses.replace(
        sc.traffic, producers=tuple(dataclasses.replace(p, from_step=None, until_step=None)
                                    for p in sc.traffic.producers)))


def _predicted(sc: Scenario) -> list[tuple[bool, list[tuple[int, tuple[int, ...]]]]]:
    """Each step's (ticked, allowed (leader, ISR)) as the runner's lockstep predicts it,
    the model left on its predicted branches."""
    ls = Lockstep(sc, PROFILES["kafka-4.3"], True, lambda p, o: None, model_for)
    out = []
    for i, loaded in enumerate(sc.steps):
        count = getattr(loaded.step, "count", 0) if loaded.kind == "produce" else 0
        preds = ls.apply(ls.steps_at(i, loaded.step, [f"r{i}-{k}" for k in range(count)]))
        ticks = ls.ticks(i)
        settled = ls.apply_ticks(ticks, preds)[0]
        out.append((ticks[0] is not None,
                    sorted({(a.leader, tuple(sorted(a.isr))) for a in settled.allowed})))
    return out


def test_the_tick_only_where_a_producer_runs_and_the_cut_follower_stays() -> None:
    """The fixture: producers from `quiet` (step 2) until `recovered` (step 7). Only steps
    3..7 are ticked. After the traffic stopped, a follower cut from its leader is idle and
    caught up and stays in the ISR (as Kafka keeps it); the old whole-schedule tick would
    predict it leaves, a divergence from a correct cluster."""
    sc = load_scenario(FIXTURE)
    windowed = _predicted(sc)
    assert [ticked for ticked, _ in windowed] == [i in range(3, 8) for i in range(13)]
    assert sc.steps[8].kind == "cut" and sc.steps[10].kind == "await"
    assert windowed[8][1] == windowed[10][1] == [(2, (1, 2, 3))]
    old = _predicted(_whole_schedule(sc))
    assert all(ticked for ticked, _ in old)
    assert old[8][1] == old[10][1] == [(2, (1, 2))]  # the wrong answer under a window
    assert tick_step(sc, 7, "t") is not None and tick_step(sc, 8, "t") is None
    assert tick_step(sc, 2, "t") is None and tick_step(sc, 3, "t") is not None


def test_the_hwm_is_compared_until_the_producers_start_and_bounded_from_then() -> None:
    """Before the topic's producers start the model's HWM is exact: an HWM that differs
    is a divergence (the whole-schedule rule never compared it); from their start on
    (and after they stop: the model cannot count what they wrote) it is left to the
    bounds."""
    sc = load_scenario(FIXTURE)
    assert [hwm_bounded(sc, i, "t") for i in range(13)] == [i >= 3 for i in range(13)]
    assert hwm_bounded(_whole_schedule(sc), 0, "t")
    ls = Lockstep(sc, PROFILES["kafka-4.3"], True, lambda p, o: None, model_for)
    ls.apply(ls.steps_at(0, sc.steps[0].step, [f"r{k}" for k in range(5)]))
    state = {"leader": 1, "leader_epoch": 0, "replicas": [1, 2, 3], "isr": [1, 2, 3],
             "elr": [], "last_known_elr": [], "hwm": 4, "fenced": []}
    why = ls.explain([observed_state(model_view(state, sc, 0, "t"))])
    assert why is not None and why.startswith("hwm: predicted one of [5], observed 4")
    assert ls.explain([observed_state(model_view({**state, "hwm": 5}, sc, 0, "t"))]) is None
    whole = _whole_schedule(sc)
    assert ls.explain([observed_state(model_view(state, whole, 0, "t"))]) is None
    # a topic no producer writes: compared throughout
    assert not hwm_bounded(load("  producers: [{topic: u}]\n"), 3, "t")


def test_the_floor_holds_after_the_traffic_stopped(tmp_path: Path) -> None:
    """The HWM bounds are facts about what was acknowledged and sent, whether or not the
    traffic still runs: an observation after the producers stopped is held to 1 + the last
    acks=all acknowledgement (and to the records sent) like one while they ran."""
    sc = load("  producers: [{from: down, until: up, topic: t}]\n")
    clock = iter([float(t) for t in range(100)])
    with TrafficWriter(tmp_path, "windows", clock=lambda: next(clock)) as w:
        w.producer("p0.0", "all", True)
        for seq in range(10):
            w.send("p0.0", seq, f"p0.0-{seq}", "t", 0)
            w.ack("p0.0", seq, f"p0.0-{seq}", "t", 0, seq)
    # traffic lines at t = 1..21; step 3 (after `up`: no traffic) starts at 50
    events = [{"seq": 0, "kind": "step", "phase": "start", "index": 3, "t_mono": 50.0},
              {"seq": 1, "kind": "observation", "topic": "t", "partition": 0,
               "t_mono": 51.0, "state": {"hwm": 9}},
              {"seq": 2, "kind": "observation", "topic": "t", "partition": 0,
               "t_mono": 52.0, "state": {"hwm": 11}},
              {"seq": 3, "kind": "observation", "topic": "t", "partition": 0,
               "t_mono": 53.0, "state": {"hwm": 10}}]
    found = hwm_bound_findings(events, tmp_path / "traffic.jsonl", sc)
    assert [(f["seq"], f.get("floor"), f.get("ceiling")) for f in found] == \
        [(1, 10, None), (2, None, 10)]


def test_a_read_under_traffic_judges_the_gaps_of_the_whole_read() -> None:
    """The final read under traffic writes the scenario's own records only (produce steps
    before and after a traffic window: offsets 0..4 and 40842..), with the whole read's
    skips in its read event: the gaps check judges those, not the holes the traffic's
    records leave between the scenario's (a false DIVERGES on 4.3.1 before); a read that
    did skip is still found. A read event without them: the records' own offsets."""
    def events(gaps: list[dict[str, int]] | None) -> list[dict[str, Any]]:
        read = {"records": 3, "complete": True}
        specs = [("consume", {"record_id": "a", "offset": 0}),
                 ("consume", {"record_id": "b", "offset": 1}),
                 ("consume", {"record_id": "c", "offset": 40842}),
                 ("read", read if gaps is None else {**read, "gaps": gaps})]
        return [{"run_id": "r", "seq": i, "t_wall": 0.0, "t_mono": 0.0, "kind": kind,
                 "topic": "t", "partition": 0, **fields} for i, (kind, fields) in
                enumerate(specs)]

    def gaps(evs: list[dict[str, Any]]) -> list[tuple[int, int]]:
        (check,) = [c for c in run_checks(evs) if c.name == "gaps"]
        return [(d["after"], d["next"]) for d in check.details]

    assert gaps(events([])) == []
    assert gaps(events([{"after": 7, "next": 9}])) == [(7, 9)]
    assert gaps(events(None)) == [(1, 40842)]

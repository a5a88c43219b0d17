"""harness/differential on the Python side, no JVM: the protocol (settings, events,
answers) and the driver process handling against a fake driver (a Python script speaking
the protocol, told by its settings to die, hang, or answer out of turn). The real driver
against a build's jars runs in suites/test_differential.py."""

from __future__ import annotations

import random
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness.differential import driver as driver_mod
from harness.differential import protocol as p
from harness.differential.driver import ControllerDriver
from harness.differential.protocol import (
    DriverError,
    DriverProtocolError,
    SessionUnsupported,
    Settings,
)
from harness.differential.workload import RandomEvents, cycle
from harness.infra import procs
from harness.infra.errors import UsageError

FAKE = r'''
import json, os, sys, time
out, inp = sys.stdout.buffer, sys.stdin.buffer
settings = json.loads(inp.readline())
cfg = settings.get("staticConfig", {})
mode, at = cfg.get("mode", ""), int(cfg.get("at", "0"))
pad = "x" * int(cfg.get("pad", "0"))
def send(obj):
    out.write(json.dumps(obj).encode() + b"\n")
    out.flush()
if mode == "unsupported":
    send({"unsupported": "fake build has no ELR", "kafka": "0.0.fake"})
    sys.exit(0)
if mode == "old_protocol":
    send({"ok": True, "ready": True, "protocol": 0})
    sys.exit(0)
probed = settings.get("coverageClasses", [])
send({"ok": True, "ready": True, "protocol": 1, "kafka": "0.0.fake",
      "metadataVersion": "0.0-IV0", "metadataVersionProduction": True, "elr": False,
      "elrMode": "fake", "unsupportedEvents": {"tick:electUnclean": "fake"},
      "notes": ["a fake"], "records": [], "partitions": {}, "brokers": {},
      "settings": settings, "coverageProbes": {c: 100 for c in probed}})
seq = 0
while True:
    line = inp.readline()
    if not line:
        if mode == "ignore_eof":
            time.sleep(600)
        sys.exit(0)
    seq += 1
    event = json.loads(line)
    sys.stderr.write(f"fake: event {seq} {event['op']}\n")
    sys.stderr.flush()
    if seq == at:
        if mode == "die":
            sys.stderr.write("boom: simulated crash\n")
            sys.exit(3)
        if mode == "hang":
            time.sleep(600)
        if mode == "garbage":
            out.write(b"this is not json\n"); out.flush(); continue
        if mode == "wrong_seq":
            send({"seq": seq + 7, "op": event["op"], "ok": True}); continue
        if mode == "protocol_error":
            send({"seq": seq, "ok": False, "protocolError": "unknown op"}); continue
        if mode == "fatal":
            send({"seq": seq, "ok": False, "fatal": "replay failed"}); sys.exit(2)
        if mode == "two_lines":
            send({"seq": seq, "op": event["op"], "ok": True})
    answer = {"seq": seq, "op": event["op"], "ok": True,
              "records": [{"type": "Echo", "event": event, "pad": pad}],
              "partitions": {"t-0": {"leader": 1, "isr": event.get("isr", [1])}},
              "brokers": {"1": {"epoch": 4, "fenced": False, "alive": True}}}
    if probed and seq % 2:
        answer["newProbes"] = {probed[0]: [seq, seq + 50]}
    if event.get("topic") == "refused":
        answer.update(ok=False, error="INVALID_UPDATE_VERSION: stale",
                      errorName="INVALID_UPDATE_VERSION")
    if event.get("topic") == "unsupported":
        del answer["ok"]; answer["unsupported"] = "not on this build"
    send(answer)
'''


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[Callable[..., ControllerDriver]]:
    script = tmp_path / "fake_driver.py"
    script.write_text(FAKE)
    made: list[ControllerDriver] = []

    def make(mode: str = "", at: int = 0, pad: int = 0, probed: tuple[str, ...] = (),
             **kwargs: Any) -> ControllerDriver:
        settings = Settings(brokers=(1, 2, 3), static_config={"mode": mode, "at": str(at),
                                                              "pad": str(pad)},
                            coverage_classes=probed)
        kwargs.setdefault("log_path", tmp_path / f"driver-{len(made)}.log")
        driver = ControllerDriver([sys.executable, str(script)], settings, **kwargs)
        made.append(driver)
        return driver

    yield make
    for driver in made:
        driver.close()
        assert not driver.running


def _gone(pid: int | None, within_s: float = 5.0) -> bool:
    """The process has exited and been reaped (or is a zombie of ours no longer running)."""
    assert pid is not None
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().split(") ")[1].startswith("Z"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


# ---- protocol ----

def test_settings_to_json_names_what_the_driver_reads() -> None:
    assert Settings().to_json() == {"protocol": 1, "brokers": [], "minIsr": 1,
                                    "uncleanElection": False, "sessionTimeoutMs": 9000,
                                    "report": "all"}
    full = Settings(brokers=(1, 2), elr=True, min_isr=2, unclean_election=True,
                    metadata_version="3.9-IV0", report="changed",
                    static_config={"a": "b"}).to_json()
    assert full["elr"] is True and full["metadataVersion"] == "3.9-IV0"
    assert full["staticConfig"] == {"a": "b"} and full["brokers"] == [1, 2]


@pytest.mark.parametrize(("event", "complaint"), [
    ({"op": "explode"}, "unknown event op 'explode'"),
    ({"broker": 1}, "unknown event op None"),
    ({"op": "fence"}, "event fence needs broker"),
    ({"op": "fence", "broker": 1, "brokr": 2}, "event fence has no field brokr"),
    ({"op": "alterPartition", "topic": "t"}, "event alterPartition needs isr"),
    ({"op": "tick", "task": "nap"}, "tick task must be one of"),
    ({"op": "electLeaders", "topic": "t", "type": "dirty"}, "electLeaders type must be"),
])
def test_a_bad_event_is_refused_before_it_is_sent(event: dict[str, Any], complaint: str) -> None:
    with pytest.raises(UsageError, match=re.escape(complaint)):
        p.check_event(event)


def test_every_helper_makes_an_event_the_check_accepts() -> None:
    made = [p.register(1, clean=False), p.unfence(1), p.fence(1), p.controlled_shutdown(1),
            p.unregister(1), p.create_topic("t", [[1, 2, 3]], {"min.insync.replicas": "2"}),
            p.alter_partition("t", [1, 2], leaderEpoch=3), p.complete_reassignment("t"),
            p.complete_reassignment("t", isr=[1, 2, 4]), p.reassign("t", [1, 3, 4]),
            p.cancel_reassignment("t"), p.elect_leaders("t", "unclean"),
            p.alter_config({"min.insync.replicas": "3"}, "t"),
            p.alter_config({"unclean.leader.election.enable": None}), p.tick("electUnclean"),
            p.create_partitions("t", 3, [[1, 2, 3], [2, 3, 4]]), p.create_partitions("t", 2),
            p.delete_topic("t"), p.update_feature(p.ELR_FEATURE, 0, "safeDowngrade"),
            p.heartbeat(1, offlineDirs=[0], cordonedDirs=[]), p.assign_dirs(1, "t", 0, 1),
            p.list_reassignments(["t"]), p.find_topics(["t"]),
            p.snapshot(), p.snapshot(0)]
    for event in made:
        assert p.check_event(event) == event
    assert {e["op"] for e in made} | {"state"} == set(p.OPS)


def test_python_ops_are_the_java_drivers_ops() -> None:
    text = (driver_mod.SOURCES / f"{driver_mod.MAIN}.java").read_text()
    body = text[text.index("ObjectNode dispatch("):]
    body = body[:body.index("\n    }\n")]
    assert set(re.findall(r'case "(\w+)":', body)) == set(p.OPS)


def _line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj)


def test_answers_parse_ok_refused_and_unsupported() -> None:
    ok = p.parse_answer(_line({"seq": 1, "op": "fence", "ok": True, "records": [{"type": "X"}],
                               "partitions": {"t-0": {"leader": 2}}, "brokers": {}}), 1)
    assert ok.ok and ok.records == ({"type": "X"},) and ok.partition("t") == {"leader": 2}
    refused = p.parse_answer(_line({"seq": 2, "op": "alterPartition", "ok": False,
                                    "error": "FENCED_LEADER_EPOCH: old",
                                    "errorName": "FENCED_LEADER_EPOCH"}), 2)
    assert not refused.ok and refused.error_name == "FENCED_LEADER_EPOCH"
    unsupported = p.parse_answer(_line({"seq": 3, "op": "tick", "unsupported": "no"}), 3)
    assert unsupported.unsupported == "no" and not unsupported.ok
    with pytest.raises(KeyError, match=r"no partition u-0 in the answer to event 1 \(fence\)"):
        ok.partition("u")


@pytest.mark.parametrize(("line", "error", "match"), [
    (b"nope", DriverError, "not JSON"),
    (b"[1]", DriverError, "not a JSON object"),
    (_line({"seq": 9, "ok": True}), DriverError, "answered event 9 where 1 was due"),
    (_line({"seq": 1}), DriverError, "neither ok nor unsupported"),
    (_line({"seq": 1, "ok": False, "protocolError": "bad"}), DriverProtocolError, "bad"),
    (_line({"seq": 1, "ok": False, "fatal": "replay"}), DriverError, "replaying"),
])
def test_an_answer_out_of_protocol_is_a_driver_error(line: bytes, error: type[Exception],
                                                     match: str) -> None:
    with pytest.raises(error, match=match):
        p.parse_answer(line, 1)


def test_ready_unsupported_and_protocol_mismatch() -> None:
    with pytest.raises(SessionUnsupported) as caught:
        p.parse_ready(_line({"unsupported": "no ELR", "kafka": "3.6.2"}))
    assert caught.value.reason == "no ELR" and caught.value.kafka == "3.6.2"
    with pytest.raises(DriverError, match="protocol 0"):
        p.parse_ready(_line({"ok": True, "ready": True, "protocol": 0}))
    with pytest.raises(DriverError, match="not ready"):
        p.parse_ready(_line({"ok": True}))


# ---- the process ----

def test_session_round_trip_with_a_fake_driver(fake: Callable[..., ControllerDriver]) -> None:
    with fake() as driver:
        assert driver.ready is not None and driver.ready.kafka == "0.0.fake"
        assert driver.ready.raw["settings"]["brokers"] == [1, 2, 3]  # the settings went first
        assert driver.ready.unsupported_events == {"tick:electUnclean": "fake"}
        answer = driver.send(p.alter_partition("t", [1, 2]))
        assert answer.ok and answer.seq == 1 and answer.partition("t")["isr"] == [1, 2]
        refused = driver.send(p.reassign("refused", [1]))
        assert not refused.ok and refused.error_name == "INVALID_UPDATE_VERSION"
        assert driver.send(p.reassign("unsupported", [1])).unsupported == "not on this build"
        assert [a.seq for a in driver.send_many([p.unfence(2), p.unfence(3)])] == [4, 5]
        assert driver.send_many([]) == []
        pid = driver.pid
    assert _gone(pid) and not driver.running


def test_pipelined_events_fill_neither_pipe(fake: Callable[..., ControllerDriver]) -> None:
    """20,000 events (1.4 MB in) answered with 1 KB each (20 MB out): written while read."""
    with fake(pad=1000) as driver:
        events = [p.alter_partition("t", [1, 2, 3][: 1 + i % 3]) for i in range(20_000)]
        answers = driver.send_many(events)
    assert [a.seq for a in answers] == list(range(1, 20_001))
    assert [a.records[0]["event"]["isr"] for a in answers[:3]] == [[1], [1, 2], [1, 2, 3]]


def test_a_driver_that_dies_is_a_driver_error_with_its_stderr(
        fake: Callable[..., ControllerDriver]) -> None:
    driver = fake("die", at=2)
    driver.start()
    assert driver.send(p.unfence(1)).ok
    with pytest.raises(DriverError) as caught:
        driver.send(p.unfence(2))
    message = str(caught.value)
    assert "ended its output, exit status 3" in message
    assert "boom: simulated crash" in message and "fake: event 2 unfence" in message
    driver.close()
    assert driver.log_path is not None and driver.log_path.exists(), "kept: something failed"


def test_a_driver_that_hangs_is_killed_at_the_timeout(fake: Callable[..., ControllerDriver]
                                                      ) -> None:
    driver = fake("hang", at=1, answer_timeout_s=1.0)
    driver.start()
    t0 = time.monotonic()
    with pytest.raises(DriverError, match=r"no answer within 1 s \(0 of 1 answered; killed\)"):
        driver.send(p.unfence(1))
    assert time.monotonic() - t0 < 10
    assert _gone(driver.pid)


@pytest.mark.parametrize(("mode", "error", "match"), [
    ("garbage", DriverError, "not JSON"),
    ("wrong_seq", DriverError, "answered event 8 where 1 was due"),
    ("protocol_error", DriverProtocolError, "could not read what it was sent"),
    ("fatal", DriverError, "replay failed"),
    ("two_lines", DriverError, "answered (event 1 where 2 was due|3 lines where 2 were due)"),
])
def test_answers_out_of_protocol(fake: Callable[..., ControllerDriver], mode: str,
                                 error: type[Exception], match: str) -> None:
    driver = fake(mode, at=1)
    driver.start()
    with pytest.raises(error, match=match):
        driver.send_many([p.unfence(1), p.unfence(2)])


def test_unsupported_session_raises_and_leaves_nothing_running(
        fake: Callable[..., ControllerDriver]) -> None:
    driver = fake("unsupported", log_path=None)  # a log of its own: removed unless it failed
    with pytest.raises(SessionUnsupported, match="fake build has no ELR"):
        driver.start()
    assert _gone(driver.pid) and not driver.running
    assert driver.log_path is not None and not driver.log_path.exists(), "nothing failed"


def test_protocol_mismatch_at_start_is_a_driver_error(fake: Callable[..., ControllerDriver]
                                                      ) -> None:
    driver = fake("old_protocol")
    with pytest.raises(DriverError, match="speaks protocol 0"):
        driver.start()
    assert _gone(driver.pid)


def test_a_command_that_cannot_start(tmp_path: Path) -> None:
    driver = ControllerDriver([str(tmp_path / "no-such-java")], log_path=tmp_path / "d.log")
    with pytest.raises(DriverError, match="could not start"):
        driver.start()


def test_close_kills_a_driver_that_does_not_exit(fake: Callable[..., ControllerDriver],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver_mod, "CLOSE_GRACE_S", 0.3)
    driver = fake("ignore_eof")
    driver.start()
    pid = driver.pid
    driver.close()
    driver.close()  # idempotent
    assert _gone(pid)


def test_registered_with_the_harness_cleanup_while_running(
        fake: Callable[..., ControllerDriver], monkeypatch: pytest.MonkeyPatch) -> None:
    registered: dict[int, Callable[[], None]] = {}
    monkeypatch.setattr(procs, "register_cleanup",
                        lambda key, fn: registered.__setitem__(id(key), fn))
    monkeypatch.setattr(procs, "unregister_cleanup", lambda key: registered.pop(id(key), None))
    driver = fake()
    driver.start()
    assert list(registered) == [id(driver)]
    registered[id(driver)]()  # what an exit or SIGTERM of the harness runs
    assert _gone(driver.pid)
    driver.close()
    assert registered == {}


def test_send_before_start_and_start_twice(fake: Callable[..., ControllerDriver]) -> None:
    driver = fake()
    with pytest.raises(DriverError, match="not started"):
        driver.send(p.unfence(1))
    driver.start()
    with pytest.raises(DriverError, match="already started"):
        driver.start()


# ---- workloads ----

def _state() -> tuple[dict[str, Any], dict[str, Any]]:
    partitions = {"a-0": {"leader": 1, "replicas": [1, 2, 3], "isr": [1, 2], "elr": [],
                          "adding": [], "removing": []},
                  "b-0": {"leader": -1, "replicas": [4, 2, 3, 1], "isr": [], "elr": [3],
                          "adding": [1], "removing": [4]}}
    brokers = {"1": {"alive": True, "fenced": False}, "2": {"alive": True, "fenced": True},
               "3": {"alive": False, "fenced": True}, "4": {"alive": True, "fenced": False}}
    return partitions, brokers


def test_random_events_are_valid_and_follow_the_seed() -> None:
    def run(seed: int) -> list[dict[str, Any]]:
        gen = RandomEvents(random.Random(seed), [1, 2, 3, 4], ["a", "b"])
        partitions, brokers = _state()
        return [gen.next(partitions, brokers) for _ in range(500)]
    first = run(7)
    assert first == run(7) and first != run(8)
    for event in first:
        p.check_event(event)
    ops = {e["op"] for e in first}
    assert {"fence", "unfence", "register", "alterPartition", "electLeaders"} <= ops
    # b-0 is moving and leaderless: cancelled, never completed; a-0 is not moving
    assert not any(e["op"] == "completeReassignment" for e in first)
    assert {e["topic"] for e in first if e["op"] == "cancelReassignment"} == {"b"}
    assert {e["topic"] for e in first if e["op"] == "reassign"} == {"a"}
    setup = RandomEvents(random.Random(0), [1, 2, 3], ["a", "b"]).setup()
    assert [e["assignment"] for e in setup] == [[[1, 2, 3]], [[2, 3, 1]]]


def test_cycle_needs_no_state() -> None:
    events: Iterator[dict[str, Any]] = cycle("t", [1, 2, 3])
    first = [next(events) for _ in range(18)]
    for event in first:
        p.check_event(event)
    assert first[:9] == first[9:]
    assert first[0] == p.alter_partition("t", [1, 2])


def test_coverage_probes_pass_through_the_driver(fake: Callable[..., ControllerDriver]) -> None:
    """Settings ask for probes; the ready answer names each class's probe count and the
    answers the probes an event set first (odd events here)."""
    with fake(probed=("PartitionChangeBuilder",)) as driver:
        assert driver.ready is not None
        assert driver.ready.coverage_probes == {"PartitionChangeBuilder": 100}
        answers = driver.send_many([p.fence(1), p.unfence(1), p.fence(1)])
        assert [a.new_probes for a in answers] == [
            {"PartitionChangeBuilder": (1, 51)}, {}, {"PartitionChangeBuilder": (3, 53)}]
    with fake() as plain:
        assert plain.ready is not None and plain.ready.coverage_probes == {}
        assert plain.send(p.fence(1)).new_probes == {}

"""The model side of the differential comparison, no JVM: crafted driver answers against
reference.model.controller_events through harness.differential.compare (an agreeing
sequence; a difference a cited deviation explains; an unexplained one; the ELR keeping a
removed replica as 4.3.1's controller answered it; UNMODELLED events), and the campaign's
shrinking against a fake replay (the difference is kept)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.cli.app import main
from harness.differential import protocol as p
from harness.differential.campaign import Campaign, Config, Found, rename
from harness.differential.compare import (
    AGREES,
    DEVIATES,
    DIVERGES,
    KIP_DIVERGES,
    UNMODELLED,
    Comparator,
    Finding,
)
from harness.differential.model import initial
from harness.differential.protocol import Answer
from reference.model.controller_events import Cluster, apply
from reference.releases.catalog import PROFILES, get_profile
from reference.releases.deviations import deviations_of, kip_base


def part(leader: int, le: int, pe: int, replicas: list[int], isr: list[int],
         elr: list[int] | None = None, lke: list[int] | None = None,
         adding: list[int] | None = None, removing: list[int] | None = None) -> dict[str, Any]:
    return {"leader": leader, "leaderEpoch": le, "partitionEpoch": pe, "replicas": replicas,
            "isr": isr, "elr": elr or [], "lastKnownElr": lke or [], "adding": adding or [],
            "removing": removing or [], "leaderRecoveryState": "RECOVERED"}


def brokers(ids: list[int], fenced: tuple[int, ...] = (), down: tuple[int, ...] = ()
            ) -> dict[str, dict[str, Any]]:
    return {str(b): {"epoch": 1, "fenced": b in fenced, "inControlledShutdown": False,
                     "alive": b not in down} for b in ids}


_seq = iter(range(1, 1_000_000))


def answer(op: str, partitions: dict[str, Any], regs: dict[str, Any], ok: bool = True,
           error_name: str | None = None) -> Answer:
    return Answer(seq=next(_seq), op=op, ok=ok, unsupported=None,
                  error=None if ok else f"{error_name}: refused", error_name=error_name,
                  exception=None, records=(), partitions=partitions, brokers=regs, notes=(),
                  raw={})


def comparator(ids: list[int], min_isr: int, version: tuple[int, int, int] = (4, 3, 1)
               ) -> Comparator:
    start = initial({}, brokers(ids), min_isr=min_isr, unclean=False, elr=True)
    return Comparator(version, True, start)


def test_an_agreeing_sequence_agrees_on_both_axes() -> None:
    c = comparator([1, 2, 3], min_isr=2)
    ids = [1, 2, 3]
    steps = [
        (p.create_topic("t", [[1, 2, 3]]), part(1, 0, 0, ids, ids), brokers(ids)),
        (p.fence(3), part(1, 0, 1, ids, [1, 2]), brokers(ids, (3,), (3,))),
        (p.fence(2), part(1, 0, 2, ids, [1], [2]), brokers(ids, (2, 3), (2, 3))),
        (p.unfence(2), part(1, 0, 2, ids, [1], [2]), brokers(ids, (3,), (3,))),
        (p.alter_partition("t", [1, 2]), part(1, 0, 3, ids, [1, 2]), brokers(ids, (3,), (3,))),
        ({"op": "state"}, part(1, 0, 3, ids, [1, 2]), brokers(ids, (3,), (3,))),
    ]
    for event, state, regs in steps:
        rep = c.step(event, answer(event["op"], {"t-0": state}, regs))
        assert (rep.release, rep.kip, rep.findings) == (AGREES, AGREES, []), (event, rep)


def _under_min_isr(c: Comparator) -> None:
    ids = [1, 2, 3]
    for event, state, regs in [
        (p.create_topic("t", [[1, 2, 3]]), part(1, 0, 0, ids, ids), brokers(ids)),
        (p.fence(3), part(1, 0, 1, ids, [1, 2]), brokers(ids, (3,), (3,))),
        (p.fence(2), part(1, 0, 2, ids, [1], [2]), brokers(ids, (2, 3), (2, 3)))]:
        c.step(event, answer(event["op"], {"t-0": state}, regs))


def test_a_difference_a_cited_deviation_explains_deviates() -> None:
    # ISR [1], ELR [2]; min ISR raised to 3 (> |ISR|): the KIP keeps the ELR, 4.3.1 writes
    # a ClearElrRecord (deviation min-isr-change-always-clears-elr).
    c = comparator([1, 2, 3], min_isr=2)
    _under_min_isr(c)
    event = p.alter_config({"min.insync.replicas": "3"}, topic="t")
    rep = c.step(event, answer("alterConfig", {"t-0": part(1, 0, 3, [1, 2, 3], [1])},
                               brokers([1, 2, 3], (2, 3), (2, 3))))
    assert rep.release == AGREES
    assert rep.kip == DEVIATES
    assert rep.deviations == ("min-isr-change-always-clears-elr",)
    assert rep.findings == []


def test_an_unexplained_difference_is_a_finding_on_both_axes() -> None:
    c = comparator([1, 2, 3], min_isr=2)
    ids = [1, 2, 3]
    c.step(p.create_topic("t", [[1, 2, 3]]),
           answer("createTopic", {"t-0": part(1, 0, 0, ids, ids)}, brokers(ids)))
    # A build that put 3 in the ELR although the ISR [1, 2] is at min ISR 2.
    rep = c.step(p.fence(3), answer("fence", {"t-0": part(1, 0, 1, ids, [1, 2], [3])},
                                    brokers(ids, (3,), (3,))))
    assert (rep.release, rep.kip) == (DIVERGES, KIP_DIVERGES)
    sigs = {f.signature for f in rep.findings}
    assert sigs == {"release:elr:fence:kafka-4.3", "kip:elr:fence:kip966",
                    "invariant:ElrEmptyAtMinIsr:fence:kafka-4.3"}
    release = next(f for f in rep.findings if f.axis == "release")
    assert release.model["t-0"]["elr"] == [] and release.build["t-0"]["elr"] == [3]
    assert "t-0 elr: model [], build [3]" in release.detail


def test_the_elr_keeping_a_removed_replica_is_found_blind() -> None:
    """4.3.1's own answers (harness/differential, Settings(brokers=(1, 2, 3, 4), min_isr=3,
    elr=True)): the release profile predicts them (the rule is in the model), the KIP does
    not (deviation reassignment-ignores-min-isr), and the state breaks the KIP's
    IsrElrWithinReplicas invariant: a finding whatever the profile."""
    c = comparator([1, 2, 3, 4], min_isr=3)
    ids = [1, 2, 3, 4]
    down = brokers(ids, (3,), (3,))
    steps = [
        (p.create_topic("t", [[1, 2, 3]]), part(1, 0, 0, [1, 2, 3], [1, 2, 3]), brokers(ids)),
        (p.fence(3), part(1, 0, 1, [1, 2, 3], [1, 2], [3]), down),
        (p.reassign("t", [1, 3, 4]), part(1, 0, 2, [1, 3, 4, 2], [1, 2], [3], adding=[4],
                                          removing=[2]), down),
    ]
    for event, state, regs in steps:
        rep = c.step(event, answer(event["op"], {"t-0": state}, regs))
        assert rep.release == AGREES and not rep.findings, (event, rep)
    rep = c.step(p.complete_reassignment("t"),
                 answer("completeReassignment", {"t-0": part(1, 1, 3, [1, 3, 4], [1, 4], [2, 3])},
                        down))
    assert rep.release == AGREES
    assert rep.kip == DEVIATES and rep.deviations == ("reassignment-ignores-min-isr",)
    (found,) = rep.findings
    assert found.signature == "invariant:IsrElrWithinReplicas:completeReassignment:kafka-4.3"
    assert "[2] in ISR [1, 4] / ELR [2, 3]" in found.detail


def test_fencing_an_elr_only_member_changes_no_partition() -> None:
    """handleBrokerFenced re-runs only the partitions with the broker in the ISR, in every
    release 3.6.2-4.3.1 (brokersToIsrs.
    partitionsWithBrokerInIsr). 4.3.1's answer after the ELR finding's state (replica 3
    removed, ISR at min ISR, ELR [3]; diff campaign m3, bench/RESULTS-diff-coverage.md): no
    change. The model re-ran the ELR's partitions too and cleared the ELR (partitionEpoch 4
    against the build's 3)."""
    ids = [1, 2, 3]
    stale = part(1, 1, 3, [1, 2], [1, 2], [3])
    start = initial({"t-0": stale}, brokers(ids), min_isr=2, unclean=False, elr=True)
    c = Comparator((4, 3, 1), True, start)
    rep = c.step(p.fence(3), answer("fence", {"t-0": stale}, brokers(ids, (3,), (3,))))
    assert rep.release == AGREES, [f.detail for f in rep.findings]
    # The same for a controlled shutdown (handleBrokerInControlledShutdown, 3.6.2-4.3.1).
    c = Comparator((4, 3, 1), True, initial({"t-0": stale}, brokers(ids), min_isr=2,
                                            unclean=False, elr=True))
    regs = brokers(ids, (3,), (3,))
    regs["3"]["inControlledShutdown"] = True
    rep = c.step(p.controlled_shutdown(3), answer("controlledShutdown", {"t-0": stale}, regs))
    assert rep.release == AGREES, [f.detail for f in rep.findings]


def test_an_event_the_model_does_not_cover_is_unmodelled_never_equal() -> None:
    c = comparator([1, 2, 3], min_isr=2)
    rep = c.step({"op": "heartbeat", "broker": 1},
                 answer("heartbeat", {}, brokers([1, 2, 3])))
    assert (rep.release, rep.kip) == (UNMODELLED, UNMODELLED) and rep.why
    state = Cluster(brokers={}, partitions={})
    assert apply(state, get_profile("kip966"), {"op": "createTopic", "topic": "t",
                                                "partitions": 1,
                                                "replicationFactor": 3}).unmodelled


def test_registration_is_refused_while_the_old_session_lives() -> None:
    c = comparator([1, 2, 3], min_isr=2)
    ids = [1, 2, 3]
    c.step(p.create_topic("t", [[1, 2, 3]]),
           answer("createTopic", {"t-0": part(1, 0, 0, ids, ids)}, brokers(ids)))
    after_shutdown = {**brokers(ids, (3,), (3,))}
    after_shutdown["3"]["inControlledShutdown"] = True
    rep = c.step(p.controlled_shutdown(3),
                 answer("controlledShutdown", {"t-0": part(1, 0, 1, ids, [1, 2])}, after_shutdown))
    assert rep.release == AGREES, rep.findings
    rep = c.step(p.register(3), answer("register", {}, after_shutdown, ok=False,
                                       error_name="DUPLICATE_BROKER_REGISTRATION"))
    assert rep.release == AGREES, rep.findings


def _register_after(profile: str, events: list[dict[str, Any]]) -> tuple[bool, str | None]:
    """Broker 4 registered and fenced, then ``events``, then a new incarnation of 4 registers
    (unclean): whether the model accepts it, and its error."""
    c: Cluster = initial({}, brokers([1, 2, 3, 4], fenced=(4,)), min_isr=2, unclean=False,
                         elr=False)
    for event in events:
        pred = apply(c, get_profile(profile), event)
        assert [o.accepted for o in pred.outcomes] == [True], (event, pred)
        c = pred.outcomes[0].cluster
    outs = apply(c, get_profile(profile), p.register(4, clean=False)).outcomes
    assert len(outs) == 1
    return outs[0].accepted, outs[0].error


@pytest.mark.parametrize("profile", ["kip966", "kafka-4.0-noelr", "kafka-4.1", "kafka-4.3"])
def test_a_completed_controlled_shutdown_keeps_the_session_on_4x(profile: str) -> None:
    # 4.0+ BrokerHeartbeatTracker: the (id, epoch) session lives until it times out.
    done = [p.unfence(4), p.controlled_shutdown(4)]
    assert _register_after(profile, done) == (False, "DUPLICATE_BROKER_REGISTRATION")
    assert _register_after(profile, [p.unfence(4)]) == (False, "DUPLICATE_BROKER_REGISTRATION")


@pytest.mark.parametrize("profile", ["pre-3.7", "kafka-3.7", "kafka-3.8", "pre-elr"])
def test_a_completed_controlled_shutdown_ends_the_session_on_3x(profile: str) -> None:
    # 3.x hasValidSession(brokerId) is false for a fenced broker (SHUTDOWN_NOW fences it):
    # the 3.9.2 / 3.8.1 diff's release:accepted:register finding (seed 2027).
    done = [p.unfence(4), p.controlled_shutdown(4)]
    assert _register_after(profile, done) == (True, None)
    # An unfenced broker whose session lives is still refused.
    assert _register_after(profile, [p.unfence(4)]) == (False, "DUPLICATE_BROKER_REGISTRATION")


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_only_the_3x_profiles_end_the_session_when_fenced(name: str) -> None:
    profile = PROFILES[name]
    named = "session-ends-when-fenced" in [d.id for d in deviations_of(profile, False,
                                                                        kip_base(profile))]
    assert named == (name in ("pre-3.7", "kafka-3.7", "kafka-3.8", "pre-elr"))
    assert profile.session_outlives_fencing is not named


def test_a_3x_registration_after_controlled_shutdown_deviates_from_the_kip() -> None:
    """3.9.2 accepts it: the release axis agrees; the kip axis (which refuses) names the
    deviation the 3.x profile carries."""
    ids = [1, 2, 3, 4]
    c = comparator(ids, min_isr=2, version=(3, 9, 2))
    after_shutdown = brokers(ids, (4,), (4,))
    after_shutdown["4"]["inControlledShutdown"] = True
    c.step(p.controlled_shutdown(4), answer("controlledShutdown", {}, after_shutdown))
    reg = brokers(ids, (4,))
    reg["4"]["epoch"] = 2
    rep = c.step(p.register(4, clean=False), answer("register", {}, reg))
    assert rep.release == AGREES, rep.findings
    assert (rep.kip, rep.deviations) == (DEVIATES, ("session-ends-when-fenced",)), rep


def test_shrinking_keeps_the_difference(tmp_path: Path) -> None:
    """A fake replay shows the signature iff the candidate holds 'a' then 'b' (any events
    between): the shrink ends at exactly those two."""
    sig = "release:elr:fence:kafka-4.3"
    events = [{"op": "state", "n": i} for i in range(40)]
    events[7] = {"op": "a"}
    events[31] = {"op": "b"}
    campaign = Campaign(build=None, cfg=Config(seed=1, budget_s=1, shrink_budget_s=60,  # type: ignore[arg-type]
                                               shrink_attempts=400), out_dir=tmp_path,
                        say=lambda s: None)
    replays: list[int] = []

    def replay(cands: list[list[dict[str, Any]]]) -> list[set[str]]:
        replays.append(len(cands))
        out = []
        for cand in cands:
            ops = [e["op"] for e in cand]
            ok = "a" in ops and "b" in ops and ops.index("a") < ops.index("b")
            out.append({sig} if ok else set())
        return out

    campaign.replay = replay  # type: ignore[method-assign]
    found = Found(Finding("release", "elr", "fence", "kafka-4.3", "x"), 1, 40, 0.0, events)
    campaign._shrink(found)
    assert found.shrunk == [{"op": "a"}, {"op": "b"}]
    assert "40 -> 2 events" in found.shrink_note
    assert replay(  # the shrunk sequence still differs
        [found.shrunk]) == [{sig}]


def test_rename_moves_an_event_between_lanes() -> None:
    event = {"op": "alterPartition", "topic": "k3t1", "partition": 0, "isr": [31, 32],
             "leader": 31}
    assert rename(event, 3, 0) == {"op": "alterPartition", "topic": "k0t1", "partition": 0,
                                   "isr": [1, 2], "leader": 1}
    assert rename({"op": "createTopic", "topic": "k0t0", "assignment": [[1, 2, 3]]}, 0, 2) == \
        {"op": "createTopic", "topic": "k2t0", "assignment": [[21, 22, 23]]}


@pytest.mark.parametrize("flags, message", [
    (["--seed", "x"], "--seed 'x' is not a whole number"),
    (["--budget", "soon"], "is not a duration"),
    (["--lanes", "0"], "--lanes 0: give 1..50"),
    (["--lane-events", "5"], "--lane-events 5: give 10..100000"),
])
def test_bad_flags_fail_before_any_jvm(flags: list[str], message: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--runs-dir", str(tmp_path), *flags]) == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())

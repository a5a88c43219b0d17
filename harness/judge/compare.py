"""Comparisons of what a run observed with what the model predicted, and the data checks
as the model sees them: the same functions judge a step online (the runner) and offline
(``audit``, ``kafka-chaos mutate``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.cluster.topology import ClusterShape
from harness.judge.lanes import single
from harness.scenario.loader import Scenario

CONFORMS, DIVERGES, UNSUPPORTED, ERROR = "CONFORMS", "DIVERGES", "UNSUPPORTED", "ERROR"


_SEVERITY = {CONFORMS: 0, UNSUPPORTED: 1, DIVERGES: 2, ERROR: 3}


def worst(verdicts: list[str]) -> str:
    return max(verdicts, key=lambda v: _SEVERITY[v], default=CONFORMS)


def effective_broker_config(shape: ClusterShape) -> dict[str, str]:
    """What the brokers really run with: the harness's presets, then the scenario's."""
    from harness.cluster.config import TEST_FRIENDLY_BROKER
    return {**TEST_FRIENDLY_BROKER, **shape.broker_config}


def shape_of(scenario: Scenario) -> ClusterShape:
    c = scenario.cluster
    return ClusterShape(brokers=c.brokers, controllers=c.controllers, elr=c.elr,
                        broker_config={k: str(v) for k, v in dict(c.broker_config).items()},
                        metadata_version=getattr(c, "metadata_version", None),
                        features=tuple(getattr(c, "features", ())),
                        unstable_features=bool(getattr(c, "unstable_features", False)),
                        builds=tuple(getattr(c, "builds", ())),
                        log_dirs=int(getattr(c, "log_dirs", 1)),
                        tiered_storage=bool(getattr(c, "tiered_storage", False)),
                        lines=tuple(getattr(c, "lines", ())))


def birth_level(shape: ClusterShape) -> int | None:
    """The metadata.version level the cluster is born at (None: its build's newest)."""
    from reference.model.metadata_version import level_of
    return level_of(shape.metadata_version) if shape.metadata_version else None


def predicts_hwm_drop(events: list[dict[str, Any]]) -> bool:
    """Whether the model's own predictions (prediction events) let the HWM go down."""
    floor = None
    for e in events:
        if e["kind"] != "prediction":
            continue
        hwms = [s.get("hwm") for s in e.get("allowed", []) if s.get("hwm") is not None]
        if not hwms:
            continue
        if floor is not None and min(hwms) < floor:
            return True
        floor = max(hwms)
    return False


def run_data_checks(raw_checks: list[Any], model: Any,
                    hwm_drop_predicted: bool = False) -> list[dict[str, Any]]:
    """Data checks over a history. A finding the model predicts is not a divergence: pre-ELR
    profiles predict the KIP's last-replica-standing loss (acked records lost, HWM going
    back). Acked records are a divergence only where the model says they must survive."""
    hwm_predicted = hwm_drop_predicted or any(": HwmMonotonic:" in v
                                              for v in model.violations())
    out = []
    for check in raw_checks:
        entry: dict[str, Any] = {"name": check.name, "ok": check.ok, "details": check.details}
        if check.name == "acked_lost" and not check.ok:
            lost = frozenset(d.get("record_id") for d in check.details)
            unexplained = model.unread(lost)
            entry["ok"] = not unexplained
            entry["predicted_by_model"] = sorted(lost - unexplained)
        if check.name == "hwm_regression" and not check.ok and hwm_predicted:
            entry["ok"] = True
            entry["predicted_by_model"] = check.details
        out.append(entry)
    return out


def with_checks(verdict: str, reason: str, checks: list[dict[str, Any]]) -> tuple[str, str]:
    """The release verdict and reason once the data checks are in: a failed check makes it
    DIVERGES and, when no step gave a reason, names it (``check gaps``), so a failure's
    signature names the check rather than ``other``."""
    failed = [c["name"] for c in checks if not c["ok"]]
    if not failed:
        return verdict, reason
    return worst([verdict, DIVERGES]), reason or f"check {failed[0]}"


def observed_state(observed: Mapping[str, Any]) -> Any:
    from reference import PartitionState
    return PartitionState.from_json(dict(observed))


def hwm_hidden(pred: Any, observed: Mapping[str, Any]) -> bool:
    """The model says the HWM moved in this step, and the leader hides it (ListOffsets
    OFFSET_NOT_AVAILABLE: a new leader's HWM below its epoch's start offset). The HWM is
    what shows that the followers have fetched the step's records, so the step is not
    settled until it shows or HWM_VISIBLE_WAIT_S passes; otherwise the next fault may cut
    a follower off before it fetched what the model gives it (fuzz-s1127-34 on 4.3.1:
    a lose_unflushed offset beyond the killed follower's log end)."""
    return (pred is not None and bool(pred.hwm_may_move) and observed.get("hwm") is None
            and observed.get("leader") not in (None, -1))


def quorum_unseen(pred: Any, observed: Mapping[str, Any]) -> bool:
    """Several controllers, a prediction with an active controller in every branch, and an
    observation that could not read the quorum: not evidence either way, poll again."""
    return ("controller" in observed and observed["controller"] is None
            and bool(pred.allowed)
            and all(a.controller is not None and a.controller >= 0 for a in pred.allowed))


#: What an await compares, in the order it reports; ``replicas`` is an ordered assignment
#: (its first replica is the preferred leader), every other list a set.
_AWAIT_COMPARED = ("leader", "leader_epoch", "replicas", "isr", "elr", "last_known_elr",
                   "hwm", "fenced", "adding", "removing")


#: Fields some builds cannot show (None in their observations): never a divergence there.
_MAY_BE_UNOBSERVABLE = ("elr", "last_known_elr", "adding", "removing")


def await_mismatch(expected: Mapping[str, Any], observed: Mapping[str, Any]) -> str | None:
    ready = sorted(set(expected.get("ready", ())) & set(observed.get("fenced") or ()))
    if ready:
        return f"ready: brokers {ready} fenced or not registered"
    for key in _AWAIT_COMPARED:
        if key not in expected:
            continue
        if key in _MAY_BE_UNOBSERVABLE and observed.get(key) is None:
            continue
        want, got = expected[key], observed.get(key)
        if key == "leader" and want is None:
            want = -1  # `leader: null` in a scenario means leaderless
        if key == "replicas":
            want, got = list(want), list(got or [])
        elif isinstance(want, list):
            want, got = sorted(want), sorted(got or [])
        if want != got:
            return f"{key}: await expected {want}, observed {got}"
    return None


def ack_mismatch(pred: Any, outcome: Any) -> str | None:
    if not outcome.acks:
        return None
    rejected = list(outcome.errors)  # acks=0 has no offset but no error either
    if pred.expected_acks == "acked" and rejected:
        errors = sorted(set(outcome.errors.values()))
        return f"acks: predicted acked, observed {len(rejected)} rejected ({', '.join(errors)})"
    if pred.expected_acks == "rejected" and len(rejected) < len(outcome.acks):
        return (f"acks: predicted rejected, observed "
                f"{len(outcome.acks) - len(rejected)} acknowledged")
    return None


def refusal_mismatch(pred: Any, outcome: Any) -> str | None:
    """A step the build may refuse (``feature``): the model's prediction and the step's
    own ``refused:`` against what the build answered."""
    expected = getattr(pred, "expected_refusal", None)
    declared = getattr(outcome, "declared_refused", None)
    refused = getattr(outcome, "refused", None)
    if expected is None and declared is None:
        return None
    said = "refused" if refused is not None else "accepted"
    why = f" ({refused[-200:]})" if refused is not None else ""
    for who, want in (("predicted", expected), ("declared", declared)):
        if want is not None and want != (refused is not None):
            return f"feature: {who} {'refused' if want else 'accepted'}, observed {said}{why}"
    return None


def consume_mismatch(pred: Any, outcome: Any) -> str | None:
    if outcome.consumed is None:
        return None
    from reference.model.predict import unread
    seen = {rid for _, rid in outcome.consumed}
    acked = pred.must_survive | pred.at_risk
    missing = sorted(unread(frozenset(acked - seen), pred.must_survive, pred.must_read))
    if missing:
        return f"records: {len(missing)} acked records not visible, e.g. {missing[:5]}"
    return None


def model_for(scenario: Scenario, profile: Any, elr: bool, follow_builds: bool = False) -> Any:
    """The model of a scenario under a profile (name or Profile), as the run had it
    (``follow_builds``: its rules follow the active controller's build, Model)."""
    from reference import ClusterSpec, Model, TopicSpec
    sc = scenario
    shape = shape_of(sc)
    assert single(sc), "a model is of one partition: take a lane's scenario"
    return Model(profile=profile,
                 cluster=ClusterSpec(brokers=shape.broker_ids,
                                     controllers=shape.controller_ids,
                                     broker_config=effective_broker_config(shape),
                                     metadata_level=birth_level(shape),
                                     builds=shape.builds),
                 topic=TopicSpec(name=sc.topic.name, replicas=tuple(sc.topic.replicas),
                                 min_insync_replicas=sc.topic.min_insync_replicas,
                                 config=dict(sc.topic.config),
                                 absent=sc.topic.born_at(0) is not None),
                 elr_enabled=elr, seed=sc.seed, follow_builds=follow_builds)

"""Reference model of KIP-966 (Eligible Leader Replicas) and KIP-1303 for one
partition of a KRaft cluster. Pure: no I/O, no clocks, no threads, no unseeded
randomness."""

from reference.model.predict import Model, Prediction
from reference.model.state import NO_LEADER, ClusterSpec, PartitionState, TopicSpec
from reference.releases.catalog import PROFILES, profile_for_build
from reference.releases.profiles import Profile
from reference.trace.records import (
    BrokerRegistration,
    CommittedState,
    PartitionRegistration,
    TraceContext,
    TraceResult,
    Violation,
)
from reference.trace.replay import (
    committed_prefix_agrees,
    common_prefix_agrees,
    replay,
    validate,
)
from reference.trace.rules import RULES as TRACE_RULES

__all__ = [
    "NO_LEADER",
    "PROFILES",
    "ClusterSpec",
    "Model",
    "PartitionState",
    "Prediction",
    "Profile",
    "TopicSpec",
    "profile_for_build",
    "BrokerRegistration",
    "CommittedState",
    "PartitionRegistration",
    "TRACE_RULES",
    "TraceContext",
    "TraceResult",
    "Violation",
    "committed_prefix_agrees",
    "common_prefix_agrees",
    "replay",
    "validate",
]

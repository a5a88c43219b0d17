"""Reference model of KIP-966 (Eligible Leader Replicas) and KIP-1303 for one
partition of a KRaft cluster. Pure: no I/O, no clocks, no threads, no unseeded
randomness."""

from .model import Model, Prediction
from .profiles import Profile
from .releases import PROFILES, profile_for_build
from .state import NO_LEADER, ClusterSpec, PartitionState, TopicSpec
from .trace import (
    BrokerRegistration,
    CommittedState,
    PartitionRegistration,
    TraceContext,
    TraceResult,
    Violation,
    committed_prefix_agrees,
    common_prefix_agrees,
    replay,
    validate,
)
from .trace_rules import RULES as TRACE_RULES

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

"""Reference model of KIP-966 (Eligible Leader Replicas) and KIP-1303 for one
partition of a KRaft cluster. Pure: no I/O, no clocks, no threads, no unseeded
randomness."""

from .model import Model, Prediction
from .profiles import PROFILES, Profile, profile_for_build
from .state import NO_LEADER, ClusterSpec, PartitionState, TopicSpec

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
]

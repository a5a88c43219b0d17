"""Leader election: clean elections from ISR / ELR, the last known leader, unclean
election, KIP-966 unclean recovery (Aggressive / Balanced / None) and the KIP-1303
local-log eligibility sort.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from reference.releases.profiles import Profile

STRATEGIES = ("Aggressive", "Balanced", "None")


class Decision(Enum):
    """What the controller does for a partition that needs a leader (seeds/003
    'Unclean recovery', decision order)."""

    ELECT_ISR = "elect an ISR member"
    ELECT_ELR = "elect an unfenced ELR member"
    UNCLEAN_RECOVERY = "unclean recovery"
    WAIT_FOR_ELR = "wait for a fenced ELR member to be unfenced"
    WAIT_FOR_LAST_KNOWN_ELR = "wait until all LastKnownELR members are unfenced"
    WAIT_FOR_USER = "wait for the user (strategy None)"


def decide(
    strategy: str,
    *,
    isr_available: bool,
    unfenced_elr: bool,
    fenced_elr: bool,
    last_known_elr_all_unfenced: bool,
) -> Decision:
    """KIP-966 decision order "when the ISR and ELR meet the requirements":

    1. If there are other ISR members, choose an ISR member.
    2. If there are unfenced ELR members, choose an ELR member.
    3. If there are fenced ELR members: Aggressive -> unclean recovery; otherwise wait
       for the fenced ELR members to be unfenced.
    4. If there are no ELR members: Aggressive -> unclean recovery; Balanced -> unclean
       recovery when all the LastKnownELR are unfenced; None -> wait for the user.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown unclean.recovery.strategy {strategy!r}")
    if isr_available:
        return Decision.ELECT_ISR
    if unfenced_elr:
        return Decision.ELECT_ELR
    if fenced_elr:
        return Decision.UNCLEAN_RECOVERY if strategy == "Aggressive" else Decision.WAIT_FOR_ELR
    if strategy == "Aggressive":
        return Decision.UNCLEAN_RECOVERY
    if strategy == "Balanced":
        return (Decision.UNCLEAN_RECOVERY if last_known_elr_all_unfenced
                else Decision.WAIT_FOR_LAST_KNOWN_ELR)
    return Decision.WAIT_FOR_USER


@dataclass(frozen=True, slots=True)
class LogInfo:
    """A GetReplicaLogInfo answer: the leader epoch of the last record and the log
    end offset."""

    last_epoch: int
    leo: int


def longest_log(replies: Mapping[int, LogInfo]) -> list[int]:
    """"The one with the highest leader epoch plus the longest log end offset will be
    the new leader." Returns every replica that ties for the best (ascending ids)."""
    if not replies:
        return []
    best = max((i.last_epoch, i.leo) for i in replies.values())
    return sorted(r for r, i in replies.items() if (i.last_epoch, i.leo) == best)


def recovery_ready(strategy: str, replied: Iterable[int], last_known_elr: Iterable[int]) -> bool:
    """When the controller can elect after GetReplicaLogInfo: Balanced needs "all the
    LastKnownELR members have replied"; Aggressive any reply."""
    got = set(replied)
    if not got:
        return False
    if strategy == "Balanced":
        return set(last_known_elr) <= got
    return strategy == "Aggressive"


def elect_when_replied(replies: Mapping[int, LogInfo], required: int) -> list[int]:
    """The REJECTED alternative "the controller elects the leader when a given number
    of replicas have replied": elect the longest log once ``required`` replied."""
    return longest_log(replies) if len(replies) >= required else []


# --- KIP-1303 -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LocalLog:
    """KIP-1303 facts a replica reports: localLogStartTimestamp, localLogSizeBytes
    (None: not reported yet)."""

    start_ms: int | None = None
    size_bytes: int | None = None


def feature_on(threshold_ms: int, threshold_bytes: int) -> bool:
    """"Setting either config > 0 enables the feature"."""
    return threshold_ms > 0 or threshold_bytes > 0


def eligible(local: LocalLog, *, now_ms: int, threshold_ms: int, threshold_bytes: int) -> bool:
    """KIP-1303 eligibility. Unknown state counts as eligible ("We assume unknown
    replicas have complete local data until proven otherwise")."""
    if not feature_on(threshold_ms, threshold_bytes):
        return True
    if local.start_ms is None and local.size_bytes is None:
        return True
    if threshold_ms > 0 and local.start_ms is not None and now_ms - local.start_ms >= threshold_ms:
        return True
    return (threshold_bytes > 0 and local.size_bytes is not None
            and local.size_bytes >= threshold_bytes)


def kip1303_order(
    replicas: Sequence[int], is_eligible: Callable[[int], bool],
) -> list[int]:
    """Stable sort: eligible replicas first, assignment order kept within each group."""
    return sorted(replicas, key=lambda r: 0 if is_eligible(r) else 1)


# --- clean elections ------------------------------------------------------------


def pick(profile: Profile, ordered: Sequence[int], valid: Callable[[int], bool]) -> list[int]:
    """The winners a profile allows among ``ordered`` candidates: the first valid one
    ("assignment": PartitionChangeBuilder), or any valid one ("any": the KIP only says
    "choose an ISR member")."""
    ok = [r for r in ordered if valid(r)]
    if not ok:
        return []
    if profile.election_order == "last":
        return ok[-1:]
    return ok[:1] if profile.election_order == "assignment" else ok

"""How the schedule generator makes each step kind: its default weight, every step of the
kind that could come next, the guard that says why one may not (it must hold in every
branch of the model's current prediction), and what the step leaves for later guards.

Each kind's generator is named by its step kind's definition (the ``generator`` of its
``StepKind`` in harness/scenario/steps/); the fuzz generator makes exactly the kinds the
registry gives a generator (harness/search/fuzz/), so a kind is generated where it is
defined. The rules are FORMAT.md's "Generated schedules". Pure: parameters are drawn from
the caller's seeded ``random.Random``.

By step family: ``generator`` (the ``Generator`` and ``Exploration`` types and the state a
guard reads), ``records``, ``network`` (with pause/resume), ``processes`` (with
unregister), ``admin`` (requests through the controller) and ``timing``. ``ALL`` puts them
in the one order campaigns and the explorer iterate.
"""

from __future__ import annotations

from collections.abc import Mapping

from reference.search.generators.admin import (
    ALTER_CONFIG,
    ELECT,
    ELECTIONS,
    MIN_ISR,
    REASSIGN,
    UNCLEAN,
    Config,
)
from reference.search.generators.features import FEATURE
from reference.search.generators.generator import (
    After,
    Builds,
    Exploration,
    Gen,
    Generator,
    Guard,
    Lanes,
    Limits,
    Move,
    Steps,
    Track,
    UnderTraffic,
)
from reference.search.generators.logdirs import (
    DEFAULT_LOG_DIRS_CHANCE,
    FAIL_LOG_DIR,
    MOVE_REPLICA_DIR,
    draw_log_dirs,
)
from reference.search.generators.network import CUT, HEAL, ISOLATE, PARTITION, PAUSE, RESUME
from reference.search.generators.processes import (
    KILL,
    LOSE_UNFLUSHED,
    RESTART,
    STOP,
    UNREGISTER,
)
from reference.search.generators.records import ACKS, CONSUME, PRODUCE
from reference.search.generators.timing import (
    BANDWIDTH,
    FETCH_MAX_BYTES,
    FETCH_WAIT_MAX_MS,
    LATENCY,
    MARGIN_MS,
    REQUEST_TIMEOUT_MS,
    SLEEP,
    SLEEPS,
    SNAPSHOT,
)
from reference.search.generators.topics import ADD_PARTITIONS, CREATE_TOPIC, DELETE_TOPIC
from reference.search.generators.upgrade import (
    DEFAULT_UPGRADE_CHANCE,
    UPGRADE,
    default_births,
    draw_birth,
    upgrade_tail,
)

__all__ = ["ACKS", "ADD_PARTITIONS", "ALL", "ALTER_CONFIG", "BANDWIDTH", "CONSUME",
           "CREATE_TOPIC", "CUT",
           "DEFAULT_LOG_DIRS_CHANCE", "DEFAULT_UPGRADE_CHANCE", "DELETE_TOPIC", "ELECT",
           "ELECTIONS", "FAIL_LOG_DIR", "FEATURE",
           "FETCH_MAX_BYTES", "FETCH_WAIT_MAX_MS", "HEAL", "ISOLATE", "KILL", "LATENCY",
           "LOSE_UNFLUSHED", "MARGIN_MS", "MIN_ISR", "MOVE_REPLICA_DIR", "PARTITION", "PAUSE",
           "PRODUCE",
           "REASSIGN", "REQUEST_TIMEOUT_MS", "RESTART", "RESUME", "SLEEP", "SLEEPS", "SNAPSHOT",
           "STOP",
           "UNCLEAN", "UNREGISTER", "UPGRADE", "After", "Builds", "Config", "Exploration",
           "Gen", "Generator",
           "Guard", "Lanes", "Limits", "Move", "Steps", "Track", "UnderTraffic",
           "default_births", "draw_birth", "draw_log_dirs", "upgrade_tail"]

#: Every generator of this package, by kind: what harness/scenario/steps/ names (a test
#: checks that the registry names exactly these) and the pure default for this package.
#: Its order is the iteration order of the default weights and of the explorer's moves
#: (a fixed seed's schedules depend on it): keep it as it is.
ALL: Mapping[str, Generator] = {g.kind: g for g in (
    PRODUCE, CONSUME, ISOLATE, CUT, PARTITION, HEAL, PAUSE, RESUME, KILL, STOP, RESTART,
    LOSE_UNFLUSHED, UNREGISTER, ALTER_CONFIG, ELECT, REASSIGN, LATENCY, BANDWIDTH, SLEEP,
    SNAPSHOT, DELETE_TOPIC, CREATE_TOPIC, UPGRADE, FEATURE, ADD_PARTITIONS, MOVE_REPLICA_DIR,
    FAIL_LOG_DIR)}

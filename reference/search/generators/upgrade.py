"""The generator of ``upgrade`` steps (reference/model/upgrade.py): one node at a time,
controllers and brokers, restarted on another build of the run's catalog (``Builds``, the
data the harness passes in), and of a generated cluster's birth on an older build
(``draw_birth``), whose nodes the schedule brings to the run's build (``upgrade_tail``: the
recovery tail's last steps).

What Kafka supports, as the model and the harness say it:

- a node may run any build of the catalog up to the run's own (the run tests that build:
  nothing newer is started) whose release line knows the cluster's metadata.version: the
  birth build finalized its newest production level at format time, a ``feature`` step may
  raise it (``Track.mv``), and a build older than that level refuses to start ("No
  MetadataVersion with feature level N", harness/run/runner/requirements.py
  ``downgrade_gap``; Kafka's docs/upgrade.html "Downgrading": a software downgrade only
  while the metadata.version is one the older build knows). So an upgrade goes up freely
  and a downgrade only as far as the metadata.version allows;
- the node is stopped cleanly (as ``stop``) and started again (as ``restart``, waited for:
  it must register), so it needs what those need: a running broker that is not paused,
  reaches the controller and is not the last one the observer can ask; a broker that is
  down reaches the controller; a running controller's quorum keeps a majority (KIP-595);
- a cluster born on an older build has three controllers (``birth_cluster``): with one,
  the controller's restart is the model's known gap (it is taken for an outage that fences
  every broker; bench/RESULTS-lifecycle.md "ELR turned on after the upgrade from 3.9").

``MV_LEVELS``: the metadata.version feature level each release line formats a new cluster
at (``MetadataVersion.LATEST_PRODUCTION``; 3.6 its ``latest()``), measured from the
catalog's jars (3.7.2 19, 3.8.1 20, 3.9.2 21, 4.0.2 25 = 4.0-IV3, 4.1.2 27, 4.2.2 29,
4.3.1 30, 4.4.0 33) and, for 3.6, read in apache/kafka 3.6.2 server-common
MetadataVersion.java (IBP_3_6_IV2 = 14). A build supports the levels up to its own (the
non-production ones need its unstable-versions switch, which generated runs do not set).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from reference.model import steps as S
from reference.model.metadata_version import NEWEST_PRODUCTION
from reference.model.upgrade import UpgradeBroker, UpgradeController
from reference.search.generators.generator import Builds, Gen, Generator, Track
from reference.search.generators.processes import RESTART, STOP

#: Each release line's newest production metadata.version level (one table, the model's).
MV_LEVELS = NEWEST_PRODUCTION
#: The oldest release line a generated cluster is born on by default: 3.9, the bridge
#: release from which 4.x upgrades (Kafka 4.0 docs/upgrade.html: a KRaft cluster upgrades
#: to 4.0 from 3.3.x-3.9.x; the lifecycle scenarios measured 3.9 -> 4.x).
OLDEST_BIRTH = (3, 9)
#: The chance that a schedule's cluster is born on an older build (``--upgrades``):
#: modest, so a campaign keeps its mix of faults.
DEFAULT_UPGRADE_CHANCE = 0.1

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def line_of(version: str) -> tuple[int, int] | None:
    """(major, minor) of "X.Y.Z", None for anything else."""
    m = _VERSION.match(version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def mv_level(version: str) -> int | None:
    """The newest production metadata.version level of ``version``'s release line (None:
    a line the table does not know)."""
    line = line_of(version)
    return MV_LEVELS.get(line) if line is not None else None


def default_births(target: str, catalog: Sequence[str]) -> tuple[str, ...]:
    """The builds a cluster of a run on ``target`` may be born on by default: the newest
    patch of each release line of ``catalog`` older than the target's, from 3.9 on."""
    tl = line_of(target)
    newest: dict[tuple[int, int], str] = {}
    for v in catalog:
        line = line_of(v)
        if line is None or tl is None or not OLDEST_BIRTH <= line < tl or line not in MV_LEVELS:
            continue
        if line not in newest or _tuple(v) > _tuple(newest[line]):
            newest[line] = v
    return tuple(newest[k] for k in sorted(newest))


def draw_birth(seed: int | str, births: Sequence[str], chance: float) -> str | None:
    """The build the schedule with this (scenario) seed is born on: one of ``births``
    with ``chance``, else None (the run's own build). A random stream of its own, so the
    schedules born on the run's build are the ones drawn without upgrades."""
    if not births or chance <= 0:
        return None
    rng = random.Random(f"kafka-chaos-birth:{seed}")
    if rng.random() >= chance:
        return None
    return rng.choice(sorted(births, key=_tuple))


def _mv_now(g: Gen, b: Builds) -> int:
    born = mv_level(b.birth)
    return g.track.mv if g.track.mv is not None else (born if born is not None else 0)


def _node_of(step: S.Step) -> tuple[str, int] | None:
    if isinstance(step, UpgradeBroker):
        return "broker", step.broker
    if isinstance(step, UpgradeController) and isinstance(step.controller, int):
        return "controller", step.controller
    return None


def _steps(g: Gen, rng: random.Random) -> list[S.Step]:
    b = g.limits.builds
    if b is None:
        return []
    versions = sorted(set(b.catalog) | {b.target, b.birth}, key=_tuple)
    out: list[S.Step] = [UpgradeController(c, v) for c in g.controllers for v in versions]
    return out + [UpgradeBroker(n, v) for n in g.brokers for v in versions]


def _guard(step: S.Step, g: Gen) -> str | None:
    b = g.limits.builds
    if b is None:
        return "the run's builds are not known (no upgrade is generated)"
    node = _node_of(step)
    if node is None:
        return "a generated upgrade names a broker or a controller by id"
    role, n = node
    version = str(getattr(step, "version", ""))
    if version not in (*b.catalog, b.target, b.birth):
        return f"{version!r} is not a build of the run's catalog"
    if _tuple(version) > _tuple(b.target):
        return f"{version} is newer than the run's build {b.target} (the run tests that one)"
    if g.build_of(n) == version:
        return f"{role} {n} runs {version} already"
    level, birth_line, line = mv_level(version), line_of(b.birth), line_of(version)
    if level is None or line is None or birth_line is None or line < birth_line:
        return (f"{version} is older than the cluster's birth build {b.birth}'s release line "
                "(Kafka does not downgrade below the metadata.version)")
    if level < _mv_now(g, b):
        return (f"{version} knows metadata.version levels up to {level}, the cluster's is "
                f"{_mv_now(g, b)} (raised by a feature step): no downgrade below it")
    if role == "controller":
        if len(g.controllers) < 2:
            return ("one controller: its restart is the model's known gap (taken for an "
                    "outage); clusters born on an older build have three")
        down = n in g.track.controllers_down
        return RESTART.why_invalid(S.RestartController(n), g) if down else \
            STOP.why_invalid(S.StopController(n), g)
    if n not in g.brokers:
        return f"{n} is not a broker"
    if g.down(n):
        return RESTART.why_invalid(S.Restart(n), g)
    return STOP.why_invalid(S.Stop(n), g)


def _after(step: S.Step, track: Track) -> None:
    node = _node_of(step)
    if node is None:
        return
    role, n = node
    if role == "controller":
        track.controllers_down.discard(n)
        return
    track.killed.discard(n)
    track.lost_since_kill.discard(n)
    track.unregistered.discard(n)


def upgrade_tail(g: Gen) -> list[S.Step]:
    """The recovery tail's last steps: every node not on the run's build upgraded to it,
    controllers first, then brokers, one at a time (the run is a test of that build)."""
    b = g.limits.builds
    if b is None:
        return []
    out: list[S.Step] = [UpgradeController(c, b.target) for c in g.controllers
                         if g.build_of(c) != b.target]
    return out + [UpgradeBroker(n, b.target) for n in g.brokers if g.build_of(n) != b.target]


UPGRADE = Generator("upgrade", (UpgradeBroker, UpgradeController), 2, _steps, _guard, _after)

"""The upgrade step (fixtures/scenarios/FORMAT.md): one node restarted on another build of
Kafka, keeping its data: a software upgrade, or a downgrade where Kafka allows it (a build
reads the cluster's metadata.version only up to its own newest one).

To the replication model it is a clean shutdown then a start, as ``stop`` then
``restart`` of the node: a broker's controlled shutdown moves its leaderships and takes it
out of the ISR (KIP-966, seed 003, "ELR update": it may enter the ELR), then it registers
again and catches up; a controller is silenced (an active one resigns) and given back as
a follower. What changes is the build the node runs (World.builds): the active
controller's build decides which release's rules the controller's decisions follow
(reference.model.predict.Model, ``follow_builds``), as each build ships its own
QuorumController and ReplicationControlManager (apache/kafka metadata/src/main/java/org/
apache/kafka/controller/). A build's version is a string "X.Y.Z" ("3.9.2", "4.3.1")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from reference.model.controller import Ctx
from reference.model.protocol import Outcome, settle
from reference.model.state import World, evolve
from reference.model.steps import (
    NodeRef,
    OnBroker,
    Restart,
    Stop,
    down_or_up,
    resolve_ref,
)

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-[A-Za-z0-9.]+)?$")


def version_tuple(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of "X.Y.Z" (a suffix such as -SNAPSHOT ignored)."""
    m = _VERSION.match(version)
    if m is None:
        raise ValueError(f"{version!r} is not a Kafka version like 4.3.1")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def build_of(w: World, node: int) -> str | None:
    """The version node runs in ``w``; None: the build the cluster was born on."""
    for n, v in w.builds:
        if n == node:
            return v
    return None


def with_build(w: World, node: int, version: str) -> World:
    """``w`` with node running ``version``."""
    rest = tuple(x for x in w.builds if x[0] != node)
    return evolve(w, builds=tuple(sorted(rest + ((node, version),))))


def _settled(changed: World | list[Outcome], ctx: Ctx) -> list[World]:
    if isinstance(changed, list):
        return [o.world for o in changed]
    return settle(changed, ctx)


@dataclass(frozen=True, slots=True)
class UpgradeBroker(OnBroker):
    """Broker ``broker`` stopped cleanly and started on build ``version``."""

    kind: ClassVar[str] = "upgrade"
    version: str = ""

    def params(self) -> dict[str, Any]:
        return {"broker": self.broker, "version": self.version}

    def transition(self, w: World, ctx: Ctx) -> list[Outcome]:
        out: list[Outcome] = []
        for down in _settled(Stop(self.broker).transition(w, ctx), ctx):
            up = Restart(self.broker).transition(with_build(down, self.broker, self.version),
                                                 ctx)
            out.extend(Outcome(x) for x in settle(up, ctx))
        return out


@dataclass(frozen=True, slots=True)
class UpgradeController:
    """Controller ``controller`` (an id or a role: the runner resolves it, as a restart's)
    stopped and started on ``version``. To the model a controller that is down is one
    nobody reaches (steps.OnController): an active one resigns and the others elect one.
    The settling after its start runs under the rules the step began with (``ctx``): the
    Model chooses the next step's rules from the active controller then."""

    kind: ClassVar[str] = "upgrade"
    controller: NodeRef
    version: str = ""

    def params(self) -> dict[str, Any]:
        return {"controller": self.controller, "version": self.version}

    def transition(self, w: World, ctx: Ctx) -> list[Outcome]:
        w, n = resolve_ref(w, self.controller)
        if n is None:
            return [Outcome(w)]
        out: list[Outcome] = []
        for down in settle(down_or_up(w, n, True), ctx):
            up = down_or_up(with_build(down, n, self.version), n, False)
            out.extend(Outcome(x) for x in settle(up, ctx))
        return out

"""What one scenario step kind is, end to end: its parser (with the loader's file:line
errors and bounds), its model step class (a reference step, or one of its own that
composes pure reference primitives), its execution on a cluster and its documentation
line. Serialisation is the model step's own (``reference.model.steps.step_to_dict``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from yaml.nodes import Node

from harness.client.session import Session
from harness.cluster.topology import ClusterShape
from harness.scenario.nodes import Items, Reader
from reference.model.steps import Step
from reference.search.generators import Generator


@dataclass
class StepOutcome:
    """What executing a step on the cluster produced, besides cluster state."""

    acks: dict[str, int | None] = field(default_factory=dict)  # record id -> offset / None
    errors: dict[str, str] = field(default_factory=dict)  # record id -> error name
    consumed: list[tuple[int, str]] | None = None
    note: str | None = None
    unsupported: str | None = None
    #: A step the build may refuse (``feature``): its answer when it refused (None: it
    #: accepted, or the step is not one), and the refusal the step itself declares.
    refused: str | None = None
    declared_refused: bool | None = None


@dataclass(frozen=True)
class Target:
    """Where a step acts: the scenario's topic, and for a step on partitions the one
    partition this execution is for (the runner runs such a step once per partition it
    names)."""

    topic: str
    partition: int = 0


#: (reader, the step's mapping, the step's node, where, cluster) -> the model step.
Parser = Callable[[Reader, Items, Node, str, ClusterShape], Step]
#: (session, where, the model step, what it produced so far) -> None.
Executor = Callable[[Session, Target, Any, StepOutcome], None]


def _no_records(step: Step) -> int:
    return 0


def _same_step(step: Step, ids: tuple[str, ...]) -> Step:
    return step


def _no_expectation(params: Mapping[str, Any]) -> Mapping[str, Any]:
    return {}


def _any_order(down: set[int], step: Step) -> str | None:
    return None


def _always(step: Step) -> bool:
    return True


@dataclass(frozen=True)
class StepKind:
    """One step kind of the scenario format (the key of a step mapping)."""

    name: str
    #: One line for FORMAT.md and the help: the step's parameters and what it does.
    doc: str
    parse: Parser
    execute: Executor
    #: How many records the step writes (the runner names them, the loader bounds them).
    records: Callable[[Step], int] = _no_records
    #: The step with the runner's names for its records.
    with_records: Callable[[Step, tuple[str, ...]], Step] = _same_step
    #: The observed fields the step itself expects (an await's), from its mapping.
    expects: Callable[[Mapping[str, Any]], Mapping[str, Any]] = _no_expectation
    #: Whether the step reads the visible records (its outcome is the records consumed).
    reads: bool = False
    #: Whether the step acts on partitions (takes ``partition: P``; without it, every
    #: partition): the runner executes it once per partition it names, and the other
    #: partitions' models see it as an empty await (their state must hold).
    on_partitions: bool = False
    #: Whether the step may act on one topic as a whole (takes ``topic: NAME``, not a
    #: partition): it runs once, and the lanes of the other topics see an empty await.
    on_topic: bool = False
    #: Whether its executions on several partitions may run at once (each on its own
    #: thread; they share only thread-safe clients): the step then takes as long as its
    #: slowest partition, not the sum (a refused acks=all write waits out the delivery
    #: timeout on every partition).
    concurrent: bool = False
    #: The loader's rule on the steps before it: brokers down so far (the rule keeps the
    #: set up to date) -> what is wrong, or None.
    follows: Callable[[set[int], Step], str | None] = _any_order
    #: Whether the runner waits for the step's settled prediction (a restart with
    #: ``wait: false`` does not: the model's prediction is checked by the steps after it).
    settles: Callable[[Step], bool] = _always
    #: Properties the cluster runs with when a scenario has a step of this kind, as if
    #: written in its ``cluster.broker_config`` (the scenario's own value of a key wins):
    #: e.g. a short snapshot interval for ``snapshot``. The loader applies them.
    cluster_config: Mapping[str, str] = field(default_factory=dict)
    #: How ``kafka-chaos fuzz`` makes this kind (its candidates, the guard that keeps a
    #: schedule meaningful, its default weight): reference.search.generators; None: never
    #: generated.
    generator: Generator | None = None

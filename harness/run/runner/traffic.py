"""The scenario's traffic clients across the run: started before the first step, started
and stopped between steps by their windows, stopped after the last (FORMAT.md "Traffic")."""

from __future__ import annotations

from typing import Any

from harness.client.session import Session
from harness.infra import progress
from harness.infra.history import History
from harness.run.runner.state import RunnerState


class TrafficMixin(RunnerState):
    """The traffic clients' start, windows and stop across the run."""

    def _start_traffic(self, session: Session, history: History) -> None:
        """The scenario's producers and consumers, recording into the run's traffic.jsonl
        (harness/client/traffic.py): those without ``from`` start now, the others after
        their step (``_traffic_between``)."""
        spec = self.scenario.traffic
        if spec is None:
            return
        from harness.client.traffic import Traffic
        from harness.traffic.history import TrafficWriter
        sizes = {t.name: t.partitions for t in self.scenario.every_topic()}
        self._traffic_writer = TrafficWriter(history.run_dir, history.run_id)
        self._traffic = Traffic(spec, session.cluster, self._traffic_writer, sizes.__getitem__)
        history.record("traffic", phase="start", spec=spec.to_json())
        self._traffic.start(None)

    def _traffic_between(self, index: int, history: History) -> None:
        """After step ``index``: the traffic clients whose window ends with it stop, those
        whose window starts after it start (FORMAT.md "Traffic")."""
        if self._traffic is None:
            return
        stopped, started = self._traffic.between(index)
        if stopped or started:
            history.record("traffic", phase="clients", after_step=index, stopped=stopped,
                           started=started)
            progress.say(f"traffic after step {index + 1}: "
                         + "; ".join(f"{what} {', '.join(names)}" for what, names in
                                     (("stopped", stopped), ("started", started)) if names))

    def _stop_traffic(self, history: History) -> None:
        """Stop the producers and consumers (bounded); the writer stays open for the final
        read, and is closed by it (or here, if the run ends before it)."""
        if self._traffic is None:
            return
        try:
            problems = self._traffic.stop()
            summary = self._traffic.summary()
            history.record("traffic", phase="stop", problems=problems, **summary)
            history.update(traffic={"summary": summary, "problems": problems})
            progress.say(f"traffic: {summary['sent']} sent, {summary['acked']} acked "
                         f"({summary['acked_all_per_s']}/s acks=all), {summary['failed']} "
                         f"failed, {summary['polled']} polled in {summary['seconds']} s")
        finally:
            self._traffic = None


#: The steps whose topic's life the traffic follows, and the kind of line each writes.
TOPIC_LIFE = {"delete_topic": "topic_deleted", "create_topic": "topic_created"}


def topic_life(traffic: Any, history: History, kind: str, topic: str, phase: str) -> None:
    """Under traffic, a delete_topic / create_topic step's ``phase`` (requested before its
    request, refused, settled after its observation settled) told to the traffic
    (``Traffic.topic_life``: its line in traffic.jsonl, the topic's consumers stopped or
    moved to the new incarnation); consumers that did not act in time are said and
    recorded (a ``traffic`` event, phase ``topic``)."""
    line = TOPIC_LIFE.get(kind)
    if traffic is None or line is None:
        return
    late = traffic.topic_life(line, topic, phase)
    history.record("traffic", phase="topic", topic=topic, life=line, step_phase=phase,
                   late=late)
    if late:
        progress.say(f"traffic: consumer(s) {', '.join(late)} did not act on {line} "
                     f"{phase} of {topic} in time")

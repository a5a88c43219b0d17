"""Each replica's log directory and the offline directories at a step's end
(DescribeLogDirs: harness.client.observe.logdirs), for a cluster of several log
directories per broker: on the step's end event (``log_dirs``) and in run.json
(``log_dirs``: one entry per step, ``{"step": i, "brokers": {...}}``)."""

from __future__ import annotations

from typing import Any

from harness.client.session import Session
from harness.infra.history import History


def log_dirs_at(session: Session, history: History, index: int) -> dict[str, Any]:
    """``{"log_dirs": ...}`` for the step's end event, recorded in run.json too; ``{}``
    when the cluster has one directory per broker."""
    if getattr(session.cluster.shape, "log_dirs", 1) <= 1:
        return {}
    try:
        state = session.observer.log_dirs_state()
    except Exception as exc:  # noqa: BLE001 - what the brokers said is evidence, not a verdict
        state = {"error": f"{type(exc).__name__}: {exc}"}
    history.meta.setdefault("log_dirs", []).append({"step": index, "brokers": state})
    history.write_meta()
    return {"log_dirs": state}

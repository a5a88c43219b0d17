"""Where each replica lives on its broker, and which directories are offline:
DescribeLogDirs (API key 35) asked of every running broker (KIP-113; a directory Kafka
failed answers KAFKA_STORAGE_ERROR and no replicas, LogManager/ReplicaManager
.describeLogDirs). A cluster of several log directories per broker (``cluster.log_dirs``)
records one ``log_dirs`` event per step (run.json keeps the latest per step)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka.protocol.admin import DescribeLogDirsRequest

from harness.client.observe.connection import Connection

#: Errors.KAFKA_STORAGE_ERROR: the directory is offline.
KAFKA_STORAGE_ERROR = 56


def dir_index(paths: list[Path], log_dir: str) -> int | None:
    """The index of ``log_dir`` (a broker's answer) among the broker's ``paths``."""
    for i, path in enumerate(paths):
        if Path(log_dir).resolve() == path.resolve():
            return i
    return None


def summarize(paths: list[Path], results: list[Any]) -> dict[str, Any]:
    """One broker's DescribeLogDirs results as ``{"online": [i..], "offline": [i..],
    "replicas": {"t-0": i}, "future": {"t-0": i}}`` (directory indexes as ``log.dirs``
    lists them; a directory the harness did not make is named by its path)."""
    online: list[Any] = []
    offline: list[Any] = []
    replicas: dict[str, Any] = {}
    future: dict[str, Any] = {}
    for res in results:
        d = res if isinstance(res, dict) else res.to_dict()
        index = dir_index(paths, str(d["log_dir"]))
        key: Any = index if index is not None else str(d["log_dir"])
        (offline if d.get("error_code") == KAFKA_STORAGE_ERROR else online).append(key)
        for topic in d.get("topics") or ():
            for p in topic.get("partitions") or ():
                name = f"{topic['name']}-{p['partition_index']}"
                (future if p.get("is_future_key") else replicas)[name] = key
    return {"online": sorted(online, key=str), "offline": sorted(offline, key=str),
            "replicas": dict(sorted(replicas.items())), "future": dict(sorted(future.items()))}


class LogDirs(Connection):
    def log_dirs_state(self, brokers: list[int] | None = None) -> dict[str, Any]:
        """Broker id (as a string, JSON's keys) -> ``summarize`` of its answer, or
        ``{"error": ...}`` when it did not answer, for every running broker (``brokers``)."""
        targets = self._current() if brokers is None else brokers
        answers = self._send_each({b: DescribeLogDirsRequest(topics=None) for b in targets})
        out: dict[str, Any] = {}
        for b, answer in sorted(answers.items()):
            if isinstance(answer, Exception):
                out[str(b)] = {"error": f"{type(answer).__name__}: {answer}"}
                continue
            if getattr(answer, "error_code", 0):
                out[str(b)] = {"error": f"error code {answer.error_code}"}
                continue
            out[str(b)] = summarize(self.cluster.log_dirs(b), list(answer.results))
        return out

"""What this machine offers runs side by side (cores, available memory), and what it is: run
times mean little without the CPU they were taken on (hosts of one kind differ 1.3-1.6x)."""

from __future__ import annotations

import os
import platform
from typing import Any


def cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo in bytes (None where there is none)."""
    return _meminfo("MemAvailable:")


def describe() -> dict[str, Any]:
    """The machine a run's timings were taken on, for run.json and benchmark headers."""
    total = _meminfo("MemTotal:")
    return {"cpu": cpu_model(), "cores": cores(),
            "memory_gib": round(total / 2**30, 1) if total else None}


def cpu_model() -> str:
    """The processor's name (/proc/cpuinfo's `model name`), else what the platform says."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _meminfo(key: str) -> int | None:
    """A /proc/meminfo entry in bytes (None where there is none)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None

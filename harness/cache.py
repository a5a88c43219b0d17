"""Where installed components (Kafka jars, Toxiproxy binary, images) are cached."""

import os
from pathlib import Path


def cache_root() -> Path:
    """`$KAFKA_CHAOS_CACHE`, else `$XDG_CACHE_HOME/kafka-chaos`, else `~/.cache/kafka-chaos`."""
    explicit = os.environ.get("KAFKA_CHAOS_CACHE")
    if explicit:
        root = Path(explicit)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(base) / "kafka-chaos"
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_dir(*parts: str) -> Path:
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path

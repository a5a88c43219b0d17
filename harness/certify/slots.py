"""The slots a Spark worker offers a certify campaign: ``python -m harness.certify.slots`` on
the worker's machine prints the number to give its Worker as ``--cores`` (docs/CERTIFY.md "On
a Spark cluster"). The rule is `--jobs`'s (harness.run.parallel.default_jobs): two clusters
per core, no more than the machine's available memory holds at 2.5 GiB a cluster, one on a
one-core machine; a diff task (one driver JVM) takes a slot as a cluster does."""

from __future__ import annotations

from harness.run.parallel import default_jobs


def worker_slots() -> int:
    return default_jobs()


if __name__ == "__main__":
    print(worker_slots())

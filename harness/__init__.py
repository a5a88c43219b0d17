"""kafka-chaos harness: everything that touches processes, sockets and files.

Packages, lowest first (each may import only those above it, and ``reference``):
``infra`` (processes, Toxiproxy, Docker engine, cache, waits, errors, history),
``cluster`` (builds, shape, config, storage, backends), ``nemesis`` (faults),
``client`` (workload, admin, observer, metadata log), ``run`` (scenario, runner, judges,
audit), then ``report`` and ``cli``. ``pytest_plugin`` is the pytest entry point.
"""

__version__ = "0.1.0"

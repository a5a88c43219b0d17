"""Faults injected into a running cluster: per-link network cuts through Toxiproxy
(network), the fault vocabulary recorded in the history (faults) and Kafka log segments cut
back to an offset for "lose unflushed data" (logfiles).

May import: harness.infra and harness.cluster.
"""

"""A KRaft cluster under test: builds (resolved and probed), the cluster shape and node
names (topology), each node's server.properties (config), formatting storage (storage),
local Docker images (images) and the backends that start, stop and wire nodes (backends).

May import: harness.infra and reference (the pure model's types); never nemesis, client,
run, cli or report.
"""

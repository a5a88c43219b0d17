"""Client traffic of a run (issue 34): what producers sent and had acknowledged, what
consumers polled and committed, and the full re-read at the end, recorded in a run's
`traffic.jsonl` (history.py, docs/TRAFFIC.md) and checked in the style of Jepsen's Kafka
queue workload (checks.py in process, spark.py on Spark for large histories)."""

"""Talking to a running cluster as a client: producers and consumers (workload), admin
calls (admin), the observer reading partition state over the wire (observe), the
controllers' metadata log and its record decoder (metadata_log, metadata_records) and the
helpers chaos tests use (testing).

May import: harness.infra and harness.cluster.
"""

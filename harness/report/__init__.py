"""Conformance report: many run histories -> index.html, junit.xml, summary.json (PySpark),
and the scenario x build table of the three axes (matrix).

May import: harness.infra and harness.run (the judges, data checks and audit it reuses, so
the report and the runner judge alike); never harness.cli.
"""

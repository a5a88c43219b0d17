"""Conformance report: many run histories -> index.html, junit.xml, summary.json (PySpark)."""

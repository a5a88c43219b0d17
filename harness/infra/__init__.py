"""Plumbing every other package stands on: child processes (procs), the Toxiproxy server
and its API (toxiproxy), a Docker engine (dockerengine), the install cache and its locks
(cache), external tools (tools), progress lines (progress), bounded waits (wait), the
harness's errors (errors) and the append-only run history (history).

May import: the standard library and third-party packages only; nothing else of harness.
"""

"""The opt-in per-node JVM flags (harness/cluster/backends/base.py, debug_jvm_opts): nothing
unless the node's variable is set, so normal runs are unchanged."""

from __future__ import annotations

import pytest

from harness.cluster.backends.base import DEBUG_JVM_OPTS_ENV, debug_jvm_opts


def test_unset_adds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEBUG_JVM_OPTS_ENV.format(node=2), raising=False)
    assert debug_jvm_opts(2) == []


def test_set_for_one_node_only(monkeypatch: pytest.MonkeyPatch) -> None:
    flag = "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:5005"
    monkeypatch.setenv(DEBUG_JVM_OPTS_ENV.format(node=2), f"{flag} -Dx='a b'")
    assert debug_jvm_opts(2) == [flag, "-Dx=a b"]
    assert debug_jvm_opts(1) == []

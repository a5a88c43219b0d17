"""The suites' helpers now live in the installed package (harness.client.testing), so tests
outside this repository can use them too; this module keeps the old import working."""

from harness.client.testing import TOPIC, create_topic, state, wait_state

__all__ = ["TOPIC", "create_topic", "state", "wait_state"]

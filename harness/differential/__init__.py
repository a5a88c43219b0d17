"""Differential testing against the build's own controller code (issue 33).

``driver.ControllerDriver`` runs the Java driver in java/ (main class ControllerDriver), which
drives the build's own KRaft controller managers (ReplicationControlManager and the managers
it works with) by events and answers with the records they wrote and the partition state
after each event. ``protocol`` holds the wire format (settings, events, answers). README.md
documents the protocol, the layer chosen and what each build cannot run.
"""

from harness.differential.driver import ControllerDriver, compile_driver
from harness.differential.protocol import (
    Answer,
    DriverError,
    DriverProtocolError,
    Ready,
    SessionUnsupported,
    Settings,
)

__all__ = ["Answer", "ControllerDriver", "DriverError", "DriverProtocolError", "Ready",
           "SessionUnsupported", "Settings", "compile_driver"]

"""Errors the harness raises. Each names the input or component at fault and the fix."""


class HarnessError(Exception):
    """A harness fault, never blamed on the broker under test."""


class BuildError(HarnessError):
    """The build under test cannot be resolved or is broken."""


class ToolMissing(HarnessError):
    """A required tool (java, mvn, go) is missing from this machine."""


class ClusterError(HarnessError):
    """A cluster could not be started, or a node misbehaved under the harness."""


class NodeNotReady(ClusterError):
    """A node did not become ready in time; the message carries its log tail."""


class PortClash(ClusterError):
    """An address the cluster needs is already taken."""


class NetworkError(HarnessError):
    """Toxiproxy is unreachable or refused a request."""


class UsageError(HarnessError):
    """Bad command-line flags or configuration given by the user."""

"""kafka-chaos harness: everything that touches processes, sockets and files."""

__version__ = "0.1.0"

"""The Toxiproxy server (v2.12.0, built with `go install`) and a bounded API client.

toxiproxy-python keeps the server address as class state and sets no timeouts, so every
call goes through `ToxiproxyApi`, which points the library at this cluster's server
under a lock and bounds each HTTP request.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import requests
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed
from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import NotFound

from harness.infra import procs, progress, tools
from harness.infra.cache import cache_dir, entry_lock
from harness.infra.errors import NetworkError, ToolMissing

TOXIPROXY_VERSION = "v2.12.0"
_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
_HTTP_TIMEOUT_S = 10.0
_api_lock = threading.RLock()


def ensure_server_binary() -> Path:
    """The toxiproxy server binary, built into the cache on first use."""
    explicit = os.environ.get("KAFKA_CHAOS_TOXIPROXY")
    if explicit:
        if not Path(explicit).is_file():
            raise ToolMissing(f"KAFKA_CHAOS_TOXIPROXY={explicit}: no such file")
        return Path(explicit)
    bindir = cache_dir("toxiproxy", TOXIPROXY_VERSION)
    binary = bindir / "server"
    # Always under the lock: `go install` writes the binary in place, so while another
    # process builds it, its mere existence does not make it whole.
    with entry_lock(bindir):
        if not binary.exists():
            _go_install(bindir, binary)
    return binary


def _go_install(bindir: Path, binary: Path) -> None:
    go = tools.require("go")
    progress.say(f"building Toxiproxy {TOXIPROXY_VERSION} with `go install` into {bindir}")
    env = dict(os.environ, GOBIN=str(bindir), GOFLAGS="-mod=mod")
    out = subprocess.run([str(go), "install", f"{_MODULE}@{TOXIPROXY_VERSION}"], env=env,
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0 or not binary.exists():
        raise ToolMissing(f"`go install {_MODULE}@{TOXIPROXY_VERSION}` failed (needs Go >= 1.23 "
                          f"and the Go module proxy):\n{out.stderr.strip()[-2000:]}")


class ToxiproxyServer:
    """One Toxiproxy server process, API on a loopback address."""

    def __init__(self, host: str, port: int, log: Path) -> None:
        self.host, self.port, self.log = host, port, log
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = ensure_server_binary()
        self._proc = procs.spawn([str(binary), "-host", self.host, "-port", str(self.port)],
                                 self.log)
        api = ToxiproxyApi(self.host, self.port)
        try:
            api.wait_until_up(self._proc)
        except NetworkError:
            self.stop()
            raise

    def stop(self) -> None:
        if self._proc is not None:
            procs.kill(self._proc)
            self._proc = None


class ToxiproxyApi:
    """Bounded calls into one server through toxiproxy-python."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    @contextmanager
    def _client(self) -> Iterator[Toxiproxy]:
        with _api_lock:
            APIConsumer.host, APIConsumer.port = self.host, self.port
            try:
                yield Toxiproxy()
            except requests.RequestException as exc:
                raise NetworkError(
                    f"Toxiproxy at {self.host}:{self.port} unreachable: {exc}") from exc

    def wait_until_up(self, proc: subprocess.Popen[bytes] | None = None) -> None:
        @retry(stop=stop_after_delay(15), wait=wait_fixed(0.1), reraise=True,
               retry=retry_if_exception_type(NetworkError))
        def probe() -> None:
            if proc is not None and proc.poll() is not None:
                raise ToolMissing(f"Toxiproxy server exited with {proc.returncode} at start "
                                  f"(address {self.host}:{self.port} taken?)")
            with self._client() as client:
                if not client.running():
                    raise NetworkError(f"Toxiproxy at {self.host}:{self.port} not answering")
        probe()

    def create_proxies(self, proxies: dict[str, tuple[str, str]]) -> None:
        """name -> (listen, upstream); created in one call."""
        with self._client() as client:
            for name, (listen, upstream) in proxies.items():
                client.create(upstream=upstream, name=name, listen=listen, enabled=True)

    def add_toxic(self, proxy: str, name: str, type_: str, stream: str,
                  attributes: dict[str, float]) -> None:
        with self._client() as client:
            client.get_proxy(proxy).add_toxic(name=name, type=type_, stream=stream,
                                              toxicity=1.0, attributes=attributes)

    def remove_toxic(self, proxy: str, name: str) -> None:
        with self._client() as client, suppress(NotFound):
            client.get_proxy(proxy).destroy_toxic(name)

    def reset(self) -> None:
        """Remove every toxic and re-enable every proxy."""
        with self._client() as client:
            client.reset()


# toxiproxy-python issues requests without a timeout; give every call one.
def _bounded(call: Any) -> Any:
    def with_timeout(cls: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", _HTTP_TIMEOUT_S)
        return call(*args, **kwargs)
    return classmethod(with_timeout)


if not getattr(APIConsumer, "_kafka_chaos_bounded", False):
    for _verb in ("get", "post", "delete"):
        setattr(APIConsumer, _verb, _bounded(getattr(APIConsumer, _verb)))
    APIConsumer._kafka_chaos_bounded = True

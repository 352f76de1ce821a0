"""A counting HTTP proxy between a judge client and the model server.

Both systems talk to the server through it, so their model calls and tokens are
counted the same way: per request, the path, the wall time, the HTTP status and
the ``usage`` (prompt_tokens, completion_tokens) of the server's reply. Each
request is filed under the label set last — by :meth:`CountingProxy.mark` in
this process, or by ``POST /_bench/mark {"label": ...}`` from another one (the
deepeval runner). The upstream can change while the proxy runs (a restarted
server); a request the upstream drops gets HTTP 502 and is recorded as such.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from server import free_port

#: Paths that make the model read or write tokens.
GENERATION_PATHS = ("/v1/chat/completions", "/v1/completions")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}


@dataclass
class Record:
    """One proxied request."""

    label: str
    method: str
    path: str
    status: int
    started: float  #: time.time() when it arrived
    seconds: float
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    error: str | None = None

    @property
    def generation(self) -> bool:
        return self.path in GENERATION_PATHS


class CountingProxy:
    """A ThreadingHTTPServer on 127.0.0.1 in a background thread; ``close()`` stops it."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.label = ""
        self.records: list[Record] = []
        self.in_flight = 0
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=httpx.Timeout(None, connect=5.0))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="proxy", daemon=True)
        self._thread.start()

    def mark(self, label: str) -> None:
        """File the requests that arrive from now on under ``label``."""
        with self._lock:
            self.label = label

    def take(self, label: str) -> list[Record]:
        """The records filed under ``label``."""
        with self._lock:
            return [r for r in self.records if r.label == label]

    def add(self, record: Record) -> None:
        with self._lock:
            self.records.append(record)

    def drain(self, limit: float) -> float:
        """Wait until no request is in flight (at most ``limit`` seconds); the seconds waited.

        A client that gave up on a request (deepeval, when a sibling request failed)
        leaves the server generating: the next measurement would queue behind it.
        """
        start = time.perf_counter()
        while self.in_flight and time.perf_counter() - start < limit:
            time.sleep(0.05)
        return time.perf_counter() - start

    def forward(self, method: str, path: str, headers: dict[str, str],
                body: bytes) -> tuple[int, dict[str, str], bytes]:
        """Send one request upstream and record it; HTTP 502 when the upstream fails."""
        with self._lock:
            label = self.label
        started, clock = time.time(), time.perf_counter()
        sent = {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP | {"accept-encoding"}}
        with self._lock:
            self.in_flight += 1
        try:
            reply = self._client.request(method, self.upstream + path, headers=sent, content=body)
        except httpx.HTTPError as err:
            self.add(Record(label, method, path, 502, started, time.perf_counter() - clock, None, None, None,
                            f"{type(err).__name__}: {err}"))
            return 502, {"content-type": "application/json"}, json.dumps({"error": str(err)}).encode()
        finally:
            with self._lock:
                self.in_flight -= 1
        usage, finish = _usage(reply)
        self.add(Record(label, method, path, reply.status_code, started, time.perf_counter() - clock,
                        usage.get("prompt_tokens"), usage.get("completion_tokens"), finish))
        returned = {k: v for k, v in reply.headers.items() if k.lower() not in _HOP_BY_HOP}
        return reply.status_code, returned, reply.content

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def dump(self) -> list[dict[str, Any]]:
        with self._lock:
            return [asdict(r) for r in self.records]


def _usage(reply: httpx.Response) -> tuple[dict[str, int], str | None]:
    try:
        data = reply.json()
    except ValueError:
        return {}, None
    if not isinstance(data, dict):
        return {}, None
    choices = data.get("choices") or [{}]
    return data.get("usage") or {}, choices[0].get("finish_reason")


def _handler(proxy: CountingProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the clients expect

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            if self.path == "/_bench/mark":
                proxy.mark(str(json.loads(body)["label"]))
                self._reply(204, {}, b"")
                return
            status, headers, content = proxy.forward(self.command, self.path, dict(self.headers.items()), body)
            self._reply(status, headers, content)

        def _reply(self, status: int, headers: dict[str, str], content: bytes) -> None:
            try:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client went away (a killed runner)

        do_GET = do_POST = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 -- the base class's name
            pass

    return Handler

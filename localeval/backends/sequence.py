"""Keeping one score's requests to a server back to back (issue 13).

llama-cpp-python's server and Ollama keep the KV cells of the last prompt they
read and read a new prompt on top of the prefix the two share. A whole-answer
score is a base request and then one continuation request per reply prefix,
sent in preorder (:func:`localeval.distribution.read_whole_answers`): when
nothing else reaches the server in between, each continuation is read as one
token on its parent's cells — what the in-process backend computes, and what
the model computes when it generates. Another request in between (another score
in flight, a JSON call, a target's output) would make the server re-read the
continuation's prompt in one longer batch, whose logits differ (by up to 0.30 in
log-probability, SmolLM2 on CPU: docs/http-backends.md).

So each server (by its origin: scheme, host and port) has an :class:`EndpointOrder`:
a score holds it :meth:`~EndpointOrder.exclusive` across its requests, every
request holds it :meth:`~EndpointOrder.shared` while it is sent (the score's own
pass through). Ordinary requests still run side by side; only a score waits for
those in flight and holds the others off. llama-cpp-python's server answers one
request at a time, so it loses no throughput; a server with parallel slots
serves one score at a time per client process while a score is read. Within one
process only: several processes (Ray workers) sending to one server are not
ordered (docs/http-backends.md).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit


class EndpointOrder:
    """A shared/exclusive lock for one server; the exclusive holder's own requests pass through."""

    def __init__(self) -> None:
        self._state = threading.Condition()
        self._holder: int | None = None  # the thread reading a score
        self._waiting = 0  # scores waiting: new ordinary requests let them go first
        self._in_flight = 0

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold off every other thread's requests to this server until the block ends."""
        me = threading.get_ident()
        with self._state:
            self._waiting += 1
            self._state.wait_for(lambda: self._holder is None and self._in_flight == 0)
            self._waiting -= 1
            self._holder = me
        try:
            yield
        finally:
            with self._state:
                self._holder = None
                self._state.notify_all()

    @contextmanager
    def shared(self) -> Iterator[None]:
        """One request: sent at once unless another thread holds the server for a score."""
        me = threading.get_ident()
        if self._holder == me:
            yield
            return
        with self._state:
            self._state.wait_for(lambda: self._holder is None and self._waiting == 0)
            self._in_flight += 1
        try:
            yield
        finally:
            with self._state:
                self._in_flight -= 1
                self._state.notify_all()


_ORDERS: dict[str, EndpointOrder] = {}
_ORDERS_GUARD = threading.Lock()


def endpoint_order(url: str) -> EndpointOrder:
    """The :class:`EndpointOrder` of the server ``url`` is on (its scheme, host and port)."""
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    origin = f"{parts.scheme}://{parts.hostname}:{port}"
    with _ORDERS_GUARD:
        return _ORDERS.setdefault(origin, EndpointOrder())

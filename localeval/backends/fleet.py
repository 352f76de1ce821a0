"""A fleet of judge servers: one backend over several endpoints that serve the same model.

An HTTP backend given several base URLs (``base_url = ["http://a:8000/v1",
"http://b:8000/v1"]``) opens one backend per endpoint and puts this in front:

- **Identity.** Every endpoint is asked who it is when the fleet opens (the
  backend's own identification: the served model, its file's sha256 or Ollama's
  digest, the runtime, the settings). Endpoints that disagree are a
  :class:`ConfigError` naming both endpoints and both identities, before any
  judge call. An endpoint that is down at the start is left out and verified
  the same way when it comes back; it never answers before that.
- **Routing: load first, then the shared prefix.** Each endpoint remembers the
  prompts of its last :data:`REMEMBERED_PROMPTS` calls (:func:`flatten`: roles and
  contents). A call goes, among the endpoints with a free slot, to the one with the
  fewest calls in flight; among those, to the one whose remembered prompts share
  the longest prefix with the call's (:func:`choose`): a G-Eval's criteria, a RAG
  metric's document, a conversation's transcript, a score read's prompt before its
  reason as a follow-up turn; the remaining ties by rendezvous hashing of the
  first message (:func:`ranking`), so routing is deterministic. Load comes first
  because the fleet sees no server's queue, only its own calls in flight: a serial
  server given a high ``max_concurrency`` would otherwise take every call that
  shares its prefix while another endpoint idles, and an idle endpoint reading a
  prefix once costs less than a queue. Calls one at a time all stay where their
  prefix is; concurrent calls spread, and each endpoint reads a shared prefix once.
- **Concurrency per endpoint.** Each endpoint takes at most its backend's
  ``max_concurrency`` calls at once; the fleet serves their sum.
- **Failures.** A call that fails because of its endpoint (it cannot be
  reached, or answers 5xx/429, or times out, after localeval's retries) goes to
  the endpoint the same rule picks among the others. An endpoint that cannot be
  reached is taken out for ``eject_cooldown`` seconds at once; one whose replies fail, after
  :data:`STRIKES` in a row (a request every server refuses is that request's
  error, as with one server, and empties no fleet). After the cooldown the
  endpoint is opened and verified again before it gets calls. Other errors (a
  reply that breaks its schema) are the call's, not the endpoint's, and are
  raised as they are.

Scores do not depend on the endpoint (same model, same request, greedy
decoding), so the fleet's fingerprint leaves the addresses out where the model
file's sha256 pins the weights: a cache filled by one fleet serves another.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from localeval.backends.base import (
    Backend,
    Capabilities,
    DistributionReply,
    DistributionRequest,
    Fingerprint,
    JsonReply,
    JsonRequest,
    Message,
    TextBackend,
    TextReply,
    TextRequest,
)
from localeval.backends.http import HttpOptions, HttpStatusError, ReplyTimeout, base_urls
from localeval.backends.urls import redacted
from localeval.errors import BackendError, BackendUnavailable, ConfigError

R = TypeVar("R")
#: Prompts an endpoint remembers having been sent (the oldest are forgotten first). A
#: llama-cpp-python server keeps one; llama.cpp's server one per slot; SGLang a tree.
REMEMBERED_PROMPTS = 32
#: Failed replies in a row (5xx, 429, timeouts, each after the retry policy) that take an endpoint out.
STRIKES = 3
#: Seconds a thread waiting for a free slot sleeps at most before it looks for returning endpoints.
POLL = 0.5


def flatten(messages: Sequence[Message]) -> str:
    """A conversation as one text (each message's role, then its content), the same for every
    operation: what two calls share at its start is what a server may read once for both."""
    return "".join(f"[[{message.role}]]\n{message.content}\n" for message in messages)


def shared_prefix(first: str, second: str) -> int:
    """How many characters ``first`` and ``second`` share at their start (a binary search over
    slice comparisons, which run at C speed: prompts are thousands of characters)."""
    low, high = 0, min(len(first), len(second))
    while low < high:
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def ranking(key: str, endpoints: Sequence[str]) -> list[str]:
    """``endpoints`` from the most to the least preferred for ``key`` (rendezvous hashing).

    Each (endpoint, key) pair gets a weight from a hash; the order is by weight.
    Removing an endpoint keeps every other key's order, so only its keys move.
    """
    def weight(endpoint: str) -> bytes:
        return hashlib.sha256(f"{endpoint}\x00{key}".encode()).digest()

    return sorted(endpoints, key=weight, reverse=True)


def is_endpoint_failure(err: BaseException) -> bool:
    """Whether ``err`` (after the request policy's retries) says the endpoint, not the call, is at fault."""
    if isinstance(err, HttpStatusError):
        return err.retryable
    return isinstance(err, (BackendUnavailable, ReplyTimeout))


def identity(fingerprint: Fingerprint, address: str) -> dict[str, Any]:
    """The fingerprint without the endpoint's address (the setting called ``address``)."""
    data = fingerprint.model_dump(mode="json")
    data["settings"] = {k: v for k, v in fingerprint.settings.items() if k != address}
    return data


@dataclass
class Endpoint:
    """One server of the fleet and what the fleet knows about it."""

    url: str
    limit: int
    backend: Backend | None = None
    in_flight: int = 0
    #: When it may be tried again (clock seconds); 0 while it is in.
    out_until: float = 0.0
    reviving: bool = False
    last_error: str = ""
    served: int = 0
    reused: int = 0
    #: Characters of the served calls' prompts, and how many of them a prompt sent before shared.
    prompt_chars: int = 0
    shared_chars: int = 0
    failures: int = 0
    strikes: int = 0
    #: The prompts of its last calls, the most recent first (noted when a call is sent).
    prompts: deque[str] = field(default_factory=lambda: deque(maxlen=REMEMBERED_PROMPTS))

    @property
    def shown(self) -> str:
        return redacted(self.url)

    def usable(self) -> bool:
        return self.backend is not None and self.out_until == 0.0

    def shared_with(self, prompt: str) -> int:
        """The longest prefix ``prompt`` shares with a prompt this endpoint was sent."""
        return max((shared_prefix(prompt, seen) for seen in self.prompts), default=0)

    def count(self, prompt: str, shared: int) -> None:
        """Count a call served whose ``prompt`` shared ``shared`` characters with one sent before:
        it reused a prefix when that is at least half of the prompt."""
        self.served += 1
        self.reused += shared > 0 and 2 * shared >= len(prompt)
        self.prompt_chars += len(prompt)
        self.shared_chars += shared


def choose(prompt: str, key: str, free: Sequence[Endpoint]) -> tuple[Endpoint, int]:
    """Where a call with ``prompt`` goes among ``free`` (endpoints with a free slot), and how many
    characters it shares there: the fewest calls in flight, then the longest shared prefix, then
    the rendezvous ranking for ``key`` (the first message)."""
    order = {url: n for n, url in enumerate(ranking(key, [e.url for e in free]))}
    shared = {e.url: e.shared_with(prompt) for e in free}
    best = min(free, key=lambda e: (e.in_flight, -shared[e.url], order[e.url]))
    return best, shared[best.url]


@dataclass(frozen=True)
class EndpointStats:
    """What one endpoint did: calls answered; how many reused a prefix (shared at least half their
    prompt with one it was sent before); the share of their prompts' characters so shared."""

    url: str
    state: str
    served: int
    reused: int
    prompt_chars: int
    shared_chars: int
    failures: int

    @property
    def shared(self) -> float:
        """The share of the served prompts' characters that a prompt sent before shared (0 with none)."""
        return self.shared_chars / self.prompt_chars if self.prompt_chars else 0.0


class FleetBackend:
    """One judge over several endpoints serving the same model. Safe to share between threads."""

    def __init__(
        self,
        urls: Sequence[str],
        open_endpoint: Callable[[str], Backend],
        *,
        limit: int,
        cooldown: float,
        address: str = "base_url",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Open every endpoint and check they agree; :class:`ConfigError` when two differ,
        :class:`BackendUnavailable` when none can be reached.

        ``open_endpoint(url)`` builds and identifies one endpoint's backend;
        ``address`` is the fingerprint setting holding the endpoint's address.
        """
        if len(set(urls)) != len(urls) or not urls:
            raise ConfigError(f"a fleet needs distinct base URLs, got {[redacted(url) for url in urls]}")
        self._open, self._cooldown, self._address, self._clock = open_endpoint, cooldown, address, clock
        self._endpoints = [Endpoint(url, limit) for url in urls]
        self._cond = threading.Condition()
        self._identity: dict[str, Any] | None = None
        self._reference: Endpoint | None = None
        try:
            for endpoint in self._endpoints:
                self._admit(endpoint, self._start(endpoint))
        except BaseException:
            self.close()
            raise
        if self._reference is None:
            reasons = "; ".join(e.last_error for e in self._endpoints)
            raise BackendUnavailable(f"no endpoint of the fleet can be reached: {reasons}")
        self._fingerprint: Fingerprint = self._fleet_fingerprint(self._any_backend())

    def _start(self, endpoint: Endpoint) -> Backend | None:
        """The endpoint's backend, identified and its capabilities probed (a server probes them on
        first use); None (it is out for a cooldown) when it cannot be reached."""
        backend: Backend | None = None
        try:
            backend = self._open(endpoint.url)
            backend.capabilities  # noqa: B018 -- probed now, while the endpoint is known to answer
            return backend
        except BackendError as err:
            if backend is not None:
                backend.close()
            if not is_endpoint_failure(err):
                raise
            with self._cond:
                endpoint.last_error = str(err)
                endpoint.out_until = self._clock() + self._cooldown
            return None

    def _admit(self, endpoint: Endpoint, backend: Backend | None) -> None:
        """Let ``backend`` answer for ``endpoint`` if it is the fleet's model; ConfigError otherwise.

        An endpoint verified again after a cooldown keeps the backend it had (calls may still be
        in flight on it; its connections reopen by themselves): the new one only proved the identity.
        """
        if backend is None:
            return
        found = identity(backend.fingerprint, self._address)
        if self._identity is None or self._reference is None:
            self._identity, self._reference = found, endpoint
        elif found != self._identity:
            backend.close()
            ours, theirs = _differences(self._identity, found)
            raise ConfigError(
                f"the fleet's endpoints serve different models: {self._reference.shown} reports {ours}, "
                f"{endpoint.shown} reports {theirs}"
            )
        if endpoint.backend is None:
            endpoint.backend = backend
        else:
            backend.close()
        endpoint.out_until, endpoint.last_error = 0.0, ""

    def __repr__(self) -> str:
        return f"FleetBackend({[e.shown for e in self._endpoints]!r})"

    def close(self) -> None:
        """Close every endpoint's backend."""
        for endpoint in self._endpoints:
            if endpoint.backend is not None:
                endpoint.backend.close()

    # -- what the fleet is --------------------------------------------------------------

    @property
    def capabilities(self) -> Capabilities:
        """The endpoints' capabilities (they serve the same model), serving the sum of their limits."""
        own = self._answering_backend().capabilities
        notes = {**own.notes, "fleet": self.summary()}
        total = sum(e.limit for e in self._endpoints)
        return own.model_copy(update={"parallel_requests": total, "notes": notes})

    @property
    def fingerprint(self) -> Fingerprint:
        return self._fingerprint

    def _answering_backend(self) -> Backend:
        """An endpoint's backend that is in (its capabilities were probed when it was admitted)."""
        with self._cond:
            return next((e.backend for e in self._endpoints if e.usable() and e.backend is not None),
                        self._any_backend())

    def _any_backend(self) -> Backend:
        """The first endpoint's backend that was verified (there is one once the fleet is open)."""
        return next(e.backend for e in self._endpoints if e.backend is not None)

    def _fleet_fingerprint(self, reference: Backend) -> Fingerprint:
        """The endpoints' common identity. Their addresses are in it only when no model file hash
        pins the weights: a model name alone does not say that two servers hold the same file."""
        own = reference.fingerprint
        settings = {k: v for k, v in own.settings.items() if k != self._address}
        if own.model_sha256 is None:
            settings["endpoints"] = sorted(e.shown for e in self._endpoints)
        return own.model_copy(update={"settings": settings})

    def stats(self) -> list[EndpointStats]:
        """Each endpoint's counters, in the configured order."""
        with self._cond:
            return [EndpointStats(e.shown, self._state(e), e.served, e.reused, e.prompt_chars, e.shared_chars,
                                  e.failures) for e in self._endpoints]

    def _state(self, endpoint: Endpoint) -> str:
        if endpoint.usable():
            return "in"
        return f"out ({endpoint.last_error})" if endpoint.last_error else "out"

    def summary(self) -> str:
        """Each endpoint's state and counters, in one line."""
        return "; ".join(f"{s.url}: {s.state}, {s.served} served, {s.reused} reused a prefix "
                         f"({100 * s.shared:.0f}% of prompt characters shared)" for s in self.stats())

    # -- the operations --------------------------------------------------------------------

    def generate_json(self, request: JsonRequest) -> JsonReply:
        return self._call(request.messages, lambda backend: backend.generate_json(request))

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        return self._call(request.messages, lambda backend: backend.candidate_distribution(request))

    def generate_text(self, request: TextRequest) -> TextReply:
        def text(backend: Backend) -> TextReply:
            if not isinstance(backend, TextBackend):
                raise BackendError(f"the {backend.fingerprint.kind} backend does not generate free text")
            return backend.generate_text(request)

        return self._call(request.messages, text)

    def _call(self, messages: Sequence[Message], operation: Callable[[Backend], R]) -> R:
        """``operation`` on the endpoint chosen for ``messages``; on an endpoint's failure, on the next.

        When every endpoint it could go to failed, the last failure is raised: the error a
        one-server run would have given.
        """
        prompt, key = flatten(messages), flatten(messages[:1])
        tried: list[str] = []
        failure: BackendError | None = None
        while True:
            try:
                endpoint, backend, shared = self._acquire(prompt, key, tried)
            except BackendUnavailable:
                if failure is not None and tried:
                    raise failure from None
                raise
            try:
                result = operation(backend)
            except BackendError as err:
                if not is_endpoint_failure(err):
                    self._release(endpoint)
                    raise
                self._release(endpoint, failure=err)
                failure = err
                tried.append(endpoint.url)
                continue
            except BaseException:
                self._release(endpoint)
                raise
            self._release(endpoint, served=(prompt, shared))
            return result

    # -- routing ---------------------------------------------------------------------------

    def _acquire(self, prompt: str, key: str, tried: Sequence[str]) -> tuple[Endpoint, Backend, int]:
        """A slot on the endpoint :func:`choose` picks (``tried``: endpoints this call failed on);
        waits while none has a free slot. Also returns the characters shared there."""
        with self._cond:
            while True:
                due = self._due()
                if due is not None:
                    self._cond.release()
                    try:
                        self._revive(due)
                    finally:
                        self._cond.acquire()
                    continue
                usable = [e for e in self._endpoints if e.usable() and e.url not in tried]
                if not usable:
                    raise self._all_out(tried)
                free = [e for e in usable if e.in_flight < e.limit]
                chosen, shared = choose(prompt, key, free) if free else (None, 0)
                if chosen is not None and chosen.backend is not None:  # a usable endpoint has one
                    chosen.in_flight += 1
                    chosen.prompts.appendleft(prompt)
                    return chosen, chosen.backend, shared
                self._cond.wait(POLL)

    def _release(self, endpoint: Endpoint, *, served: tuple[str, int] | None = None,
                 failure: BackendError | None = None) -> None:
        """Free the call's slot; count what it did (``served``: its prompt and the characters it
        shared). A failure the endpoint cannot be reached takes it out at once; failed replies
        (5xx, 429, a timeout) after :data:`STRIKES` in a row, so one request that every server
        refuses does not empty the fleet."""
        with self._cond:
            endpoint.in_flight -= 1
            if served is not None:
                endpoint.count(*served)
                endpoint.strikes = 0
            if failure is not None:
                endpoint.failures += 1
                endpoint.strikes += 1
                if isinstance(failure, BackendUnavailable) or endpoint.strikes >= STRIKES:
                    endpoint.last_error = str(failure)
                    endpoint.out_until = self._clock() + self._cooldown
                    endpoint.strikes = 0
                    endpoint.prompts.clear()  # a restarted server has lost what it had read
            self._cond.notify_all()

    def _due(self) -> Endpoint | None:
        """An endpoint whose cooldown is over and which nobody is reviving yet (claimed for the caller)."""
        now = self._clock()
        for endpoint in self._endpoints:
            if endpoint.out_until and endpoint.out_until <= now and not endpoint.reviving:
                endpoint.reviving = True
                return endpoint
        return None

    def _revive(self, endpoint: Endpoint) -> None:
        """Open ``endpoint`` again and verify its identity: out for another cooldown if it cannot
        be reached, out for good if it now serves another model or cannot be opened at all."""
        fresh: Backend | None = None
        refusal: Exception | None = None
        try:
            fresh = self._start(endpoint)
        except (ConfigError, BackendError) as err:  # e.g. it now serves several models, none by our name
            refusal = err
        finally:
            with self._cond:
                endpoint.reviving = False
                if fresh is not None:
                    try:
                        self._admit(endpoint, fresh)
                    except ConfigError as err:
                        refusal = err
                if refusal is not None:
                    endpoint.last_error, endpoint.out_until = f"refused: {refusal}", float("inf")
                self._cond.notify_all()

    def _all_out(self, tried: Sequence[str]) -> BackendUnavailable:
        states = "; ".join(f"{e.shown}: {self._state(e)}" for e in self._endpoints)
        failed = f" (this call failed on {len(tried)})" if tried else ""
        return BackendUnavailable(f"no endpoint of the fleet can answer{failed}: {states}")


def one_or_fleet(base_url: str | list[str], options: HttpOptions, open_endpoint: Callable[[str], Backend],
                 address: str) -> Backend:
    """The backend of the one server ``base_url`` names, or a fleet of its several.

    ``open_endpoint(url)`` opens one endpoint's backend; ``address`` is the fingerprint
    setting that holds an endpoint's URL.
    """
    urls = base_urls(base_url)
    if len(urls) == 1:
        return open_endpoint(urls[0])
    return FleetBackend(urls, open_endpoint, limit=options.max_concurrency, cooldown=options.eject_cooldown,
                        address=address)


def _differences(ours: dict[str, Any], theirs: dict[str, Any]) -> tuple[str, str]:
    """What two identities say where they differ (model, file hash, runtime, a setting), each side."""
    names = {"model": "model", "model_sha256": "sha256", "runtime": "runtime", "kind": "kind"}
    pairs = [(label, ours[key], theirs[key]) for key, label in names.items() if ours[key] != theirs[key]]
    settings = sorted(set(ours["settings"]) | set(theirs["settings"]))
    pairs += [(f"setting {key}", ours["settings"].get(key), theirs["settings"].get(key))
              for key in settings if ours["settings"].get(key) != theirs["settings"].get(key)]
    return (", ".join(f"{label} {a!r}" for label, a, _ in pairs), ", ".join(f"{label} {b!r}" for label, _, b in pairs))

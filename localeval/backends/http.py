"""The HTTP layer every server backend shares: timeouts, retries, bounded concurrency, clear errors.

One synchronous code path on :class:`httpx.Client`: the runner's threads share
one backend, and a semaphore bounds how many requests reach the server at once
(a local server usually works on one or a few requests at a time; more only
queue there, where a client timeout cannot see them).

Retried, with exponential backoff and within both ``max_attempts`` and
``retry_deadline``: HTTP 429 and 5xx (honouring ``Retry-After``), refused or
dropped connections, and connect timeouts. A *read* timeout is retried only
when ``retry_timeouts`` is set: the server accepted the request and may still
be working on it, so a retry would queue behind the abandoned request.

Secrets (the API key, a password or a key in the URL: :mod:`localeval.backends.urls`)
go to the server only: masked in every message this module writes, and every URL it
shows is :func:`~localeval.backends.urls.redacted`. A request's path goes before the
base URL's query (:func:`~localeval.backends.urls.joined`).

The policy (:class:`RequestPolicy`) is apart from the client that sends, so the
Ollama backend keeps it around the official ``ollama`` client.

The options every server backend's table takes (:class:`HttpOptions`, a ``base_url``
that may name a fleet) are declared here too; httpx is imported only when a client is
made, so checking a config that names a server imports none of it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from localeval.backends.sequence import endpoint_order
from localeval.backends.urls import MASK, RecordedUrl, joined, redacted, secrets, url_problem
from localeval.errors import BackendError, BackendUnavailable

if TYPE_CHECKING:
    import httpx

#: Characters of a response body quoted in an error message.
BODY_EXCERPT = 300
T = TypeVar("T")
#: Keyword arguments of make_backend that the HTTP backends take as they are (tests script the server with them).
HTTP_EXTRAS = ("transport", "sleep")


class HttpOptions(BaseModel):
    """Timeouts, retries and concurrency of an HTTP backend (:class:`HttpClient`): keys of every server kind's table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(
        600.0, gt=0, description="Seconds to wait for a reply; a CPU judge reading a long prompt is slow."
    )
    connect_timeout: float = Field(5.0, gt=0, description="Seconds to wait for a connection.")
    max_attempts: int = Field(4, ge=1, description="Tries per request, the first included.")
    backoff: float = Field(0.5, ge=0, description="Seconds before the first retry; doubles each retry.")
    max_backoff: float = Field(8.0, ge=0, description="Cap on one backoff delay (Retry-After may ask more).")
    retry_deadline: float = Field(
        120.0, ge=0, description="No retry starts later than this many seconds after the first attempt."
    )
    retry_timeouts: bool = Field(
        False, description="Retry a request whose reply timed out (the server may still be busy with it)."
    )
    max_concurrency: int = Field(
        4, ge=1, description="Requests in flight at once, over all threads; per endpoint in a fleet."
    )
    eject_cooldown: float = Field(
        30.0, gt=0, description="A fleet: seconds a failing endpoint stays out before it is verified and tried again."
    )


def _one_or_fleet(value: Any) -> str | list[str]:
    """One URL as itself; a list of distinct URLs (a fleet), a list of one as that URL."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(url, str) for url in value):
        raise ValueError("expected a URL or a list of URLs")
    urls: list[str] = list(value)
    if not urls:
        raise ValueError("expected a URL or a non-empty list of URLs")
    problems = [problem for problem in map(url_problem, urls) if problem]
    if problems:
        raise ValueError(problems[0])
    if len(set(urls)) != len(urls):
        raise ValueError(f"the fleet's URLs must be distinct, got {[redacted(url) for url in urls]}")
    return urls[0] if len(urls) == 1 else urls


#: A server's URL, or several serving the same model (a fleet: :mod:`localeval.backends.fleet`);
#: recorded (a config dumped as JSON) with its secrets masked.
BaseUrls = Annotated[RecordedUrl | list[RecordedUrl], BeforeValidator(_one_or_fleet)]


def base_urls(value: str | list[str]) -> list[str]:
    """The endpoints a ``base_url`` option names, in order."""
    return [value] if isinstance(value, str) else list(value)


class HttpStatusError(BackendError):
    """The server answered with an HTTP error status."""

    def __init__(self, url: str, status: int, body: str, attempts: int = 1, retry_after: float = 0.0) -> None:
        self.url = url
        self.status = status
        self.body = body
        self.retry_after = retry_after
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        super().__init__(f"{url} answered HTTP {status}{tries}: {body!r}")

    @property
    def retryable(self) -> bool:
        """429 (too many requests) and 5xx are worth another try."""
        return self.status == 429 or self.status >= 500


class ReplyTimeout(BackendError):
    """The server took a request but sent no reply in time (after the retries, if any)."""


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (so a file path the server reports is ours too)."""
    return (urlsplit(url).hostname or "") in ("localhost", "127.0.0.1", "::1")


class RequestPolicy:
    """localeval's policy around one server's requests, whatever sends them: retries with
    backoff, the bound on requests in flight, timeouts, and errors with secrets masked.

    Shared by :class:`HttpClient` and the Ollama backend's official client.
    """

    def __init__(
        self,
        options: HttpOptions,
        secrets: Iterable[str | None] = (),
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options
        self._secrets = tuple(s for s in secrets if s)
        self._slots = threading.BoundedSemaphore(options.max_concurrency)
        self._sleep = sleep
        self._clock = clock

    @property
    def timeout(self) -> httpx.Timeout:
        """The read and connect timeouts, for the httpx client that sends."""
        import httpx

        return httpx.Timeout(self.options.timeout, connect=self.options.connect_timeout)

    def call(self, send: Callable[[int], T], url: str, *, retry_on_status: bool = True) -> T:
        """``send(attempt)`` until it returns, retrying what it raises as policy says.

        ``send`` raises :class:`HttpStatusError` or :class:`httpx.TransportError` for a
        failed attempt; the last one ends as :class:`HttpStatusError`,
        :class:`BackendUnavailable` or :class:`BackendError` naming ``url``.
        ``retry_on_status=False`` raises an error status at once (a caller probing
        what the server supports); transport failures are still retried.
        """
        import httpx

        deadline = self._clock() + self.options.retry_deadline
        attempt = 0
        while True:
            attempt += 1
            try:
                with endpoint_order(url).shared(), self._slots:  # not inside a score's requests
                    return send(attempt)
            except (HttpStatusError, httpx.TransportError) as failure:
                delay = self._delay(failure, attempt)
                if not self._again(failure, attempt, deadline - delay, retry_on_status):
                    if isinstance(failure, HttpStatusError):
                        raise
                    raise self._final_error(failure, url, attempt) from failure
            self._sleep(delay)

    def _delay(self, failure: HttpStatusError | httpx.TransportError, attempt: int) -> float:
        backoff: float = min(self.options.backoff * 2 ** (attempt - 1), self.options.max_backoff)
        return max(backoff, failure.retry_after if isinstance(failure, HttpStatusError) else 0.0)

    def _again(
        self, failure: HttpStatusError | httpx.TransportError, attempt: int, last_start: float, on_status: bool
    ) -> bool:
        retryable = _retryable(failure, self.options.retry_timeouts) and (
            on_status or not isinstance(failure, HttpStatusError)
        )
        return retryable and attempt < self.options.max_attempts and self._clock() <= last_start

    def _final_error(self, failure: httpx.TransportError, url: str, attempts: int) -> BackendError:
        import httpx

        shown = redacted(url)
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        reason = self.mask(str(failure) or type(failure).__name__)
        if isinstance(failure, (httpx.ConnectError, httpx.ConnectTimeout)):
            return BackendUnavailable(f"cannot connect to {shown}{tries}: {reason}; is the server running?")
        if isinstance(failure, httpx.TimeoutException):
            return ReplyTimeout(f"{shown}: no reply within {self.options.timeout:g} s{tries}")
        return BackendUnavailable(f"{shown}: the connection failed{tries}: {reason}")

    def mask(self, text: str) -> str:
        """``text`` with every secret of this policy replaced by ``***``."""
        return _mask(text, self._secrets)

    def excerpt(self, text: str) -> str:
        """At most :data:`BODY_EXCERPT` characters of a response body, secrets masked."""
        masked = self.mask(text)
        return masked if len(masked) <= BODY_EXCERPT else masked[:BODY_EXCERPT] + "…"

    def status_error(self, url: str, response: httpx.Response, attempt: int) -> HttpStatusError:
        """The error for ``response``'s error status: URL, status, body excerpt, Retry-After."""
        return HttpStatusError(
            redacted(url), response.status_code, self.excerpt(response.text), attempt, retry_after(response)
        )


class HttpClient:
    """JSON over HTTP to one server, with retries; safe to share between threads."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        options: HttpOptions | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options or HttpOptions()
        self.base_url = joined(base_url, "")  # its path without a trailing slash, its query kept
        self.shown_url = redacted(self.base_url)
        self.policy = RequestPolicy(self.options, (api_key, *secrets(base_url)), sleep=sleep, clock=clock)
        import httpx

        self._client = httpx.Client(
            transport=transport,
            timeout=self.policy.timeout,
            headers={"Authorization": f"Bearer {api_key}"} if api_key else None,
        )

    def __repr__(self) -> str:
        return f"HttpClient({self.shown_url!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def get(self, path: str, *, retry_on_status: bool = True) -> Any:
        """GET ``path`` (relative to the base URL, or absolute) and return the decoded JSON."""
        return self.request("GET", path, retry_on_status=retry_on_status)

    def post(self, path: str, body: dict[str, Any], *, retry_on_status: bool = True) -> Any:
        """POST ``body`` as JSON and return the decoded JSON reply."""
        return self.request("POST", path, body, retry_on_status=retry_on_status)

    def request(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, retry_on_status: bool = True
    ) -> Any:
        """Send with retries; raise :class:`BackendUnavailable`, :class:`HttpStatusError` or
        :class:`BackendError` with the URL when no usable reply comes back.

        ``retry_on_status=False`` raises an error status at once (a caller probing
        what the server supports); transport failures are still retried.
        """
        url = joined(self.base_url, path)
        return self.policy.call(lambda attempt: self._send(method, url, body, attempt), url,
                                retry_on_status=retry_on_status)

    def _send(self, method: str, url: str, body: dict[str, Any] | None, attempt: int) -> Any:
        response = self._client.request(method, url, json=body)
        if response.status_code >= 400:
            raise self.policy.status_error(url, response, attempt)
        try:
            return response.json()
        except ValueError as err:
            raise BackendError(
                f"{redacted(url)} answered HTTP {response.status_code} with a body that is not JSON: "
                f"{self.excerpt(response.text)!r}"
            ) from err

    def mask(self, text: str) -> str:
        """``text`` with every secret of this client replaced by ``***``."""
        return self.policy.mask(text)

    def excerpt(self, text: str) -> str:
        """At most :data:`BODY_EXCERPT` characters of a response body, secrets masked."""
        return self.policy.excerpt(text)


def _retryable(failure: HttpStatusError | httpx.TransportError, retry_timeouts: bool) -> bool:
    import httpx

    if isinstance(failure, HttpStatusError):
        return failure.retryable
    if isinstance(failure, (httpx.ReadTimeout, httpx.WriteTimeout)):
        return retry_timeouts
    # Refused or dropped connections, connect and pool timeouts; not protocol misuse.
    return not isinstance(failure, (httpx.UnsupportedProtocol, httpx.LocalProtocolError))


def retry_after(response: httpx.Response) -> float:
    """Seconds a 429 or 503 asks to wait (``Retry-After``); 0 otherwise."""
    if response.status_code not in (429, 503):
        return 0.0
    try:
        return max(0.0, float(response.headers.get("retry-after", "0")))
    except ValueError:  # an HTTP date: rare from local servers; use the backoff instead
        return 0.0


def _mask(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text

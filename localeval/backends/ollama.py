"""Judging through Ollama's native API (``POST /api/chat``) with the official ``ollama`` client.

The client (:class:`ollama.Client`, its request and reply types, and
:class:`ollama.ResponseError`) sends every request; localeval's
:class:`~localeval.backends.http.RequestPolicy` stays around it, as around every
server backend: timeouts (given to the client's httpx client), retries with
backoff on 429/5xx and dropped connections (the client does not retry), the
bound on requests in flight, and errors with the URL, status and body excerpt,
secrets masked (the client's own say neither URL nor body). A response hook on
the client's httpx client keeps each thread's last reply, so an error status
still quotes the body and honours ``Retry-After``.

One request has no public method in the client: ``GET /api/version``; it goes
through the client's typed lower-level ``Client._request`` (private, hence the
``ollama<0.7`` pin).

JSON generation passes the schema as ``format``. Score distributions send the
prefill as a final assistant message, which Ollama continues (the model reads
exactly what the in-process backend reads), and read ``logprobs`` /
``top_logprobs`` (Ollama 0.12.11 and later; client 0.6.3 sends them) of the
one token generated: at the score position, and after each prefix of a
candidate appended to the prefill (whole answers: :mod:`localeval.backends.scan`).

The client and httpx are imported when a backend is made: a config that names this
backend is checked with :class:`OllamaOptions` alone.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

from pydantic import BaseModel, Field, ValidationError

from localeval.backends.base import (
    Backend,
    Capabilities,
    DistributionReply,
    DistributionRequest,
    Fingerprint,
    JsonReply,
    JsonRequest,
    TextReply,
    TextRequest,
    Usage,
    summed,
)
from localeval.backends.fleet import one_or_fleet
from localeval.backends.http import HTTP_EXTRAS, BaseUrls, HttpOptions, HttpStatusError, RequestPolicy
from localeval.backends.kind import BackendKind, BuildContext
from localeval.backends.options import BackendOptions
from localeval.backends.scan import (
    READ_TEMPERATURE,
    ScoredToken,
    position_capabilities,
    prefill_messages,
    whole_answer_distribution,
)
from localeval.backends.schema import DEFAULT_MAX_ITEMS, bound_arrays, checked_reply
from localeval.backends.urls import joined, redacted, secrets
from localeval.errors import BackendError, BackendUnavailable, first_problem

if TYPE_CHECKING:
    import httpx
    import ollama

T = TypeVar("T")
DEFAULT_HOST = "http://127.0.0.1:11434"
#: The first Ollama release that returns log-probabilities.
LOGPROBS_SINCE = (0, 12, 11)
# Sample from the model's whole distribution, as the in-process backend does:
# no top-k/top-p/min-p truncation and no repetition penalty.
NEUTRAL_SAMPLING = {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "repeat_penalty": 1.0}


class OllamaOptions(HttpOptions, BackendOptions):
    """Ollama's native API: the keys of its ``[backend]`` table (the HTTP options included)."""

    kind: Literal["ollama"] = "ollama"
    model: str = Field(description="The model's name in Ollama, e.g. qwen2.5:7b.")
    base_url: BaseUrls = Field(DEFAULT_HOST, description="Ollama's host, or a list of hosts (a fleet).")
    num_ctx: int | None = Field(None, ge=256, description="Context window; the model's default when None.")
    top_logprobs: int = Field(20, ge=1, le=20, description="Alternatives per position (Ollama allows 0-20).")
    max_items: int = Field(DEFAULT_MAX_ITEMS, ge=1, description="maxItems for unbounded arrays.")


class OllamaClient:
    """The official :class:`ollama.Client` under localeval's request policy; safe to share
    between threads."""

    def __init__(
        self,
        host: str,
        options: HttpOptions,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(host)
        self.shown_url = redacted(host).rstrip("/")
        # The client sends OLLAMA_API_KEY as a bearer token when it is set: masked too.
        self.policy = RequestPolicy(options, (*secrets(host), os.environ.get("OLLAMA_API_KEY")), sleep=sleep)
        self._last = threading.local()
        # The client drops userinfo and query from the host: a password goes as basic auth, as
        # httpx does, and the query with every request (httpx puts it after the request's path).
        auth = (unquote(parts.username or ""), unquote(parts.password)) if parts.password else None
        query = parse_qsl(parts.query, keep_blank_values=True)
        import ollama

        self._client = ollama.Client(
            host, timeout=self.policy.timeout, transport=transport, auth=auth,
            event_hooks={"response": [self._keep]}, **({"params": query} if query else {}),
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()  # type: ignore[no-untyped-call]  # the client leaves close() unannotated

    def call(self, path: str, send: Callable[[ollama.Client], T]) -> T:
        """``send(client)`` for the request to ``path``, with the policy's retries and errors."""
        url = joined(self.shown_url, path)
        return self.policy.call(lambda attempt: self._send(send, url, attempt), url)

    def _keep(self, response: httpx.Response) -> None:
        self._last.response = response

    def _send(self, send: Callable[[ollama.Client], T], url: str, attempt: int) -> T:
        import ollama

        self._last.response = None
        try:
            return send(self._client)
        except ollama.ResponseError as err:
            raise self._status_error(err, url, attempt) from None
        except ConnectionError as err:  # the client's stand-in for httpx.ConnectError, raised from it
            raise _connect_error(err) from None
        except json.JSONDecodeError as err:
            raise BackendError(f"{url} answered HTTP {self._status()} with a body that is not JSON: "
                               f"{self._body(err.doc)!r}") from err
        except ValidationError as err:
            where, problem = first_problem(err)
            raise BackendError(f"{url}: a reply not in Ollama's shape: {where}: {problem}; "
                               f"{self._body('')!r}") from err

    def _status_error(self, err: ollama.ResponseError, url: str, attempt: int) -> HttpStatusError:
        response: httpx.Response | None = self._last.response
        if response is not None and response.status_code == err.status_code:
            return self.policy.status_error(url, response, attempt)
        return HttpStatusError(url, err.status_code, self.policy.excerpt(str(err.error)), attempt)

    def _status(self) -> int | str:
        response: httpx.Response | None = self._last.response
        return response.status_code if response is not None else "?"

    def _body(self, fallback: str) -> str:
        response: httpx.Response | None = self._last.response
        return self.policy.excerpt(response.text if response is not None else fallback)


def _connect_error(err: ConnectionError) -> httpx.TransportError:
    """The httpx error behind the client's ConnectionError (its text says why), for the policy."""
    import httpx

    cause = err.__context__
    return cause if isinstance(cause, httpx.ConnectError) else httpx.ConnectError(str(err))


class _Version(BaseModel):
    """``GET /api/version``'s reply."""

    version: str = "unknown"


class OllamaBackend:
    """A model served by Ollama. Safe to share between threads.

    The fingerprint's ``model_sha256`` is the sha256 of the model's GGUF blob
    (named in ``/api/show``'s Modelfile), the same number the in-process backend
    computes from the file; failing that, the manifest digest from ``/api/tags``,
    which is also kept in ``settings["digest"]``.
    """

    kind = "ollama"

    def __init__(
        self,
        model: str,
        host: str = DEFAULT_HOST,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        **options: Any,
    ) -> None:
        """Connect and identify ``model``; :class:`BackendUnavailable` when Ollama is not
        running or the model is not pulled."""
        self.options = OllamaOptions.parse(self.kind, {**options, "model": model, "base_url": host})
        self.model = model
        self._ollama = OllamaClient(host, self.options, transport=transport, sleep=sleep)
        self._notes: dict[str, str] = {}
        try:
            self._fingerprint = self._identify()
        except BaseException:
            self._ollama.close()  # nobody else can: the object is never returned
            raise

    def __repr__(self) -> str:
        return f"OllamaBackend({self.model!r}, host={self._ollama.shown_url!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._ollama.close()

    @property
    def capabilities(self) -> Capabilities:
        capabilities = position_capabilities(self._notes, self.options.top_logprobs, self.options.max_concurrency,
                                             "continue")
        return capabilities.model_copy(update={"text": True})

    @property
    def fingerprint(self) -> Fingerprint:
        return self._fingerprint

    def generate_json(self, request: JsonRequest) -> JsonReply:
        schema = bound_arrays(request.json_schema, self.options.max_items)
        reply = self._chat(
            [m.model_dump() for m in request.messages],
            self._sampling(request.temperature, request.seed, request.max_tokens),
            format=schema,
        )
        text = reply.message.content
        if text is None:
            raise BackendError(f"{self._ollama.shown_url}: a reply without message content: {reply!r:.300}")
        finish = "length" if reply.done_reason == "length" else "stop"
        return checked_reply(text, schema, finish, _usage(reply), request.max_tokens)

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        shown = self._ollama.shown_url
        if "distribution" in self._notes:
            raise BackendError(f"{shown}: no log-probabilities: {self._notes['distribution']}")
        usages: list[Usage] = []

        def first_token(prefix: str, seed: int) -> ScoredToken | None:
            reply = self._chat(
                prefill_messages(request.messages, request.prefill + prefix, "continue"),
                self._sampling(READ_TEMPERATURE, seed, 1),
                logprobs=True,
                top_logprobs=self.options.top_logprobs,
            )
            usages.append(_usage(reply))
            if not reply.logprobs and reply.done_reason == "stop" and not reply.message.content:
                return None  # it drew an end-of-generation token: Ollama lists nothing for it
            if not reply.logprobs:
                self._notes["distribution"] = "the server returned no log-probabilities (Ollama < 0.12.11?)"
                raise BackendError(f"{shown}: {self._notes['distribution']}")
            return ScoredToken.from_json(reply.logprobs[0].model_dump())

        distribution, _ = whole_answer_distribution(request.candidates, first_token, self.options.top_logprobs,
                                                    self._ollama.shown_url, prune_below=request.prune_below)
        return DistributionReply(distribution=distribution, usage=summed(usages))

    def _chat(
        self,
        messages: Sequence[dict[str, Any]],
        options: dict[str, Any],
        *,
        format: dict[str, Any] | None = None,
        logprobs: bool | None = None,
        top_logprobs: int | None = None,
    ) -> ollama.ChatResponse:
        def send(client: ollama.Client) -> ollama.ChatResponse:
            return client.chat(self.model, messages, stream=False, format=format, options=options,
                               logprobs=logprobs, top_logprobs=top_logprobs)

        return self._model_call("/api/chat", send)

    def _model_call(self, path: str, send: Callable[[ollama.Client], T]) -> T:
        """A request about the model: HTTP 404 means it is not pulled."""
        try:
            return self._ollama.call(path, send)
        except HttpStatusError as err:
            if err.status == 404:
                raise self._not_pulled() from err
            raise

    def _sampling(self, temperature: float, seed: int | None, num_predict: int) -> dict[str, Any]:
        options: dict[str, Any] = {"temperature": temperature, "num_predict": num_predict, **NEUTRAL_SAMPLING}
        if seed is not None:
            options["seed"] = seed
        if self.options.num_ctx is not None:
            options["num_ctx"] = self.options.num_ctx
        return options

    def _not_pulled(self) -> BackendUnavailable:
        return BackendUnavailable(
            f"{self._ollama.shown_url}: model {self.model!r} is not pulled; run `ollama pull {self.model}`"
        )

    # -- identity ----------------------------------------------------------------------

    def _identify(self) -> Fingerprint:
        version = self._version()
        show = self._model_call("/api/show", lambda client: client.show(self.model))
        tags = self._ollama.call("/api/tags", lambda client: client.list()).models
        names = (self.model, f"{self.model}:latest")
        entry = next((m for m in tags if m.model in names), None)
        digest = str(entry and entry.digest or "").removeprefix("sha256:")
        if _release(version) < LOGPROBS_SINCE:
            self._notes["distribution"] = (
                f"Ollama {version} gives no log-probabilities (added in 0.12.11); upgrade Ollama"
            )
        return Fingerprint(
            kind=self.kind,
            model=str(entry and entry.model or self.model),
            model_sha256=_blob_sha256(show.modelfile or "") or (digest if _SHA256.fullmatch(digest) else None),
            runtime=f"ollama {version}",
            settings={
                "host": self._ollama.shown_url,
                "digest": digest or None,
                "num_ctx": self.options.num_ctx,
                "top_logprobs": self.options.top_logprobs,
                "max_items": self.options.max_items,
                # What a candidate's probability is: a cache filled when one position was read
                # (P(the reply starts with c)) must not answer for whole answers.
                "candidates": "whole answer",
            },
        )

    def _version(self) -> str:
        """What ``GET /api/version`` says; the client has no public method for it."""
        try:
            return self._ollama.call(
                "/api/version", lambda client: client._request(_Version, "GET", "/api/version")
            ).version
        except BackendUnavailable as err:
            raise BackendUnavailable(f"{err} (start Ollama with `ollama serve`)") from err

    # -- free text (a target) ----------------------------------------------------------

    def generate_text(self, request: TextRequest) -> TextReply:
        """A plain ``/api/chat`` reply with the request's sampling and stop strings."""
        options = self._sampling(request.temperature, request.seed, request.max_tokens)
        if request.stop:
            options["stop"] = list(request.stop)
        reply = self._chat([m.model_dump() for m in request.messages], options)
        finish = "length" if reply.done_reason == "length" else "stop"
        return TextReply(text=reply.message.content or "", finish_reason=finish, usage=_usage(reply))


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _blob_sha256(modelfile: str) -> str | None:
    """The model file's sha256 from the modelfile's ``FROM …/blobs/sha256-<hex>`` line."""
    found = re.search(r"^FROM .*sha256[-:]([0-9a-f]{64})\s*$", modelfile, re.MULTILINE)
    return found.group(1) if found else None


def _release(version: str) -> tuple[int, int, int]:
    """(major, minor, patch); a version we cannot read, or a dev build's 0.0.0, counts as new."""
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    numbers = tuple(int(n) for n in found.groups()) if found else (0, 0, 0)
    return numbers if numbers != (0, 0, 0) else (999, 0, 0)  # type: ignore[return-value]


def _usage(reply: ollama.ChatResponse) -> Usage:
    return Usage(prompt_tokens=reply.prompt_eval_count or 0, completion_tokens=reply.eval_count or 0)


def _build(options: OllamaOptions, context: BuildContext, **extras: Any) -> Backend:
    settings = options.model_dump(exclude={"kind", "model", "base_url"})
    return one_or_fleet(options.base_url, options, lambda url: OllamaBackend(options.model, url, **extras, **settings),
                        "host")


#: The kind ``ollama``: what :mod:`localeval.backends.builtin` registers.
KIND = BackendKind("ollama", OllamaOptions, _build, "Ollama's native API (/api/chat).", extras=HTTP_EXTRAS)

"""Judging through Ollama's native API: ``POST /api/chat``.

Plain HTTP through :mod:`localeval.backends.http`, not the official ``ollama``
client: every server backend then shares one HTTP layer — the same timeouts,
retries with backoff, bound on concurrent requests, and error messages with the
URL, status and body excerpt (the client raises a ConnectionError without the
URL and does not retry). The tests check the stand-in server against the
official client, so the request and reply shapes are Ollama's.

JSON generation passes the schema as ``format``. Score distributions send the
prefill as a final assistant message, which Ollama continues (the model reads
exactly what the in-process backend reads), and read ``logprobs`` /
``top_logprobs`` (Ollama 0.12.11 and later) at the score position.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import httpx

from localeval.backends.base import (
    Capabilities,
    DistributionReply,
    DistributionRequest,
    Fingerprint,
    JsonReply,
    JsonRequest,
    Usage,
)
from localeval.backends.http import HttpClient, HttpStatusError
from localeval.backends.options import OLLAMA_HOST, OllamaOptions
from localeval.backends.scan import (
    ScoredToken,
    position_capabilities,
    prefill_messages,
    read_distribution,
    require_single_characters,
)
from localeval.backends.schema import bound_arrays, checked_reply
from localeval.errors import BackendError, BackendUnavailable

DEFAULT_HOST = OLLAMA_HOST
#: The first Ollama release that returns log-probabilities.
LOGPROBS_SINCE = (0, 12, 11)
# Sample from the model's whole distribution, as the in-process backend does:
# no top-k/top-p/min-p truncation and no repetition penalty.
NEUTRAL_SAMPLING = {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "repeat_penalty": 1.0}


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
        self._http = HttpClient(host, options=self.options, transport=transport, sleep=sleep)
        self._notes: dict[str, str] = {}
        try:
            self._fingerprint = self._identify()
        except BaseException:
            self._http.close()  # nobody else can: the object is never returned
            raise

    def __repr__(self) -> str:
        return f"OllamaBackend({self.model!r}, host={self._http.shown_url!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    @property
    def capabilities(self) -> Capabilities:
        return position_capabilities(self._notes, self.options.top_logprobs, self.options.max_concurrency)

    @property
    def fingerprint(self) -> Fingerprint:
        return self._fingerprint

    def generate_json(self, request: JsonRequest) -> JsonReply:
        schema = bound_arrays(request.json_schema, self.options.max_items)
        reply = self._chat({
            "messages": [m.model_dump() for m in request.messages],
            "format": schema,
            "options": self._sampling(request.temperature, request.seed, request.max_tokens),
        })
        text = (reply.get("message") or {}).get("content")
        if not isinstance(text, str):
            raise BackendError(f"{self._http.shown_url}: a reply without message content: {reply!r:.300}")
        finish = "length" if reply.get("done_reason") == "length" else "stop"
        return checked_reply(text, schema, finish, _usage(reply), request.max_tokens)

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        require_single_characters(request.candidates, self.kind)
        if "distribution" in self._notes:
            raise BackendError(f"{self._http.shown_url}: no log-probabilities: {self._notes['distribution']}")
        reply = self._chat({
            "messages": prefill_messages(request.messages, request.prefill, "continue"),
            "options": self._sampling(0.0, 0, self.options.scan_tokens),
            "logprobs": True,
            "top_logprobs": self.options.top_logprobs,
        })
        stream = reply.get("logprobs")
        if not isinstance(stream, list) or not stream:
            self._notes["distribution"] = "the server returned no log-probabilities (Ollama < 0.12.11?)"
            raise BackendError(f"{self._http.shown_url}: {self._notes['distribution']}")
        tokens = [ScoredToken.from_json(item) for item in stream]
        distribution = read_distribution(tokens, request.prefill, request.candidates, preceding=request.prefill)
        return DistributionReply(distribution=distribution, usage=_usage(reply))

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            reply = self._http.post("/api/chat", {"model": self.model, "stream": False, **body})
        except HttpStatusError as err:
            if err.status == 404:
                raise self._not_pulled() from err
            raise
        return _object(reply, self._url("/api/chat"))

    def _sampling(self, temperature: float, seed: int | None, num_predict: int) -> dict[str, Any]:
        options: dict[str, Any] = {"temperature": temperature, "num_predict": num_predict, **NEUTRAL_SAMPLING}
        if seed is not None:
            options["seed"] = seed
        if self.options.num_ctx is not None:
            options["num_ctx"] = self.options.num_ctx
        return options

    def _url(self, path: str) -> str:
        return self._http.shown_url + path

    def _not_pulled(self) -> BackendUnavailable:
        return BackendUnavailable(
            f"{self._http.shown_url}: model {self.model!r} is not pulled; run `ollama pull {self.model}`"
        )

    # -- identity ----------------------------------------------------------------------

    def _identify(self) -> Fingerprint:
        try:
            answer = _object(self._http.get("/api/version"), self._url("/api/version"))
        except BackendUnavailable as err:
            raise BackendUnavailable(f"{err} (start Ollama with `ollama serve`)") from err
        version = str(answer.get("version", "unknown"))
        try:
            show = _object(self._http.post("/api/show", {"model": self.model}), self._url("/api/show"))
        except HttpStatusError as err:
            if err.status == 404:
                raise self._not_pulled() from err
            raise
        tags = _object(self._http.get("/api/tags"), self._url("/api/tags")).get("models") or []
        names = (self.model, f"{self.model}:latest")
        entry = next((m for m in tags if isinstance(m, dict) and m.get("name") in names), {})
        digest = str(entry.get("digest") or "").removeprefix("sha256:")
        if _release(version) < LOGPROBS_SINCE:
            self._notes["distribution"] = (
                f"Ollama {version} gives no log-probabilities (added in 0.12.11); upgrade Ollama"
            )
        return Fingerprint(
            kind=self.kind,
            model=str(entry.get("name") or self.model),
            model_sha256=_blob_sha256(str(show.get("modelfile", "")))
            or (digest if _SHA256.fullmatch(digest) else None),
            runtime=f"ollama {version}",
            settings={
                "host": self._http.shown_url,
                "digest": digest or None,
                "num_ctx": self.options.num_ctx,
                "top_logprobs": self.options.top_logprobs,
                "max_items": self.options.max_items,
            },
        )


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BackendError(f"{where}: expected a JSON object, got {value!r:.300}")
    return value


def _blob_sha256(modelfile: str) -> str | None:
    """The model file's sha256 from the modelfile's ``FROM …/blobs/sha256-<hex>`` line."""
    found = re.search(r"^FROM .*sha256[-:]([0-9a-f]{64})\s*$", modelfile, re.MULTILINE)
    return found.group(1) if found else None


def _release(version: str) -> tuple[int, int, int]:
    """(major, minor, patch); a version we cannot read, or a dev build's 0.0.0, counts as new."""
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    numbers = tuple(int(n) for n in found.groups()) if found else (0, 0, 0)
    return numbers if numbers != (0, 0, 0) else (999, 0, 0)  # type: ignore[return-value]


def _usage(reply: dict[str, Any]) -> Usage:
    return Usage(
        prompt_tokens=reply.get("prompt_eval_count") or 0, completion_tokens=reply.get("eval_count") or 0
    )

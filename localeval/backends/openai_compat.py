"""Judging through an OpenAI-compatible server: LM Studio, vLLM, llama.cpp's servers, Ollama's /v1.

JSON generation sends the schema in the ``response_format`` dialect the server
accepts and always validates the reply. Servers differ (measured, docs/http-backends.md):
llama-cpp-python's server answers HTTP 500 to ``json_schema``; vLLM accepts
``json_object`` with a schema but ignores the schema. So ``auto`` tries
``json_schema`` first and falls back to ``json_object`` + schema only when the
server says it does not support it, and remembers the choice.

Score distributions come from ``logprobs``/``top_logprobs`` (see
:mod:`localeval.backends.scan` for how the prefill reaches the model and how
the score position is found in the returned tokens). The ``completion``
prefill posts a prompt rendered here to ``/completions`` instead
(:mod:`localeval.backends.completions`).

httpx is imported when a backend is made (:mod:`localeval.backends.http`): a config
that names this backend is checked with :class:`OpenAICompatOptions` alone. The
servers it knows by name, with their defaults, are :mod:`localeval.backends.presets`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationInfo, field_validator

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
from localeval.backends.catalog import file_sha256
from localeval.backends.chat import JinjaChatFormat
from localeval.backends.completions import (
    completion_body,
    completion_chat_format,
    render_prompt,
)
from localeval.backends.fleet import one_or_fleet
from localeval.backends.http import HTTP_EXTRAS, BaseUrls, HttpClient, HttpOptions, HttpStatusError, is_loopback
from localeval.backends.kind import BackendKind, BuildContext
from localeval.backends.openai_shapes import (
    chat_tokens,
    choices_in_order,
    completion_tokens,
    rejects_json_schema,
    reply_usage,
    response_format,
    server_runtime,
)
from localeval.backends.options import BackendOptions
from localeval.backends.scan import (
    APPENDABLE,
    READ_TEMPERATURE,
    PrefillMode,
    ScoredToken,
    position_capabilities,
    prefill_grammar,
    prefill_messages,
    read_distribution,
    require_single_characters,
    whole_answer_distribution,
)
from localeval.backends.schema import DEFAULT_MAX_ITEMS, bound_arrays, checked_reply
from localeval.backends.urls import rooted
from localeval.errors import BackendError, BackendUnavailable, ConfigError

if TYPE_CHECKING:
    import httpx

StructuredOutput = Literal["auto", "json_schema", "json_object"]


class OpenAICompatOptions(HttpOptions, BackendOptions):
    """Any OpenAI-compatible server: the keys of its ``[backend]`` table (the HTTP options included)."""

    kind: Literal["openai-compatible"] = "openai-compatible"
    base_url: BaseUrls = Field(
        description="The server's URL, up to and including /v1, or a list of URLs serving the same model (a fleet)."
    )
    model: str | None = Field(None, description="The served model's name; None: the only one it serves.")
    api_key_env: str | None = Field(
        None, description="The environment variable that holds the API key; the key is never in a file."
    )
    structured_output: StructuredOutput = Field("auto", description="The response_format dialect.")
    prefill: PrefillMode = Field("instruction", description="How the model is made to write the prefill.")
    top_logprobs: int = Field(20, ge=1, le=20, description="Alternatives per position; vLLM caps it at 20.")
    scan_tokens: int = Field(
        16, ge=1, description="grammar/instruction prefill: tokens generated, beyond the prefill, to reach the score."
    )
    max_items: int = Field(DEFAULT_MAX_ITEMS, ge=1, description="maxItems for unbounded arrays.")
    chat_template: str | None = Field(
        None, description="completion prefill: 'chatml', the model's Jinja template file, or its .gguf file (the "
                          "template it carries); None: the server's."
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="Server-specific fields added to every generation request."
    )
    reuse_score_prompt: bool = Field(
        False,
        description="llama.cpp's llama-server: a whole-answer score's continuation requests send cache_prompt "
        "true, so each reads one token on the prompt the score's first request read, not the whole prompt again.",
    )
    batch_continuations: bool = Field(
        False,
        description="completion prefill, a server that takes a list of prompts (llama-server): a whole-answer "
        "score's continuations of one depth of the candidate trie go in one request (3 per 0-10 score instead "
        "of 23). The same numbers as one request each on a server of one slot, not on several "
        "(docs/http-backends.md).",
    )

    @field_validator("batch_continuations")
    @classmethod
    def _needs_raw_prompts(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("prefill") != "completion":
            raise ValueError("needs prefill = 'completion': prompts go in a list to /completions, "
                             "a chat request holds one conversation")
        return value


class OpenAICompatBackend:
    """A judge model behind ``POST {base_url}/chat/completions`` (and ``/completions`` for score
    distributions with the ``completion`` prefill). Safe to share between threads."""

    kind = "openai-compatible"

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        sha256_memo: MutableMapping[str, str] | None = None,
        **options: Any,
    ) -> None:
        """Connect and identify the model; :class:`BackendUnavailable` when the server is down.

        ``model`` may be left out when the server serves exactly one.
        """
        self.options = OpenAICompatOptions.parse(self.kind, {**options, "base_url": base_url, "model": model})
        self._http = HttpClient(base_url, api_key=api_key, options=self.options, transport=transport, sleep=sleep)
        configured = self.options.structured_output
        self._dialect: str | None = None if configured == "auto" else configured
        self._notes: dict[str, str] = {}
        self._probed = False
        self._lock = threading.Lock()
        try:
            self.model, self._format, self._fingerprint = self._identify(model, sha256_memo)
        except BaseException:
            self._http.close()  # nobody else can: the object is never returned
            raise

    def __repr__(self) -> str:
        return f"OpenAICompatBackend({self._http.shown_url!r}, model={self.model!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    @property
    def structured_dialect(self) -> str | None:
        """The response_format dialect in use; None until ``auto`` has decided."""
        return self._dialect

    @property
    def capabilities(self) -> Capabilities:
        """What the server supports; log-probabilities are probed once, on first access."""
        self._probe_logprobs()
        capabilities = position_capabilities(self._notes, self.options.top_logprobs, self.options.max_concurrency,
                                             self.options.prefill)
        return capabilities.model_copy(update={"text": True})

    @property
    def fingerprint(self) -> Fingerprint:
        return self._fingerprint

    # -- JSON generation ---------------------------------------------------------------

    def generate_json(self, request: JsonRequest) -> JsonReply:
        schema = bound_arrays(request.json_schema, self.options.max_items)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        reply = self._post_structured(body, schema)
        choice = self._choice(reply)
        finish = str(choice.get("finish_reason") or "stop")
        text = (choice.get("message") or {}).get("content")
        if finish != "length" and not isinstance(text, str):
            raise BackendError(f"{self._http.shown_url}: the reply has no message content ({finish=})")
        return checked_reply(text or "", schema, finish, reply_usage(reply), request.max_tokens)

    def _post_structured(self, body: dict[str, Any], schema: dict[str, Any]) -> Any:
        if self._dialect is not None:
            return self._post({**body, "response_format": response_format(self._dialect, schema)})
        first = {**body, "response_format": response_format("json_schema", schema)}
        try:
            reply = self._post(first, retry_on_status=False)
        except HttpStatusError as err:
            if rejects_json_schema(err):
                self._dialect = "json_object"
                return self._post({**body, "response_format": response_format("json_object", schema)})
            if not err.retryable:
                raise
            return self._post(first)  # an ordinary failure: retry it, decide the dialect later
        self._dialect = "json_schema"
        return reply

    # -- Candidate distributions -------------------------------------------------------

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        mode = self.options.prefill
        if mode not in APPENDABLE:
            require_single_characters(request.candidates, self.kind, mode)
        if not self.capabilities.distribution:
            raise BackendError(f"{self._http.shown_url}: no log-probabilities: {self._notes['distribution']}")
        if mode not in APPENDABLE:
            return self._chat_distribution(request, mode)
        usages: list[Usage] = []

        def first_token(prefix: str, seed: int) -> ScoredToken | None:
            tokens, usage = self._first_token(request, request.prefill + prefix, seed, continuation=bool(prefix))
            usages.append(usage)
            return tokens

        def first_tokens(prefixes: Sequence[str], seed: int) -> list[ScoredToken | None]:
            tokens, usage = self._first_tokens(request, [request.prefill + p for p in prefixes], seed)
            usages.append(usage)
            return tokens

        batched = first_tokens if self.options.batch_continuations else None
        distribution, _ = whole_answer_distribution(request.candidates, first_token, self.options.top_logprobs,
                                                    self._http.base_url, first_tokens=batched,
                                                    prune_below=request.prune_below)
        return DistributionReply(distribution=distribution, usage=summed(usages))

    def _chat_distribution(self, request: DistributionRequest, mode: PrefillMode) -> DistributionReply:
        """Generate a few tokens after the prefill and scan them for the score position."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": prefill_messages(request.messages, request.prefill, mode),
            "max_tokens": self.options.scan_tokens + len(request.prefill),
            "temperature": 0.0,
            "seed": 0,
            "logprobs": True,
            "top_logprobs": self.options.top_logprobs,
        }
        if mode == "grammar":
            body["grammar"] = prefill_grammar(request.prefill, request.candidates)
        reply = self._post(body)
        tokens = self._scored_tokens(chat_tokens(self._choice(reply)))
        distribution = read_distribution(tokens, request.prefill, request.candidates)
        return DistributionReply(distribution=distribution, usage=reply_usage(reply))

    def _first_token(
        self, request: DistributionRequest, prefill: str, seed: int, *, continuation: bool
    ) -> tuple[ScoredToken | None, Usage]:
        """One token drawn after ``prefill``, with its top alternatives; None if the server stopped at once.

        ``continuation``: ``prefill`` extends the score's first request by a candidate's
        prefix; with ``reuse_score_prompt`` the server is asked to keep the prompt it holds.
        """
        reuse = {"cache_prompt": True} if continuation and self.options.reuse_score_prompt else {}
        if self._format is not None:  # the completion prefill: a raw prompt ending with the prefill
            prompt = render_prompt(self._format, request.messages, prefill)
            body = {**completion_body(self.model, prompt, self.options.top_logprobs),
                    "temperature": READ_TEMPERATURE, "seed": seed, **reuse}
            reply = self._post(body, path="/completions")
            choice = self._choice(reply)
            return self._first_or_stop(completion_tokens(choice), choice), reply_usage(reply)
        body = {
            "model": self.model,
            "messages": prefill_messages(request.messages, prefill, "continue"),
            "max_tokens": 1, "temperature": READ_TEMPERATURE, "seed": seed,
            "logprobs": True, "top_logprobs": self.options.top_logprobs, **reuse,
        }
        if prefill:
            # vLLM's switches; llama-server and Ollama continue a final assistant message anyway.
            body.update(continue_final_message=True, add_generation_prompt=False)
        reply = self._post(body)
        choice = self._choice(reply)
        return self._first_or_stop(chat_tokens(choice), choice), reply_usage(reply)

    def _first_tokens(
        self, request: DistributionRequest, prefills: list[str], seed: int
    ) -> tuple[list[ScoredToken | None], Usage]:
        """:meth:`_first_token` after each of ``prefills`` (continuations), in one ``/completions``
        request with a list of prompts (``batch_continuations``)."""
        chat = self._format
        if chat is None:  # the options refuse batch_continuations without the completion prefill
            raise BackendError("batch_continuations needs the completion prefill")
        prompts = [render_prompt(chat, request.messages, prefill) for prefill in prefills]
        reuse = {"cache_prompt": True} if self.options.reuse_score_prompt else {}
        body = {**completion_body(self.model, prompts, self.options.top_logprobs),
                "temperature": READ_TEMPERATURE, "seed": seed, **reuse}
        try:
            reply = self._post(body, path="/completions")
        except HttpStatusError as err:
            raise BackendError(f"{err}; {len(prompts)} prompts were sent in one request (batch_continuations): "
                               "a server that takes one prompt only fails so; set batch_continuations = false") from err
        choices = choices_in_order(reply, len(prompts))
        return [self._first_or_stop(completion_tokens(choice), choice) for choice in choices], reply_usage(reply)

    def _first_or_stop(self, tokens: list[ScoredToken] | None, choice: dict[str, Any]) -> ScoredToken | None:
        """The first token; None when the server stopped before writing one (no alternatives then)."""
        text = choice["text"] if "text" in choice else (choice.get("message") or {}).get("content")
        if not tokens and not text and choice.get("finish_reason") == "stop":
            return None
        return self._scored_tokens(tokens)[0]

    def _scored_tokens(self, tokens: list[ScoredToken] | None) -> list[ScoredToken]:
        if not tokens:
            self._notes["distribution"] = "the server returned no log-probabilities (logprobs is null)"
            raise BackendError(f"{self._http.shown_url}: {self._notes['distribution']}")
        return tokens

    def _probe_logprobs(self) -> None:
        with self._lock:
            if self._probed:
                return
            completion = self._format is not None
            path = "/completions" if completion else "/chat/completions"
            try:
                reply = self._post(self._probe_body(), path=path, retry_on_status=False)
            except HttpStatusError as err:
                if err.status >= 500 and "logprob" not in err.body.lower():
                    raise
                self._notes["distribution"] = f"the server rejects log-probability requests: {err}"
            else:
                choice = self._choice(reply)
                if (completion_tokens(choice) if completion else chat_tokens(choice)) is None:
                    self._notes["distribution"] = "the server returned no log-probabilities (logprobs is null)"
            self._probed = True

    def _probe_body(self) -> dict[str, Any]:
        if self._format is not None:
            return completion_body(self.model, "Reply with OK.", self.options.top_logprobs)
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": "Reply with OK."}],
            "max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": self.options.top_logprobs,
        }

    # -- identity ----------------------------------------------------------------------

    def _identify(
        self, model: str | None, memo: MutableMapping[str, str] | None
    ) -> tuple[str, JinjaChatFormat | None, Fingerprint]:
        model, entry = self._served(model)
        base = self._http.base_url  # llama.cpp's /props and /version are beside /v1, asked with its secrets
        props, version = self._optional(rooted(base, "/props")), self._optional(rooted(base, "/version"))
        path = props.get("model_path") if isinstance(props, dict) else None
        chat = None
        if self.options.prefill == "completion":
            chat = completion_chat_format(self.options.chat_template, props, self.kind)
        template = {"chat_template": chat.identity} if chat is not None else {}
        return model, chat, Fingerprint(
            kind=self.kind,
            model=model,
            model_sha256=self._local_sha256(path or model, memo),
            runtime=server_runtime(props, version, entry),
            settings={
                "base_url": self._http.shown_url,
                "structured_output": self.options.structured_output,
                "prefill": self.options.prefill,
                # What a candidate's probability is (scan.py): a cache filled when the
                # continue/completion modes read one position must not answer now.
                "candidates": "whole answer" if self.options.prefill in APPENDABLE else "reply starts with",
                "top_logprobs": self.options.top_logprobs,
                "max_items": self.options.max_items,
                "extra_body": self.options.extra_body,
                **template,
                # Only when on: the keys of caches filled before the option existed stay valid.
                **({"reuse_score_prompt": True} if self.options.reuse_score_prompt else {}),
                # Batched, the numbers depend on the server's slots (docs/http-backends.md).
                **({"continuations": "batched", "slots": _slots(props)} if self.options.batch_continuations else {}),
            },
        )

    def _served(self, model: str | None) -> tuple[str, dict[str, Any]]:
        """The model to use and its entry in ``GET /models``: the one named, or the only one."""
        listing = self._list(self._http.get("/models"), "data")
        served = {m["id"]: m for m in listing if isinstance(m, dict) and "id" in m}
        if model is None and len(served) != 1:
            raise ConfigError(f"{self._http.shown_url} serves {sorted(served)}: name the model to judge with")
        model = model if model is not None else next(iter(served))
        if model not in served:
            raise BackendUnavailable(
                f"{self._http.shown_url} does not serve model {model!r}; it serves {sorted(served)}"
            )
        return model, served[model]

    def _local_sha256(self, path: str, memo: MutableMapping[str, str] | None) -> str | None:
        """The model file's sha256 when the server is on this machine and names a file we can read."""
        file = Path(path)
        if not (is_loopback(self._http.base_url) and file.suffix == ".gguf" and file.is_file()):
            return None
        return file_sha256(file, memo)

    def _optional(self, url: str) -> Any:
        """A GET that some servers do not offer: None on an error status or a body that is not JSON."""
        try:
            return self._http.get(url, retry_on_status=False)
        except BackendUnavailable:
            raise
        except BackendError:
            return None

    def _post(self, body: dict[str, Any], *, path: str = "/chat/completions", retry_on_status: bool = True) -> Any:
        body = {**self.options.extra_body, **body}
        return self._http.post(path, body, retry_on_status=retry_on_status)

    def _choice(self, reply: Any) -> dict[str, Any]:
        choices = self._list(reply, "choices")
        if not choices or not isinstance(choices[0], dict):
            excerpt = self._http.excerpt(str(reply))
            raise BackendError(f"{self._http.shown_url}: a reply without choices: {excerpt!r}")
        return choices[0]

    def _list(self, value: Any, key: str) -> list[Any]:
        found = value.get(key) if isinstance(value, dict) else None
        if not isinstance(found, list):
            raise BackendError(
                f"{self._http.shown_url}: expected a JSON object with a list '{key}', "
                f"got {self._http.excerpt(str(value))!r}"
            )
        return found

    # -- free text (a target) ----------------------------------------------------------

    def generate_text(self, request: TextRequest) -> TextReply:
        """A plain ``/chat/completions`` reply with the request's sampling and stop strings."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.stop:
            body["stop"] = list(request.stop)
        reply = self._post(body)
        choice = self._choice(reply)
        text = (choice.get("message") or {}).get("content")
        if not isinstance(text, str):
            raise BackendError(f"{self._http.shown_url}: the reply has no message content: {self._http.excerpt(str(choice))!r}")
        return TextReply(text=text, finish_reason=str(choice.get("finish_reason") or "stop"), usage=reply_usage(reply))


def _slots(props: Any) -> int | None:
    """How many requests llama-server reads at once (``total_slots`` in ``/props``); None if unknown."""
    slots = props.get("total_slots") if isinstance(props, dict) else None
    return slots if isinstance(slots, int) else None


def build(options: OpenAICompatOptions, context: BuildContext, *, api_key: str | None = None,
          **extras: Any) -> Backend:
    """The backend (or fleet) ``options`` describe; the factory of this kind and of every preset's."""
    settings = options.model_dump(exclude={"kind", "base_url", "model", "api_key_env"})
    if api_key is None:
        api_key = _api_key(options.api_key_env, context)
    return one_or_fleet(options.base_url, options, lambda url: OpenAICompatBackend(
        url, options.model, api_key=api_key, sha256_memo=context.sha256_memo, **extras, **settings
    ), "base_url")


def _api_key(variable: str | None, context: BuildContext) -> str | None:
    """The key from the variable the config names; the key itself is never in a config."""
    if variable is None:
        return None
    key = context.environ.get(variable)
    if not key:
        raise ConfigError(f"{context.where}.api_key_env: the environment variable {variable} is not set")
    return key


#: What the OpenAI-compatible kinds pass their factory as it is: an API key, and the HTTP extras.
EXTRAS = ("api_key", *HTTP_EXTRAS)

#: The kind ``openai-compatible``: what :mod:`localeval.backends.builtin` registers.
KIND = BackendKind("openai-compatible", OpenAICompatOptions, build,
                   "Any server with OpenAI's chat API (/v1/chat/completions).", extras=EXTRAS)

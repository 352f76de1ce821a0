"""The options of each built-in backend kind: what a ``[backend]`` table may hold, declared once.

Each kind's options model *is* its config table (``kind`` included), and the
backend reads its settings from it. This module needs only pydantic, so a
config is validated without importing the backend it names (httpx, llama.cpp).

The OpenAI-compatible presets are that kind's model with other defaults
(:data:`PRESETS`), one model per preset, so a config dump holds the values
actually used and validates back to the same settings.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from localeval.backends.scan import PrefillMode
from localeval.backends.schema import DEFAULT_MAX_ITEMS
from localeval.errors import ConfigError, first_problem

StructuredOutput = Literal["auto", "json_schema", "json_object"]
OLLAMA_HOST = "http://127.0.0.1:11434"


class BackendOptions(BaseModel):
    """Base of every backend kind's options. A plugin's kind subclasses it with its own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(description="The backend kind; the registry sets it from the table's kind.")

    @classmethod
    def parse(cls, kind: str, options: dict[str, Any]) -> Self:
        """``options`` validated; a :class:`ConfigError` naming the backend and the option otherwise."""
        try:
            return cls(**options)
        except ValidationError as err:
            field, message = first_problem(err)
            raise ConfigError(f"{kind} backend option {field}: {message}") from err

    def rebased(self, base: Path) -> Self:
        """These options with relative file paths made relative to ``base`` (a config file's folder).

        Nothing to do here; a kind whose options name files overrides it.
        """
        return self


class HttpOptions(BaseModel):
    """Timeouts, retries and concurrency of an HTTP backend (:class:`localeval.backends.http.HttpClient`)."""

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
        return value
    if not isinstance(value, (list, tuple)) or not all(isinstance(url, str) for url in value):
        raise ValueError("expected a URL or a list of URLs")
    urls: list[str] = list(value)
    if not urls:
        raise ValueError("expected a URL or a non-empty list of URLs")
    if len(set(urls)) != len(urls):
        raise ValueError(f"the fleet's URLs must be distinct, got {urls}")
    return urls[0] if len(urls) == 1 else urls


#: A server's URL, or several serving the same model (a fleet: :mod:`localeval.backends.fleet`).
BaseUrls = Annotated[str | list[str], BeforeValidator(_one_or_fleet)]


def base_urls(value: str | list[str]) -> list[str]:
    """The endpoints a ``base_url`` option names, in order."""
    return [value] if isinstance(value, str) else list(value)


def _path_text(value: Any) -> Any:
    return os.fspath(value) if isinstance(value, os.PathLike) else value


#: A model name or a file path; a :class:`~pathlib.Path` is taken as its text.
ModelRef = Annotated[str, BeforeValidator(_path_text)]


def is_model_path(model: str) -> bool:
    """Whether ``model`` names a GGUF file rather than a model of the catalog."""
    return model.endswith(".gguf") or "/" in model or os.sep in model


class LlamaCppOptions(BackendOptions):
    """The in-process llama.cpp backend (llama-cpp-python)."""

    kind: Literal["llama.cpp"] = "llama.cpp"
    model: ModelRef | None = Field(
        None, description="A model from `localeval models list` or a GGUF file's path; None: the default model."
    )
    n_threads: int = Field(1, ge=1, description="CPU threads for prompt reading and generation.")
    n_ctx: int = Field(4096, ge=256, description="Context window in tokens.")
    n_batch: int = Field(
        64,
        ge=8,
        description=(
            "Prompt tokens per forward-pass batch. Prompts are read in batches aligned to "
            "multiples of this, and only whole aligned batches of a shared prefix are reused, "
            "so a score never depends on what was read before it."
        ),
    )
    max_items: int = Field(DEFAULT_MAX_ITEMS, ge=1, description="maxItems for unbounded arrays.")
    top_logprobs: int | None = Field(
        None, ge=1,
        description=(
            "Count only the k most likely tokens at each position, as a server that lists k "
            "alternatives does (to compare with one); None: the whole vocabulary, exact."
        ),
    )

    def rebased(self, base: Path) -> Self:
        """A relative model path made relative to ``base``; a model name stays a name."""
        model = self.model
        if model is None or not is_model_path(model) or Path(model).is_absolute():
            return self
        return self.model_copy(update={"model": os.path.normpath(base / model)})


class OllamaOptions(HttpOptions, BackendOptions):
    """Ollama's native API (the HTTP options included)."""

    kind: Literal["ollama"] = "ollama"
    model: str = Field(description="The model's name in Ollama, e.g. qwen2.5:7b.")
    base_url: BaseUrls = Field(OLLAMA_HOST, description="Ollama's host, or a list of hosts (a fleet).")
    num_ctx: int | None = Field(None, ge=256, description="Context window; the model's default when None.")
    top_logprobs: int = Field(20, ge=1, le=20, description="Alternatives per position (Ollama allows 0-20).")
    max_items: int = Field(DEFAULT_MAX_ITEMS, ge=1, description="maxItems for unbounded arrays.")


class OpenAICompatOptions(HttpOptions, BackendOptions):
    """Any OpenAI-compatible server (the HTTP options included)."""

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
        None, description="completion prefill: 'chatml' or the model's Jinja template file; None: the server's."
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="Server-specific fields added to every generation request."
    )
    reuse_score_prompt: bool = Field(
        False,
        description="llama.cpp's llama-server: a whole-answer score's continuation requests send cache_prompt "
        "true, so each reads one token on the prompt the score's first request read, not the whole prompt again.",
    )


#: Where each server listens by default, and what it is known to support.
PRESETS: dict[str, dict[str, Any]] = {
    "lmstudio": {"base_url": "http://localhost:1234/v1", "prefill": "instruction"},
    "vllm": {"base_url": "http://localhost:8000/v1", "prefill": "continue", "structured_output": "json_schema"},
    # cache_prompt off: a reused prompt prefix shifts llama.cpp's logprobs (up to 0.012 in a G-Eval
    # score, measured), so a score would depend on what the server read before. A score's first
    # request reads its prompt from the start; its continuations reuse that prompt (one token each:
    # 8.8 s for 8 scores, against 80 s with every continuation reading the prompt again).
    "llama-server": {"base_url": "http://localhost:8080/v1", "prefill": "continue",
                     "extra_body": {"cache_prompt": False}, "reuse_score_prompt": True},
    # Its server does not continue a final assistant message; the completion prefill gives the
    # in-process scores (0.645161 both on the test case). ChatML is the default model's (SmolLM2)
    # template: another model needs its own chat_template. It serves one request at a time and
    # keeps the last prompt's KV state: requests sent one by one, in the run's prefix order, reuse
    # it; sent four at once, the server picks the order and re-reads shared prefixes. Its sampling
    # defaults (repeat_penalty 1.1, top_k 40, top_p 0.95, min_p 0.05) are set to the in-process
    # backend's: the model's own distribution, unpenalized.
    "llama-cpp-python": {
        "base_url": "http://localhost:8000/v1", "prefill": "completion", "chat_template": "chatml",
        "structured_output": "json_object", "max_concurrency": 1,
        "extra_body": {"repeat_penalty": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0},
    },
    "ollama-openai": {"base_url": "http://localhost:11434/v1", "prefill": "continue"},
}


def _with_default(field: FieldInfo, value: Any) -> FieldInfo:
    """``field`` (its type constraints and description kept) with another default."""
    changed = copy.copy(field)
    changed.default, changed.default_factory = value, None
    return changed


def _preset_options(name: str) -> type[OpenAICompatOptions]:
    base = OpenAICompatOptions.model_fields
    defaults = {key: (base[key].annotation, _with_default(base[key], value)) for key, value in PRESETS[name].items()}
    title = "".join(part.capitalize() for part in name.split("-")) + "Options"
    return create_model(  # type: ignore[call-overload, no-any-return]
        title,
        __base__=OpenAICompatOptions,
        __doc__=f"The {name} preset: the OpenAI-compatible backend with that server's defaults.",
        kind=(Literal[name], name),
        **defaults,
    )


#: Each preset's options model: :class:`OpenAICompatOptions` with the preset's defaults.
PRESET_OPTIONS: dict[str, type[OpenAICompatOptions]] = {name: _preset_options(name) for name in PRESETS}

"""The built-in backend kinds: llama.cpp in this process, Ollama, and OpenAI-compatible servers.

Each factory imports its backend's module when it is called: llama.cpp's
library and httpx are loaded only when a backend that needs them is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from localeval.backends.kind import BackendKind, BuildContext
from localeval.backends.options import (
    PRESET_OPTIONS,
    PRESETS,
    LlamaCppOptions,
    OllamaOptions,
    OpenAICompatOptions,
    base_urls,
)
from localeval.errors import ConfigError

if TYPE_CHECKING:
    from localeval.backends.base import Backend

#: Keyword arguments of make_backend that the HTTP backends take as they are (tests script the server with them).
HTTP_EXTRAS = ("transport", "sleep")


def _llama_cpp(options: LlamaCppOptions, context: BuildContext) -> Backend:
    from localeval.backends.catalog import ModelCatalog
    from localeval.backends.llamacpp import LlamaCppBackend

    spec, path = ModelCatalog(context.paths.home).resolve(options.model)
    return LlamaCppBackend(path, spec, options, context.sha256_memo)


def _ollama(options: OllamaOptions, context: BuildContext, **extras: Any) -> Backend:
    from localeval.backends.ollama import OllamaBackend

    settings = options.model_dump(exclude={"kind", "model", "base_url"})
    return _one_or_fleet(options, lambda url: OllamaBackend(options.model, url, **extras, **settings), "host")


def _openai_compatible(
    options: OpenAICompatOptions, context: BuildContext, *, api_key: str | None = None, **extras: Any
) -> Backend:
    from localeval.backends.openai_compat import OpenAICompatBackend

    settings = options.model_dump(exclude={"kind", "base_url", "model", "api_key_env"})
    if api_key is None:
        api_key = _api_key(options.api_key_env, context)
    return _one_or_fleet(options, lambda url: OpenAICompatBackend(
        url, options.model, api_key=api_key, sha256_memo=context.sha256_memo, **extras, **settings
    ), "base_url")


def _one_or_fleet(options: OllamaOptions | OpenAICompatOptions, open_endpoint: Callable[[str], Backend], address: str) -> Backend:
    """The backend of the one server ``options.base_url`` names, or a fleet of its several.

    ``address`` is the fingerprint setting that holds an endpoint's URL.
    """
    urls = base_urls(options.base_url)
    if len(urls) == 1:
        return open_endpoint(urls[0])
    from localeval.backends.fleet import FleetBackend

    return FleetBackend(urls, open_endpoint, limit=options.max_concurrency, cooldown=options.eject_cooldown,
                        address=address)


def _api_key(variable: str | None, context: BuildContext) -> str | None:
    """The key from the variable the config names; the key itself is never in a config."""
    if variable is None:
        return None
    key = context.environ.get(variable)
    if not key:
        raise ConfigError(f"{context.where}.api_key_env: the environment variable {variable} is not set")
    return key


_SERVERS = {
    "lmstudio": "LM Studio's server",
    "vllm": "vLLM",
    "llama-server": "llama.cpp's llama-server",
    "llama-cpp-python": "llama-cpp-python's server",
    "ollama-openai": "Ollama's OpenAI-compatible API",
}


def _preset(name: str) -> BackendKind:
    return BackendKind(
        name, PRESET_OPTIONS[name], _openai_compatible,
        f"{_SERVERS[name]}: openai-compatible with its defaults ({PRESETS[name]['base_url']})",
        extras=("api_key", *HTTP_EXTRAS),
    )


#: The kinds localeval brings, by name.
BUILTIN_KINDS: Mapping[str, BackendKind] = {
    kind.name: kind
    for kind in (
        BackendKind("llama.cpp", LlamaCppOptions, _llama_cpp, "A GGUF model run in this process (llama-cpp-python)."),
        BackendKind(
            "openai-compatible", OpenAICompatOptions, _openai_compatible,
            "Any server with OpenAI's chat API (/v1/chat/completions).", extras=("api_key", *HTTP_EXTRAS),
        ),
        BackendKind("ollama", OllamaOptions, _ollama, "Ollama's native API (/api/chat).", extras=HTTP_EXTRAS),
        *(_preset(name) for name in PRESETS),
    )
}

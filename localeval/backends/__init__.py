"""Judge backends by name. ``make_backend("ollama", model="qwen2.5:7b")`` builds one.

Each backend module is imported only when a backend of its kind is made: the
in-process one loads a native library, the HTTP ones import httpx, and none of
that may happen at ``import localeval``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from localeval.errors import ConfigError

if TYPE_CHECKING:
    from localeval.backends.base import Backend

#: Presets of the OpenAI-compatible backend (their URLs live in openai_compat.PRESETS).
OPENAI_PRESETS = ("lmstudio", "vllm", "llama-server", "llama-cpp-python", "ollama-openai")
BACKEND_KINDS = ("llama.cpp", "openai-compatible", "ollama", *OPENAI_PRESETS)


def make_backend(kind: str, **options: Any) -> Backend:
    """A backend of ``kind`` (one of :data:`BACKEND_KINDS`) built from keyword options.

    * ``llama.cpp``: ``model_path``, optional ``spec``, ``sha256_memo``, and
      :class:`~localeval.backends.llamacpp.LlamaCppOptions` fields;
    * ``openai-compatible``: ``base_url``, ``model``, ``api_key`` and
      :class:`~localeval.backends.openai_compat.OpenAICompatOptions` fields;
      a preset name gives its default ``base_url`` and settings, which options override;
    * ``ollama``: ``model``, ``host`` and :class:`~localeval.backends.ollama.OllamaOptions` fields.
    """
    if kind == "llama.cpp":
        return _llamacpp(**options)
    if kind == "openai-compatible":
        from localeval.backends.openai_compat import OpenAICompatBackend

        if "base_url" not in options:
            raise ConfigError("the openai-compatible backend needs base_url (or use a preset)")
        return OpenAICompatBackend(**options)
    if kind in OPENAI_PRESETS:
        from localeval.backends.openai_compat import OpenAICompatBackend

        return OpenAICompatBackend.preset(kind, **options)
    if kind == "ollama":
        from localeval.backends.ollama import OllamaBackend

        if "model" not in options:
            raise ConfigError("the ollama backend needs a model name, e.g. model='qwen2.5:7b'")
        return OllamaBackend(**options)
    raise ConfigError(f"unknown backend {kind!r} (known: {', '.join(BACKEND_KINDS)})")


def _llamacpp(
    model_path: str | Path | None = None, spec: Any = None, sha256_memo: Any = None, **options: Any
) -> Backend:
    from pydantic import ValidationError

    from localeval.backends.llamacpp import LlamaCppBackend, LlamaCppOptions
    from localeval.errors import first_problem

    if model_path is None:
        raise ConfigError("the llama.cpp backend needs model_path")
    try:
        settings = LlamaCppOptions(**options)
    except ValidationError as err:
        field, message = first_problem(err)
        raise ConfigError(f"llama.cpp backend option {field}: {message}") from err
    return LlamaCppBackend(Path(model_path), spec, settings, sha256_memo)


__all__ = ["BACKEND_KINDS", "OPENAI_PRESETS", "make_backend"]

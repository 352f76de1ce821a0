"""Judge backends by kind. ``make_backend("ollama", model="qwen2.5:7b")`` builds one.

The kinds are in :mod:`localeval.backends.registry`: the built-in ones and those
installed packages add. Each backend module is imported only when a backend of
its kind is made: the in-process one loads a native library, the HTTP ones
import httpx, and none of that may happen at ``import localeval``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from localeval.errors import ConfigError

if TYPE_CHECKING:
    from localeval.backends.base import Backend
    from localeval.backends.kind import BuildContext


def make_backend(kind: str, *, context: BuildContext | None = None, **options: Any) -> Backend:
    """A backend of ``kind`` built from keyword options: the keys a ``[backend]`` table of
    that kind takes (see ``localeval backends list``), checked as a config file's are.

    ``make_backend("llama.cpp", model="gemma-3-270m", n_threads=4)``,
    ``make_backend("vllm", model="Qwen/Qwen2.5-7B-Instruct", timeout=60)``. The
    HTTP kinds also take ``transport`` and ``sleep`` (an httpx transport, a sleep
    function: for tests), and the OpenAI-compatible ones ``api_key`` (instead of
    ``api_key_env``). ``context`` defaults to this process's environment (where
    pulled models live, API key variables).

    An option the kind does not take, or a bad value, is a :class:`ConfigError` naming it.
    """
    from pydantic import ValidationError

    from localeval.backends.kind import BuildContext
    from localeval.backends.registry import backend_kind
    from localeval.errors import first_problem

    record = backend_kind(kind)
    extras = {key: options.pop(key) for key in record.extras if key in options}
    try:
        settings = record.parse(options)
    except ValidationError as err:
        field, message = first_problem(err)
        raise ConfigError(f"{kind} backend option {field}: {message}") from err
    except ValueError as err:
        raise ConfigError(str(err)) from err
    return record.build(settings, context or BuildContext.from_environ(os.environ), **extras)


def __getattr__(name: str) -> Any:
    # The built-in kinds' names, from the registry that declares them (imported on first use).
    if name == "BACKEND_KINDS":
        from localeval.backends.builtin import BUILTIN_KINDS

        return tuple(BUILTIN_KINDS)
    if name == "OPENAI_PRESETS":
        from localeval.backends.presets import PRESETS

        return tuple(preset.name for preset in PRESETS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BACKEND_KINDS", "OPENAI_PRESETS", "make_backend"]

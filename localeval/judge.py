"""Loading the judge a run configured: any backend kind, behind the cache unless it is off."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack
from typing import Any

from rich.console import Console

from localeval.backends import make_backend
from localeval.backends.base import Backend
from localeval.cache import CachedBackend, open_cache
from localeval.catalog import ModelCatalog
from localeval.config import BackendConfig, CacheConfig
from localeval.errors import ConfigError
from localeval.paths import Paths


def load_judge(
    backend: BackendConfig,
    cache: CacheConfig,
    paths: Paths,
    environ: Mapping[str, str],
    stack: ExitStack,
    status: Console,
) -> Backend:
    """The configured judge, ready; closed (and the cache too) when ``stack`` closes."""
    store = stack.enter_context(open_cache(cache.dir or paths.cache)) if cache.enabled else None
    if backend.kind == "llama.cpp":
        spec, model_path = ModelCatalog(paths.home).resolve(backend.model)
        with status.status(f"loading {spec.name}"):
            judge = make_backend(
                "llama.cpp", model_path=model_path, spec=spec, sha256_memo=store,
                n_threads=backend.n_threads, n_ctx=backend.n_ctx, n_batch=backend.n_batch,
                **backend.options,
            )
    else:
        with status.status(f"connecting to the {backend.kind} backend"):
            judge = make_backend(backend.kind, **_http_options(backend, environ, store))
    stack.callback(judge.close)  # type: ignore[attr-defined]
    return CachedBackend(judge, store) if store is not None else judge


def _http_options(backend: BackendConfig, environ: Mapping[str, str], store: Any) -> dict[str, Any]:
    options: dict[str, Any] = dict(backend.options)
    if backend.model:
        options["model"] = backend.model
    if backend.base_url:
        options["host" if backend.kind == "ollama" else "base_url"] = backend.base_url
    if backend.api_key_env:
        if backend.kind == "ollama":
            raise ConfigError("backend.api_key_env: the ollama backend takes no API key")
        key = environ.get(backend.api_key_env)
        if not key:
            raise ConfigError(f"backend.api_key_env: the environment variable {backend.api_key_env} is not set")
        options["api_key"] = key
    if backend.kind != "ollama" and store is not None:
        options["sha256_memo"] = store
    return options

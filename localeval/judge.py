"""Loading the judges a run configured: any backend kind, behind the cache unless it is off."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack

from rich.console import Console

from localeval.backends.base import Backend
from localeval.backends.cache import CachedBackend, open_cache
from localeval.backends.kind import BuildContext
from localeval.backends.options import BackendOptions
from localeval.backends.registry import backend_kind
from localeval.config import CacheConfig
from localeval.paths import Paths


def load_judge(
    backend: BackendOptions,
    cache: CacheConfig,
    paths: Paths,
    environ: Mapping[str, str],
    stack: ExitStack,
    status: Console,
    *,
    where: str = "backend",
) -> Backend:
    """The judge ``backend`` describes, ready; closed (and the cache too) when ``stack`` closes.

    ``where`` names the config table it came from, in messages (``judges.strict``).
    """
    store = stack.enter_context(open_cache(cache.dir or paths.cache)) if cache.enabled else None
    kind = backend_kind(backend.kind)
    context = BuildContext(environ=environ, paths=paths, sha256_memo=store, where=where)
    model = getattr(backend, "model", None)
    with status.status(f"loading the {kind.name} judge" + (f" {model}" if model else "")):
        judge = kind.build(backend, context)
    stack.callback(judge.close)
    return CachedBackend(judge, store) if store is not None else judge


def load_judges(
    tables: Mapping[str | None, BackendOptions],
    cache: CacheConfig,
    paths: Paths,
    environ: Mapping[str, str],
    stack: ExitStack,
    status: Console,
) -> tuple[Backend | None, dict[str, Backend]]:
    """The default judge (key None; None when absent) and the named ones (``[judges.NAME]``), each
    loaded by :func:`load_judge` and closed when ``stack`` closes."""
    loaded = {
        name: load_judge(table, cache, paths, environ, stack, status, where=_where(name))
        for name, table in tables.items()
    }
    return loaded.pop(None, None), {name: judge for name, judge in loaded.items() if name is not None}


def _where(name: str | None) -> str:
    return "backend" if name is None else f"judges.{name}"

"""The judges of a Python run, behind the cache ``localeval run`` uses.

A judge is given as a backend you made (``make_backend(...)``, your own class), as a model's name
or a ``.gguf`` path (the in-process llama.cpp judge), or as a table of a ``[backend]``'s options
(``{"kind": "ollama", "model": "qwen2.5:7b"}``). The ones given by name or table are built here,
as the CLI builds them (:func:`localeval.judge.load_judge`), and closed when the run ends; a backend
you made stays yours to close. Only the judges some metric asks are loaded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeGuard

from rich.console import Console

from localeval.backends.base import Backend
from localeval.backends.cache import CachedBackend, open_cache
from localeval.backends.options import BackendOptions
from localeval.backends.registry import parse_backend
from localeval.config import CacheConfig
from localeval.errors import ConfigError
from localeval.judge import load_judge
from localeval.metrics.base import Metric
from localeval.paths import Paths

#: A judge as :func:`localeval.evaluate` takes it: a backend, a model (name or .gguf path), or a table.
JudgeSpec = Backend | str | Mapping[str, Any]

#: The cache as :func:`localeval.evaluate` takes it: on (the CLI's folder), off, or a folder.
CacheSpec = bool | str | os.PathLike[str]


def judge_table(spec: str | Mapping[str, Any], where: str) -> BackendOptions:
    """A judge given by model or by table, as its kind's options; a problem is a one-line ``ConfigError``
    beginning with ``where`` (``judge``, ``judges.strict``). Nothing is loaded."""
    table = {"model": spec} if isinstance(spec, str) else dict(spec)
    return parse_backend(table, where)


def cache_config(cache: CacheSpec) -> CacheConfig:
    """``cache=`` as the CLI's cache settings: True is the CLI's folder, a path another one."""
    if isinstance(cache, bool):
        return CacheConfig(enabled=cache)
    if isinstance(cache, str | os.PathLike):
        return CacheConfig(dir=Path(cache))
    raise ConfigError(f"cache: expected True, False or a folder, not {type(cache).__name__}")


def load_judges(
    default: JudgeSpec | None,
    named: Mapping[str, JudgeSpec],
    metrics: Sequence[Metric],
    cache: CacheConfig,
    paths: Paths,
    stack: ExitStack,
    status: Console,
) -> tuple[Backend | None, dict[str, Backend]]:
    """The default judge (None when no metric asks it) and the named ones, each behind the cache
    unless ``cache`` is off; what is built here closes when ``stack`` closes.

    Every judge given by name or table is checked before any is loaded, so a misspelt model is one
    line before a model loads; a judge a metric asks that is not given is a ``ConfigError``; the
    default judge, not given, is the CLI's default (``[backend]`` with no keys).
    """
    asked = {m.judge_name for m in metrics if m.needs_judge}
    for metric in metrics:
        if metric.needs_judge and metric.judge_name is not None and metric.judge_name not in named:
            raise ConfigError(f"metric '{metric.display_name}': judge {metric.judge_name!r} is not given "
                              f"(judges=: {', '.join(sorted(named)) or 'none'})")
    given: dict[str | None, JudgeSpec] = dict(named.items())
    if None in asked or default is not None:
        given[None] = default if default is not None else {}
    tables = {name: judge_table(spec, _where(name)) for name, spec in given.items() if _is_table(spec, name)}
    store = None
    if cache.enabled and len(tables) < len(given):  # a backend given as it is: behind the same store
        store = stack.enter_context(open_cache(cache.dir or paths.cache))
    loaded: dict[str | None, Backend] = {}
    for name, spec in given.items():
        if name not in tables:  # a backend, used as it is
            loaded[name] = _cached(spec, store)  # type: ignore[arg-type]  # not a table: a backend
        elif name in asked:  # a table nobody asks loads nothing, as in `localeval run`
            loaded[name] = load_judge(tables[name], cache, paths, os.environ, stack, status, where=_where(name))
    return loaded.pop(None, None), {name: judge for name, judge in loaded.items() if name is not None}


def _is_table(spec: JudgeSpec, name: str | None) -> TypeGuard[str | Mapping[str, Any]]:
    """Whether ``spec`` names a judge to build (a model or a table) rather than being a backend."""
    if isinstance(spec, str | Mapping):
        return True
    if hasattr(spec, "fingerprint") and hasattr(spec, "generate_json"):
        return False
    raise ConfigError(f"{_where(name)}: expected a backend, a model's name or a table of backend options, "
                      f"not {type(spec).__name__}")


def _cached(judge: Backend, store: Any) -> Backend:
    """A backend given as it is, behind the store (one already behind a cache stays as it is)."""
    if store is None or isinstance(judge, CachedBackend):
        return judge
    return CachedBackend(judge, store)


def _where(name: str | None) -> str:
    return "judge" if name is None else f"judges.{name}"

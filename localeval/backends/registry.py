"""Backend kinds by name: the built-in ones, and those installed packages add through entry points.

A kind is a :class:`BackendKind`: its options model (what a ``[backend]`` table
of that kind may hold) and a factory that builds the backend from validated
options. A package adds a kind by naming a ``BackendKind`` in the entry-point
group ``localeval.backends``; the entry point's name is the kind's name::

    [project.entry-points."localeval.backends"]
    tgi = "my_package.judge:TGI_KIND"

Entry points are looked up when a kind is asked for, never at import, and a
plugin's module is imported only when its kind is used.

A program that embeds localeval adds a kind without packaging, for this process,
with :func:`register_backend` (``localeval.register_backend``)::

    register_backend("tgi", build_tgi, TGIOptions, description="Text Generation Inference")
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from localeval.backends.builtin import BUILTIN_KINDS
from localeval.backends.kind import BackendKind
from localeval.backends.options import BackendOptions
from localeval.errors import ConfigError, first_problem, unknown_name

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from localeval.backends.base import Backend

ENTRY_POINT_GROUP = "localeval.backends"
#: The kind of a ``[backend]`` table that names none.
DEFAULT_KIND = "llama.cpp"


#: Kinds added in this process by :func:`register_backend`, by name: empty until a call adds one.
_REGISTERED: dict[str, BackendKind] = {}
_REGISTERING = threading.Lock()  # two threads registering one name: one of them is refused
_BY_CALL = "register_backend() in this process"


def register_backend(
    kind: str, factory: Callable[..., Backend], options_model: type[BackendOptions], *,
    description: str = "", extras: tuple[str, ...] = (),
) -> BackendKind:
    """Add the backend kind ``kind`` to this process, as the built-in kinds are declared; returns it.

    ``options_model`` is a :class:`BackendOptions` subclass with exactly the keys a
    ``[backend]`` (or ``[judges.NAME]``, ``[target.backend]``) table of this kind takes;
    ``factory(options, context, **extras)`` builds the backend from them (a
    :class:`BuildContext`: the environment, the model folder), importing what is heavy
    inside it. ``description`` is what ``localeval backends list`` shows; ``extras`` names
    the keyword arguments :func:`~localeval.backends.make_backend` passes through as they
    are. From then on ``kind = "NAME"`` in a config, ``make_backend("NAME", ...)`` and
    ``backends list`` know it, in this process only: Ray workers and other processes find
    a kind through an entry point (the module's docstring).

    A name already taken (built in, registered, or an installed package's entry point) is a
    :class:`ConfigError`; a factory that is not callable or a model that is not a
    ``BackendOptions`` subclass is a :class:`TypeError`.
    """

    if not isinstance(kind, str) or not kind or kind != kind.strip():
        raise ValueError(f"a backend kind is a non-empty name without surrounding spaces, not {kind!r}")
    if not callable(factory):
        raise TypeError(f"backend kind {kind!r}: the factory is a {type(factory).__name__}, not a callable")
    if not (isinstance(options_model, type) and issubclass(options_model, BackendOptions)):
        raise TypeError(f"backend kind {kind!r}: its options model must subclass localeval's BackendOptions")
    record = BackendKind(kind, options_model, factory, description, tuple(extras))
    with _REGISTERING:
        owners = (["localeval (built in)"] if kind in BUILTIN_KINDS else []) + (
            [_BY_CALL] if kind in _REGISTERED else []) + [_describe(ep) for ep in _entry_points().get(kind, [])]
        if owners:
            raise ConfigError(f"backend kind {kind!r} is taken: by {' and by '.join(owners)}; register another name")
        _REGISTERED[kind] = record
    return record


def backend_kind(name: str) -> BackendKind:
    """The kind called ``name``: built in, registered, or an installed package's. :class:`ConfigError` otherwise."""

    found = _entry_points().get(name, [])
    builtin = BUILTIN_KINDS.get(name)
    registered = _REGISTERED.get(name)
    owners = (["localeval (built in)"] if builtin else []) + ([_BY_CALL] if registered else []) + [
        _describe(ep) for ep in found]
    if len(owners) > 1:  # e.g. a package installed after the name was registered
        raise ConfigError(f"backend kind {name!r} is taken twice: by {' and by '.join(owners)}")
    known = builtin or registered
    if known is not None:
        return known
    if not found:
        raise ConfigError(unknown_name("backend", name, backend_kinds()))
    return _load(found[0])


def backend_kinds() -> list[str]:
    """The names of every kind: the built-in ones, then registered and installed packages' (sorted)."""

    return [*BUILTIN_KINDS, *sorted((set(_entry_points()) | set(_REGISTERED)) - set(BUILTIN_KINDS))]


def backend_options(table: Mapping[str, Any]) -> BackendOptions:
    """A ``[backend]`` table as its kind's options (``kind`` defaults to llama.cpp).

    Raises what pydantic reports inside a model: ``ValueError`` (the whole
    table is wrong) or ``ValidationError`` (located at the key). This is the
    validator of :data:`localeval.config.BackendConfig`.
    """
    if isinstance(table, BackendOptions):
        return table
    if not isinstance(table, Mapping):
        raise ValueError("expected a table of backend options")
    kind = table.get("kind", DEFAULT_KIND)
    if not isinstance(kind, str):
        raise _error_at("kind", kind, "expected the name of a backend kind")
    try:
        record = backend_kind(kind)
    except ConfigError as err:
        raise _error_at("kind", kind, str(err)) from err
    return record.parse({k: v for k, v in table.items() if k != "kind"})


def parse_backend(table: Mapping[str, Any], where: str) -> BackendOptions:
    """:func:`backend_options` with problems as one-line :class:`ConfigError` s that begin with ``where``."""
    try:
        return backend_options(table)
    except ValidationError as err:
        key, message = first_problem(err)
        raise ConfigError(f"{where}.{key}: {message}") from err
    except ValueError as err:
        raise ConfigError(f"{where}: {err}") from err


def _error_at(key: str, value: Any, message: str) -> ValidationError:
    return ValidationError.from_exception_data(
        "backend", [{"type": "value_error", "loc": (key,), "input": value, "ctx": {"error": message}}]
    )


# -- entry points ------------------------------------------------------------------------


def _entry_points() -> dict[str, list[EntryPoint]]:
    # Discovery reads every installed distribution's metadata: do it once per import path.
    return _discover(tuple(sys.path))


@functools.lru_cache(maxsize=4)
def _discover(path: tuple[str, ...]) -> dict[str, list[EntryPoint]]:
    from importlib.metadata import entry_points

    found: dict[str, list[EntryPoint]] = {}
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(entry_point.name, []).append(entry_point)
    return found


def _describe(entry_point: EntryPoint) -> str:
    dist = entry_point.dist
    owner = f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"
    return f"entry point '{entry_point.name} = {entry_point.value}' of {owner}"


def _load(entry_point: EntryPoint) -> BackendKind:
    where = _describe(entry_point)
    try:
        kind = entry_point.load()
    except Exception as err:  # the plugin's module failed to import: say how
        raise ConfigError(f"{where}: {type(err).__name__}: {err}") from err
    if not isinstance(kind, BackendKind):
        raise ConfigError(f"{where}: gives a {type(kind).__name__}, not a localeval BackendKind")
    if kind.name != entry_point.name:
        raise ConfigError(f"{where}: gives the kind {kind.name!r}; the names must agree")
    if not (isinstance(kind.options, type) and issubclass(kind.options, BackendOptions)):
        raise ConfigError(f"{where}: its options model is not a subclass of localeval's BackendOptions")
    return kind

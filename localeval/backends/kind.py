"""What a backend kind is: its options model and its factory, and what a factory may use.

Kept apart from the registry (``registry.py``) so the built-in kinds (``builtin.py``)
and the registry that lists them import this module, and not each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localeval.backends.options import BackendOptions
from localeval.errors import did_you_mean
from localeval.paths import Paths

if TYPE_CHECKING:
    from localeval.backends.base import Backend


@dataclass(frozen=True)
class BuildContext:
    """What a factory may use besides its options: the surroundings, never part of a config."""

    #: Where API keys are read from (an option such as ``api_key_env`` names the variable).
    environ: Mapping[str, str]
    #: Where pulled models live (``paths.home``).
    paths: Paths
    #: The cache's store: a model file's sha256 is computed once, not at every load.
    sha256_memo: MutableMapping[str, str] | None = None
    #: The config table the options came from, for messages ("backend.api_key_env: ...").
    where: str = "backend"

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> BuildContext:
        """The context of a process whose environment is ``environ``: its model folder, its API keys."""
        return cls(environ=environ, paths=Paths.from_environ(environ))


@dataclass(frozen=True)
class BackendKind:
    """One kind of judge backend.

    ``options`` is a :class:`BackendOptions` subclass with exactly the keys a
    ``[backend]`` table of this kind may hold. ``factory(options, context,
    **extras)`` builds the backend; ``extras`` names the keyword arguments
    :func:`make_backend` passes it as they are: Python objects no config file
    holds (an API key, an httpx transport).
    """

    name: str
    options: type[BackendOptions]
    factory: Callable[..., Backend]
    description: str
    extras: tuple[str, ...] = ()

    def parse(self, table: Mapping[str, Any]) -> BackendOptions:
        """A table of options (its ``kind`` left out) validated by this kind's model.

        An option this kind does not take is a ``ValueError`` naming it; a bad
        value is pydantic's ``ValidationError``, located at the option.
        """
        values = _flattened(table, self.options)
        for key in values:
            if key == "kind" or key not in self.options.model_fields:
                guess = did_you_mean(key, [f for f in self.options.model_fields if f != "kind"])
                raise ValueError(f"option {key!r} does not apply to the {self.name} backend{f' ({guess})' if guess else ''}")
        return self.options.model_validate({**values, "kind": self.name})

    def build(self, options: BackendOptions, context: BuildContext, **extras: Any) -> Backend:
        """The backend ``options`` describe."""
        return self.factory(options, context, **extras)


def _flattened(table: Mapping[str, Any], model: type[BackendOptions]) -> dict[str, Any]:
    """``table`` with its ``options`` sub-table (the older place of most options) merged into it."""
    values = dict(table)
    nested = values.pop("options", None) if "options" not in model.model_fields else None
    if nested is None:
        return values
    if not isinstance(nested, Mapping):
        raise ValueError("options: expected a table of options")
    for key in nested:
        if key in values:
            raise ValueError(f"option {key!r} is given twice: in the table and in its options")
    return {**values, **nested}

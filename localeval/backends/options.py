"""The base of every backend kind's options: what a ``[backend]`` table may hold.

Each kind's options model *is* its config table (``kind`` included), and the
backend reads its settings from it. The built-in kinds declare theirs beside
their backend (``LlamaCppOptions`` in :mod:`localeval.backends.llamacpp`, the
HTTP options every server takes in :mod:`localeval.backends.http`, the preset
servers in :mod:`localeval.backends.presets`); a plugin's kind subclasses
:class:`BackendOptions` the same way. This module needs only pydantic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localeval.errors import ConfigError, first_problem


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

"""Where localeval keeps pulled models and its cache. Read from the environment by the CLI only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Paths:
    home: Path  #: pulled models and the model registry
    cache: Path  #: the judge-call cache

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Paths:
        """``LOCALEVAL_HOME`` and ``LOCALEVAL_CACHE_DIR``, else the XDG folders."""
        user = Path(environ.get("HOME") or Path.home())
        data = Path(environ.get("XDG_DATA_HOME") or user / ".local" / "share")
        cache = Path(environ.get("XDG_CACHE_HOME") or user / ".cache")
        return cls(
            home=Path(environ.get("LOCALEVAL_HOME") or data / "localeval"),
            cache=Path(environ.get("LOCALEVAL_CACHE_DIR") or cache / "localeval"),
        )

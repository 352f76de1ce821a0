"""Where localeval keeps pulled models, its cache and its runs. Read from the environment by the CLI only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Paths:
    home: Path  #: pulled models and the model registry
    cache: Path  #: the judge-call cache
    runs_dir: Path | None = None  #: runs' journals and reports; None: ``<home>/runs``
    checks_dir: Path | None = None  #: judges' checks; None: ``<home>/judge-checks``

    @property
    def runs(self) -> Path:
        """Where runs keep their journal and reports unless ``--run-dir`` says otherwise."""
        return self.runs_dir or self.home / "runs"

    @property
    def judge_checks(self) -> Path:
        """Where ``localeval check-judge`` keeps each judge's check, one file per fingerprint."""
        return self.checks_dir or self.home / "judge-checks"

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Paths:
        """``LOCALEVAL_HOME``, ``LOCALEVAL_CACHE_DIR``, ``LOCALEVAL_RUNS_DIR`` and ``LOCALEVAL_CHECKS_DIR``
        (a team's shared folder of judge checks, say), else the XDG folders."""
        user = Path(environ.get("HOME") or Path.home())
        data = Path(environ.get("XDG_DATA_HOME") or user / ".local" / "share")
        cache = Path(environ.get("XDG_CACHE_HOME") or user / ".cache")
        return cls(
            home=Path(environ.get("LOCALEVAL_HOME") or data / "localeval"),
            cache=Path(environ.get("LOCALEVAL_CACHE_DIR") or cache / "localeval"),
            runs_dir=Path(environ["LOCALEVAL_RUNS_DIR"]) if environ.get("LOCALEVAL_RUNS_DIR") else None,
            checks_dir=Path(environ["LOCALEVAL_CHECKS_DIR"]) if environ.get("LOCALEVAL_CHECKS_DIR") else None,
        )

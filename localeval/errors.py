"""Typed errors. Each one says where the problem is, so the CLI can print one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError


class LocalevalError(Exception):
    """Base of every error localeval raises on purpose."""


class InputError(LocalevalError):
    """The user's input (a file, an option, a config) is wrong. The CLI exits with 2."""


class DatasetError(InputError):
    """A dataset file cannot be read, or one of its records is invalid.

    The message names the file, and where known the line and the field.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.detail = message
        super().__init__(self._format())

    def _format(self) -> str:
        where = self.path or "<dataset>"
        if self.line is not None:
            where += f":{self.line}"
        if self.field is not None:
            return f"{where}: field '{self.field}': {self.detail}"
        return f"{where}: {self.detail}"


class ConfigError(InputError):
    """A config file or a metric's options are invalid."""


class UnknownMetric(ConfigError):
    """No metric is registered under that name."""


class ModelNotFound(InputError):
    """The model name is not in the manifest or registry, or its file is absent."""


class PromptError(LocalevalError):
    """A prompt template is missing or uses a variable that was not given."""


class BackendError(LocalevalError):
    """A judge backend failed to answer a request."""


class BackendUnavailable(BackendError):
    """The backend cannot be reached or loaded at all."""


class SchemaViolation(BackendError):
    """The backend's reply does not parse as JSON or does not match the schema."""


class TruncatedOutput(BackendError):
    """Generation stopped before the reply was complete (token limit or context full)."""


class CandidateError(BackendError):
    """The candidates of a distribution request cannot be scored as asked."""


class MetricInputError(LocalevalError):
    """A test case lacks a field the metric needs, or is not the kind of case the metric judges.

    ``problem`` completes "metric 'NAME' ..." in the one-line error a run gives
    before any judge call, where the file, line and field are named. By default
    both say the field is missing (``absent``: the case has no value, None) or
    empty (an empty string or list), for the two need different fixes.
    """

    def __init__(
        self,
        metric: str,
        field: str,
        message: str | None = None,
        *,
        problem: str | None = None,
        absent: bool = False,
    ) -> None:
        state = "missing" if absent else "empty"
        self.metric = metric
        self.field = field
        self.problem = problem or f"needs it, and it is {state}"
        super().__init__(message or f"metric '{metric}' needs field '{field}', which is {state}")


class ScoreError(LocalevalError):
    """A metric computed something that is not a score in [0, 1]."""


class PartFailed(LocalevalError):
    """A part of a composite metric could not score; ``details`` keeps what every part gave."""

    def __init__(self, message: str, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.details = details


def first_problem(error: ValidationError) -> tuple[str, str]:
    """Pydantic's first problem as (dotted location, message), for one-line errors."""
    first = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"])
    return where, first["msg"].removeprefix("Value error, ")

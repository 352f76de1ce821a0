"""Typed errors. Each one says where the problem is, so the CLI can print one line."""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError


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


def unknown_name(what: str, name: str, known: Iterable[str]) -> str:
    """The one wording of every misspelt name: ``unknown metric 'exact_mach' (did you mean
    'exact_match'?; known: bleu, exact_match, ...)``; without a close match, only what is known.

    ``known`` in the order to show it (sorted, or the order the user reads elsewhere).
    """
    return f"unknown {what} {name!r} ({known_names(name, known)})"


def known_names(name: str, known: Iterable[str]) -> str:
    """``did you mean 'exact_match'?; known: bleu, exact_match, ...``: what :func:`unknown_name` puts
    in parentheses, for a message worded otherwise (a dataset's field names its file and line first)."""
    names = list(dict.fromkeys(known))
    guess = did_you_mean(name, names)
    return f"{guess + '; ' if guess else ''}known: {', '.join(names) or 'none'}"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``did you mean 'exact_match'?`` (or 'a' or 'b'), for the names of ``known`` close to ``name`` (or,
    none being close, that begin with it: 'smollm' for 'smollm2-135m-instruct'); "" for none."""
    names = list(known)
    close = difflib.get_close_matches(name, names, n=3) or [
        known_name for known_name in names if len(name) >= 3 and known_name.startswith(name)][:3]
    return f"did you mean {' or '.join(repr(match) for match in close)}?" if close else ""


def unknown_key(error: ValidationError, model: type[BaseModel], what: str = "key") -> tuple[str, str] | None:
    """Pydantic's first problem as (dotted location of its table, message) when it is a key ``model``
    does not take (``extra="forbid"``), with the keys it takes there; None for any other problem
    (:func:`first_problem` says it).

    ``dataset.pth`` in a run config is ``("dataset", "unknown key 'pth' (did you mean 'path'?; known: ...)")``.
    """
    first = error.errors(include_url=False)[0]
    if first["type"] != "extra_forbidden" or not first["loc"]:
        return None
    *table, key = first["loc"]
    keys = model_keys(model, table)
    if keys is None:
        return None
    return ".".join(str(part) for part in table), unknown_name(what, str(key), keys)


def model_keys(model: type[BaseModel], location: Sequence[int | str] = ()) -> list[str] | None:
    """The keys the table at ``location`` inside ``model`` takes (a field's alias where it has one),
    in the model's order; None when that is no pydantic model (a dict of anything, a custom validator)."""
    current: Any = model
    for part in location:
        current = _unwrapped(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            fields = current.model_fields
            name = part if part in fields else next((n for n, f in fields.items() if f.alias == part), None)
            if name is None:
                return None
            current = fields[str(name)].annotation
        elif get_origin(current) in (list, tuple, dict) and get_args(current):
            # list[X] and tuple[X, ...] hold X at an index, dict[str, X] at a key
            current = get_args(current)[1 if get_origin(current) is dict else 0]
        else:
            return None
    current = _unwrapped(current)
    if not (isinstance(current, type) and issubclass(current, BaseModel)):
        return None
    return [field.alias or name for name, field in current.model_fields.items() if not field.exclude]


def _unwrapped(annotation: Any) -> Any:
    """``Annotated[X, ...]`` and ``X | None`` as ``X``; anything else as it is."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            members = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation

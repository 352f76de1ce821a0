"""User-defined metrics from a plain function: ``@metric("name")``.

A function of the test case (and of ``judge``, if it declares that parameter)
becomes a :class:`~localeval.metrics.base.Metric` class. Its other parameters,
each with a default, become the metric's options, validated by pydantic from
their annotations, so the config file can set them. It returns a score in
[0, 1], a ``(score, reason)`` pair, a ``(score, reason, details)`` triple, or a
:class:`Verdict`. The metric is registered under its name, so ``localeval run``
and config files know it once its module is imported (``plugins = [...]`` in the
config, or ``--plugin``)::

    @metric("word_limit", required=("actual_output",))
    def word_limit(case: TestCase, max_words: int = 50) -> tuple[float, str]:
        words = len(case.actual_output.split())
        return (1.0 if words <= max_words else max_words / words), f"{words} words"

Judge calls made through ``judge`` go through the run's cache like any built-in
metric's. Anything the function raises becomes that case's error result.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from pydantic import Field, create_model

from localeval.backends.base import Backend
from localeval.data.case import CASE_FIELDS, TestCase
from localeval.errors import ScoreError
from localeval.metrics.base import Metric, Verdict
from localeval.metrics.registry import register_metric

ScoreFunction = Callable[..., Any]
RESERVED = ("name", "threshold")


class FunctionMetric(Metric):
    """Base of the classes ``@metric`` makes; ``function`` is the user's."""

    function: ClassVar[Any]  #: the user's function, as a staticmethod
    option_names: ClassVar[tuple[str, ...]] = ()
    fields_required: ClassVar[tuple[str, ...]] = ()

    def required_fields(self) -> tuple[str, ...]:
        return self.fields_required

    def verdict(self, case: TestCase, judge: Backend | None) -> Verdict:
        options = {name: getattr(self, name) for name in self.option_names}
        if self.needs_judge:
            options["judge"] = judge
        return as_verdict(self.display_name, type(self).function(case, **options))


def metric(
    kind: str | None = None,
    *,
    required: Sequence[str] = ("actual_output",),
    threshold: float = 0.5,
    lower_is_better: bool = False,
    register: bool = True,
) -> Callable[[ScoreFunction], type[FunctionMetric]]:
    """Turn a scoring function into a metric class named ``kind`` (default: the function's name).

    ``required``: the test-case fields that must be non-empty (checked before any
    judge call). ``threshold``: the default pass mark. ``register``: make the kind
    known to ``build_metric``, the CLI and config files.
    """
    unknown = [f for f in required if f not in CASE_FIELDS]
    if unknown:
        raise TypeError(f"required: {unknown[0]!r} is not a test-case field (fields: {', '.join(CASE_FIELDS)})")

    def make(function: ScoreFunction) -> type[FunctionMetric]:
        name = kind or function.__name__
        options = _options(function)
        cls = create_model(  # type: ignore[call-overload]
            _class_name(name),
            __base__=FunctionMetric,
            __module__=function.__module__,
            __doc__=inspect.getdoc(function),
            threshold=(float, Field(threshold, ge=0.0, le=1.0)),
            **options,
        )
        cls.kind = name
        cls.function = staticmethod(function)
        cls.option_names = tuple(options)
        cls.fields_required = tuple(required)
        cls.needs_judge = "judge" in inspect.signature(function).parameters
        cls.lower_is_better = lower_is_better
        if register:
            register_metric(cls)
        return typing.cast(type[FunctionMetric], cls)

    return make


def _options(function: ScoreFunction) -> dict[str, tuple[Any, Any]]:
    """The function's keyword options as pydantic field definitions: (annotation, default)."""
    parameters = list(inspect.signature(function).parameters.values())
    if not parameters:
        raise TypeError(f"{function.__name__}: a metric function takes the test case first")
    hints = typing.get_type_hints(function)
    options = {}
    for parameter in parameters[1:]:
        if parameter.name == "judge":
            continue
        if parameter.name in RESERVED:
            raise TypeError(f"{function.__name__}: {parameter.name!r} is every metric's option; rename it")
        if parameter.default is inspect.Parameter.empty:
            raise TypeError(f"{function.__name__}: option {parameter.name!r} needs a default value")
        options[parameter.name] = (hints.get(parameter.name, Any), parameter.default)
    return options


def as_verdict(metric: str, value: Any) -> Verdict:
    """What a metric function returned, as a Verdict; ScoreError for anything else."""
    if isinstance(value, Verdict):
        return value
    if isinstance(value, tuple) and len(value) in (2, 3) and isinstance(value[1], str):
        details = value[2] if len(value) == 3 else {}
        if not isinstance(details, dict):
            raise ScoreError(f"metric '{metric}' returned details of type {type(details).__name__}; use a dict")
        return Verdict(score=value[0], reason=value[1], details=details)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Verdict(score=float(value), reason="")
    raise ScoreError(
        f"metric '{metric}' returned {type(value).__name__}; return a score, (score, reason), "
        "(score, reason, details) or a Verdict"
    )


def _class_name(kind: str) -> str:
    return "".join(part.capitalize() for part in kind.replace("-", "_").split("_") if part) or "Custom"

"""Metric kinds by name: ``register_metric`` adds one, ``build_metric`` turns config into a metric.

The built-in kinds are registered by ``localeval.metrics`` (its ``__init__``) the way a
plugin registers its own, so a metric that builds others (``composite``) imports this
module, not the package that lists it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from localeval.data.case import ConversationalTestCase
from localeval.errors import ConfigError, UnknownMetric, first_problem, unknown_key, unknown_name
from localeval.metrics.base import Metric
from localeval.metrics.presets import PRESETS, preset_options

_REGISTRY: dict[str, type[Metric]] = {}


def register_metric(cls: type[Metric]) -> type[Metric]:
    """Make a metric class available by its ``kind`` in the CLI and config files.

    Usable as a class decorator. A kind already taken by another class is an
    error (registering the same class again, as a re-imported module does, is not).
    """
    taken = _REGISTRY.get(cls.kind)
    if taken is not None and _identity(taken) != _identity(cls):
        raise ConfigError(f"metric kind {cls.kind!r} is taken by {_identity(taken)}; choose another name")
    _REGISTRY[cls.kind] = cls
    return cls


def _identity(cls: type[Metric]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def metric_class(kind: str) -> type[Metric] | None:
    """The class a kind (or a preset, 'geval:coherence') builds; None when unknown (``build_metric`` says so)."""
    return _REGISTRY.get(kind.partition(":")[0])


def metric_names() -> list[str]:
    """Every name ``build_metric`` takes: registered kinds and G-Eval presets ('geval:coherence')."""
    return sorted(_REGISTRY) + [f"geval:{name}" for name in sorted(PRESETS)]


def build_metric(
    kind: str, options: dict[str, Any] | None = None, where: str = "", folder: Path | None = None
) -> Metric:
    """A metric of a registered kind, or a preset; errors name ``where`` (e.g. 'eval.toml: metrics[2]').

    ``options`` override a preset's: ``build_metric("geval:coherence", {"scoring": "top"})``.
    ``folder`` is the one relative paths in them are relative to (the config file's), for a
    metric that reads a file while it is built (``json_correctness``'s ``schema_file``): it
    is the validation context's ``"base"``. Paths a metric reads later (prompt files) are
    rebased by the config (:func:`localeval.config.rebased_paths`).
    """
    prefix = f"{where}: " if where else ""
    base, colon, preset = kind.partition(":")
    preset_defaults = (preset_options(preset) if base == "geval" else None) if colon else {}
    cls = _REGISTRY.get(base)
    if cls is None or preset_defaults is None:
        raise UnknownMetric(f"{prefix}{unknown_name('metric', kind, metric_names())}")
    try:
        return cls.model_validate({**preset_defaults, **(options or {})}, context={"base": folder})
    except ValidationError as err:
        field, message = unknown_key(err, cls, "option") or first_problem(err)
        raise ConfigError(f"{prefix}{kind}{'.' + field if field else ''}: {message}") from err


@dataclass(frozen=True)
class MetricKind:
    """What a name :func:`build_metric` takes asks of a case and of a run, before any option is given:
    what ``localeval metrics`` lists and docs/metrics.md's table shows."""

    name: str
    #: The case fields it reads with its default options (a conversation's ``turns`` first); None when
    #: only its options say (a composite reads what its parts read, a DAG what its nodes read).
    reads: tuple[str, ...] | None
    #: Whether it asks a judge; None when its options decide (a composite asks one if a part does).
    needs_judge: bool | None
    threshold: float
    lower_is_better: bool


def metric_kinds() -> list[MetricKind]:
    """Every name :func:`build_metric` takes, plugins' included, described (:func:`describe_metric`)."""
    return [describe_metric(name) for name in metric_names()]


def describe_metric(name: str) -> MetricKind:
    """What the metric ``name`` (a kind, or a preset: 'geval:coherence') reads, asks and passes at."""
    base, colon, _ = name.partition(":")
    cls = _REGISTRY.get(base)
    if cls is None or colon:
        defaults = build_metric(name)  # a preset is a whole metric; an unknown name is refused here
    else:
        # Its defaults without validation: a kind whose options have no default (G-Eval's criteria,
        # a composite's parts) is still described, from what its options' defaults say.
        defaults = cls.model_construct()
    try:
        reads: tuple[str, ...] | None = defaults.required_fields()
    except AttributeError:  # it reads what an option without a default says (a composite's parts)
        reads = None
    if reads is not None and defaults.case_type is ConversationalTestCase:
        reads = ("turns", *reads)
    needs_judge = defaults.needs_judge if isinstance(type(defaults).needs_judge, bool) else None
    return MetricKind(name, reads, needs_judge, defaults.threshold, defaults.lower_is_better)

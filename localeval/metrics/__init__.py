"""Metrics by name. ``build_metric("geval", {...})`` turns config into a metric."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from localeval.errors import ConfigError, UnknownMetric, first_problem
from localeval.metrics.agent import ArgumentCorrectness, TaskCompletion, ToolCorrectness
from localeval.metrics.arena import Arena
from localeval.metrics.base import Metric, Verdict
from localeval.metrics.composite import Composite
from localeval.metrics.conversational import CONVERSATIONAL_METRICS
from localeval.metrics.custom import metric
from localeval.metrics.dag import DAG
from localeval.metrics.exact_match import ExactMatch
from localeval.metrics.geval import GEval
from localeval.metrics.json_correctness import JsonCorrectness
from localeval.metrics.length import OutputLength
from localeval.metrics.presets import PRESETS, preset_options
from localeval.metrics.prompt_alignment import PromptAlignment
from localeval.metrics.rag import (
    AnswerRelevancy,
    ContextualPrecision,
    ContextualRecall,
    ContextualRelevancy,
    Faithfulness,
    Hallucination,
)
from localeval.metrics.reference import Bleu, Chrf, Rouge
from localeval.metrics.safety import Bias, PiiLeakage, Toxicity
from localeval.metrics.summarization import Summarization

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


for _builtin in (Arena, Composite, DAG, ExactMatch, GEval, OutputLength, AnswerRelevancy, Faithfulness, Hallucination,
                 ContextualPrecision, ContextualRecall, ContextualRelevancy, JsonCorrectness, Rouge, Bleu, Chrf,
                 Summarization, Bias, Toxicity, PiiLeakage, PromptAlignment,
                 ToolCorrectness, ArgumentCorrectness, TaskCompletion, *CONVERSATIONAL_METRICS):
    register_metric(_builtin)


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
        raise UnknownMetric(f"{prefix}unknown metric '{kind}' (known: {', '.join(metric_names())})")
    try:
        return cls.model_validate({**preset_defaults, **(options or {})}, context={"base": folder})
    except ValidationError as err:
        field, message = first_problem(err)
        raise ConfigError(f"{prefix}{kind}{'.' + field if field else ''}: {message}") from err


__all__ = [
    "DAG",
    "Arena",
    "AnswerRelevancy",
    "ArgumentCorrectness",
    "Bias",
    "Bleu",
    "Chrf",
    "Composite",
    "ContextualPrecision",
    "ContextualRecall",
    "ContextualRelevancy",
    "ExactMatch",
    "Faithfulness",
    "GEval",
    "Hallucination",
    "JsonCorrectness",
    "Metric",
    "TaskCompletion",
    "ToolCorrectness",
    "PiiLeakage",
    "PromptAlignment",
    "Rouge",
    "Summarization",
    "Toxicity",
    "Verdict",
    "build_metric",
    "metric",
    "metric_names",
    "register_metric",
]

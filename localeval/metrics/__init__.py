"""Metrics by name. ``build_metric("geval", {...})`` turns config into a metric."""

from __future__ import annotations

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
from localeval.metrics.registry import build_metric, metric_names, register_metric
from localeval.metrics.safety import Bias, PiiLeakage, Toxicity
from localeval.metrics.summarization import Summarization

for _builtin in (Arena, Composite, DAG, ExactMatch, GEval, OutputLength, AnswerRelevancy, Faithfulness, Hallucination,
                 ContextualPrecision, ContextualRecall, ContextualRelevancy, JsonCorrectness, Rouge, Bleu, Chrf,
                 Summarization, Bias, Toxicity, PiiLeakage, PromptAlignment,
                 ToolCorrectness, ArgumentCorrectness, TaskCompletion, *CONVERSATIONAL_METRICS):
    register_metric(_builtin)


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

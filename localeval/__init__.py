"""localeval: evaluate LLM outputs with judges that run on local models.

Importing this package reads no environment variable, creates no file, starts
no thread and loads no model. Its names are imported on first use, so that
``import localeval`` (and the pytest plugin, loaded in every pytest session of
a venv that has localeval) costs next to nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localeval.api.evaluation import aevaluate, evaluate
    from localeval.api.runs import runs
    from localeval.backends import make_backend
    from localeval.backends.base import (
        Backend,
        Capabilities,
        DistributionReply,
        DistributionRequest,
        Fingerprint,
        JsonReply,
        JsonRequest,
        Message,
    )
    from localeval.backends.cache import CachedBackend, open_cache
    from localeval.backends.catalog import ModelCatalog, ModelSpec
    from localeval.backends.kind import BackendKind, BuildContext
    from localeval.backends.llamacpp import LlamaCppBackend, LlamaCppOptions
    from localeval.backends.options import BackendOptions
    from localeval.backends.registry import register_backend
    from localeval.data.case import ConversationalTestCase, Golden, TestCase, ToolCall, Turn
    from localeval.data.dataset import Dataset
    from localeval.data.results import CaseResult, MetricResult, RunReport
    from localeval.distribution import CandidateDistribution
    from localeval.errors import (
        BackendError,
        BackendUnavailable,
        ConfigError,
        DatasetError,
        LocalevalError,
        SchemaViolation,
    )
    from localeval.metrics import (
        DAG,
        AnswerRelevancy,
        Arena,
        Bias,
        Bleu,
        Chrf,
        Composite,
        ContextualPrecision,
        ContextualRecall,
        ContextualRelevancy,
        ExactMatch,
        Faithfulness,
        GEval,
        Hallucination,
        JsonCorrectness,
        Metric,
        PiiLeakage,
        PromptAlignment,
        Rouge,
        Summarization,
        Toxicity,
        Verdict,
        build_metric,
        metric,
        register_metric,
    )
    from localeval.metrics.conversational import (
        ConversationalGEval,
        ConversationCompleteness,
        KnowledgeRetention,
        RoleAdherence,
        TurnRelevancy,
    )
    from localeval.metrics.length import OutputLength
    from localeval.reports.formats import write_reports
    from localeval.run.events import Events, Interrupted, MetricFinished, MetricStarted, RunFinished, RunStarted
    from localeval.run.runner import RunInterrupted, RunOptions

#: Each public name and the module that defines it.
_EXPORTS: dict[str, str] = {
    "AnswerRelevancy": "localeval.metrics",
    "Arena": "localeval.metrics",
    "Backend": "localeval.backends.base",
    "Bias": "localeval.metrics",
    "Bleu": "localeval.metrics",
    "Chrf": "localeval.metrics",
    "BackendKind": "localeval.backends.kind",
    "BackendOptions": "localeval.backends.options",
    "BackendError": "localeval.errors",
    "BackendUnavailable": "localeval.errors",
    "BuildContext": "localeval.backends.kind",
    "CachedBackend": "localeval.backends.cache",
    "CandidateDistribution": "localeval.distribution",
    "Capabilities": "localeval.backends.base",
    "CaseResult": "localeval.data.results",
    "Composite": "localeval.metrics",
    "ConfigError": "localeval.errors",
    "ContextualPrecision": "localeval.metrics",
    "ConversationCompleteness": "localeval.metrics.conversational",
    "ConversationalGEval": "localeval.metrics.conversational",
    "ConversationalTestCase": "localeval.data.case",
    "ContextualRecall": "localeval.metrics",
    "ContextualRelevancy": "localeval.metrics",
    "DAG": "localeval.metrics",
    "Dataset": "localeval.data.dataset",
    "DatasetError": "localeval.errors",
    "DistributionReply": "localeval.backends.base",
    "DistributionRequest": "localeval.backends.base",
    "Events": "localeval.run.events",
    "ExactMatch": "localeval.metrics",
    "Faithfulness": "localeval.metrics",
    "Fingerprint": "localeval.backends.base",
    "GEval": "localeval.metrics",
    "Golden": "localeval.data.case",
    "Hallucination": "localeval.metrics",
    "Interrupted": "localeval.run.events",
    "JsonCorrectness": "localeval.metrics",
    "JsonReply": "localeval.backends.base",
    "KnowledgeRetention": "localeval.metrics.conversational",
    "JsonRequest": "localeval.backends.base",
    "LlamaCppBackend": "localeval.backends.llamacpp",
    "LlamaCppOptions": "localeval.backends.llamacpp",
    "LocalevalError": "localeval.errors",
    "Message": "localeval.backends.base",
    "Metric": "localeval.metrics",
    "MetricFinished": "localeval.run.events",
    "MetricResult": "localeval.data.results",
    "MetricStarted": "localeval.run.events",
    "ModelCatalog": "localeval.backends.catalog",
    "ModelSpec": "localeval.backends.catalog",
    "OutputLength": "localeval.metrics.length",
    "PiiLeakage": "localeval.metrics",
    "PromptAlignment": "localeval.metrics",
    "Rouge": "localeval.metrics",
    "RoleAdherence": "localeval.metrics.conversational",
    "RunFinished": "localeval.run.events",
    "RunInterrupted": "localeval.run.runner",
    "RunOptions": "localeval.run.runner",
    "RunReport": "localeval.data.results",
    "RunStarted": "localeval.run.events",
    "SchemaViolation": "localeval.errors",
    "Summarization": "localeval.metrics",
    "TestCase": "localeval.data.case",
    "ToolCall": "localeval.data.case",
    "Toxicity": "localeval.metrics",
    "Turn": "localeval.data.case",
    "TurnRelevancy": "localeval.metrics.conversational",
    "Verdict": "localeval.metrics",
    "build_metric": "localeval.metrics",
    "aevaluate": "localeval.api.evaluation",
    "evaluate": "localeval.api.evaluation",
    "make_backend": "localeval.backends",
    "metric": "localeval.metrics",
    "open_cache": "localeval.backends.cache",
    "register_backend": "localeval.backends.registry",
    "register_metric": "localeval.metrics",
    "runs": "localeval.api.runs",
    "write_reports": "localeval.reports.formats",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'localeval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

"""localeval: evaluate LLM outputs with judges that run on local models.

Importing this package reads no environment variable, creates no file, starts
no thread and loads no model; the llama.cpp backend is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from localeval.cache import CachedBackend, open_cache
from localeval.case import Golden, TestCase, ToolCall
from localeval.catalog import ModelCatalog, ModelSpec
from localeval.dataset import Dataset
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
    AnswerRelevancy,
    ContextualPrecision,
    ContextualRecall,
    ContextualRelevancy,
    ExactMatch,
    Faithfulness,
    GEval,
    Hallucination,
    Metric,
    Verdict,
    build_metric,
    register_metric,
)
from localeval.results import CaseResult, MetricResult, RunReport
from localeval.runner import evaluate

if TYPE_CHECKING:
    from localeval.backends.llamacpp import LlamaCppBackend, LlamaCppOptions

__all__ = [
    "AnswerRelevancy",
    "Backend",
    "BackendError",
    "BackendUnavailable",
    "CachedBackend",
    "CandidateDistribution",
    "Capabilities",
    "CaseResult",
    "ConfigError",
    "ContextualPrecision",
    "ContextualRecall",
    "ContextualRelevancy",
    "Dataset",
    "DatasetError",
    "DistributionReply",
    "DistributionRequest",
    "ExactMatch",
    "Faithfulness",
    "Fingerprint",
    "GEval",
    "Golden",
    "Hallucination",
    "JsonReply",
    "JsonRequest",
    "LlamaCppBackend",
    "LlamaCppOptions",
    "LocalevalError",
    "Message",
    "Metric",
    "MetricResult",
    "ModelCatalog",
    "ModelSpec",
    "RunReport",
    "SchemaViolation",
    "TestCase",
    "ToolCall",
    "Verdict",
    "build_metric",
    "evaluate",
    "make_backend",
    "open_cache",
    "register_metric",
]


def __getattr__(name: str) -> Any:
    # The llama.cpp backend loads a native library: import it only when asked for.
    if name in ("LlamaCppBackend", "LlamaCppOptions"):
        from localeval.backends import llamacpp

        return getattr(llamacpp, name)
    raise AttributeError(f"module 'localeval' has no attribute {name!r}")

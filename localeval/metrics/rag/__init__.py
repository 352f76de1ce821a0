"""The RAG metrics: answer relevancy, faithfulness, hallucination, and the three contextual ones.

Each judges a case in a few schema-constrained JSON requests (see
:mod:`localeval.metrics.rag.base`) and scores the verdicts with the pure
functions of :mod:`localeval.metrics.rag.scores`.
"""

from __future__ import annotations

from localeval.metrics.rag.answer_relevancy import AnswerRelevancy
from localeval.metrics.rag.base import RagMetric
from localeval.metrics.rag.contextual_precision import ContextualPrecision
from localeval.metrics.rag.contextual_recall import ContextualRecall
from localeval.metrics.rag.contextual_relevancy import ContextualRelevancy
from localeval.metrics.rag.faithfulness import Faithfulness
from localeval.metrics.rag.hallucination import Hallucination

RAG_METRICS = (
    AnswerRelevancy,
    Faithfulness,
    Hallucination,
    ContextualPrecision,
    ContextualRecall,
    ContextualRelevancy,
)

__all__ = [
    "RAG_METRICS",
    "AnswerRelevancy",
    "ContextualPrecision",
    "ContextualRecall",
    "ContextualRelevancy",
    "Faithfulness",
    "Hallucination",
    "RagMetric",
]

"""The conversational metrics: judged over a whole :class:`~localeval.data.case.ConversationalTestCase`.

Their first prompts open with the same transcript block (:mod:`.base`), so the
judge reads a conversation once for all of them.
"""

from __future__ import annotations

from localeval.metrics.conversational.base import ConversationalMetric, transcript
from localeval.metrics.conversational.completeness import ConversationCompleteness
from localeval.metrics.conversational.geval import ConversationalGEval
from localeval.metrics.conversational.knowledge_retention import KnowledgeRetention
from localeval.metrics.conversational.role_adherence import RoleAdherence
from localeval.metrics.conversational.turn_relevancy import TurnRelevancy

CONVERSATIONAL_METRICS = (ConversationalGEval, KnowledgeRetention, RoleAdherence, ConversationCompleteness, TurnRelevancy)

__all__ = [
    "CONVERSATIONAL_METRICS",
    "ConversationCompleteness",
    "ConversationalGEval",
    "ConversationalMetric",
    "KnowledgeRetention",
    "RoleAdherence",
    "TurnRelevancy",
    "transcript",
]

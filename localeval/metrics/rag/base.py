"""What the six RAG metrics share: the base of metrics that judge items one by one.

The extraction and verdict requests, their bounded schemas and the items of an
output are :mod:`localeval.metrics.items`'s, shared with summarization, the
safety metrics and prompt alignment. Strict mode and the reason are the
judged-metric base's (:mod:`localeval.metrics.judged`); a RAG metric's reason
continues the conversation of its verdicts request.
"""

from __future__ import annotations

from localeval.metrics.items import ItemsMetric


class RagMetric(ItemsMetric):
    """Base of the RAG metrics: a judging step that ends with a verdicts request (see
    :class:`~localeval.metrics.judged.JudgedMetric` for strict mode and the reason).

    Subclasses set ``kind``, ``prompt_folder`` and implement ``judge_case``,
    returning the verdicts request as the judgement's ``conversation``.
    """

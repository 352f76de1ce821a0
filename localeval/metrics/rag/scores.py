"""The RAG metrics' arithmetic: verdicts in, a score in [0, 1] out. No I/O.

Every function has a defined value for an empty input, so none divides by
zero. The rule: a score that counts failures (something irrelevant,
unsupported, contradicted or missed) is perfect when there is nothing to
fail; a score that counts what the retriever contributed (useful nodes,
relevant statements) is 0 when it contributed nothing.

=========================  ===========================================  ==============
function                   score                                        empty input
=========================  ===========================================  ==============
relevancy_ratio            (yes + idk) / statements                     1.0
faithfulness_score         (claims - no [- idk]) / claims               1.0
hallucination_score        contradicted / contexts (lower is better)    0.0
weighted_cumulative_...    Σ_k rel_k · (relevant in 1..k / k) / rel     0.0
recall_score               supported / sentences                        1.0
contextual_relevancy_...   relevant / statements                        0.0
=========================  ===========================================  ==============

Each takes the verdicts as written (a choice, or a bool: the choice counted) or weighted (the
judge's probability of each choice, or of the counted one), and counts with
:func:`~localeval.metrics.verdicts.weight`: a count is Σ P(c), the expected count, which is the
number of verdicts when they are read as written (:mod:`localeval.metrics.verdicts`). Contextual
precision puts each node's probability of being useful where the written reading puts 1 or 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from localeval.metrics.verdicts import ItemVerdict, weight

#: A three-way verdict: ``idk`` is "the judge cannot tell".
Ternary = Literal["yes", "no", "idk"]
TERNARY: tuple[str, ...] = ("yes", "no", "idk")


def relevancy_ratio(verdicts: Sequence[ItemVerdict]) -> float:
    """Answer relevancy: the share of statements that are not irrelevant to the input.

    ``yes`` and ``idk`` count as relevant (an ambiguous statement is not held
    against the output). No statements: 1.0, nothing irrelevant was said.
    """
    _check_ternary(verdicts)
    if not verdicts:
        return 1.0
    return sum(1 - weight(v, "no") for v in verdicts) / len(verdicts)


def faithfulness_score(verdicts: Sequence[ItemVerdict], *, idk_is_faithful: bool = True) -> float:
    """Faithfulness: the share of claims the retrieval context does not contradict.

    ``no`` (contradicted) is unfaithful. ``idk`` (the context says nothing about
    the claim) is faithful by default, unfaithful when ``idk_is_faithful`` is
    False. No claims: 1.0, nothing was contradicted.
    """
    _check_ternary(verdicts)
    if not verdicts:
        return 1.0
    unfaithful = ("no",) if idk_is_faithful else ("no", "idk")
    return sum(1 - sum(weight(v, u) for u in unfaithful) for v in verdicts) / len(verdicts)


def hallucination_score(contradicted: Sequence[float]) -> float:
    """Hallucination: the share of context items the output contradicts (each True/False, or its
    probability of being contradicted). Lower is better.

    No context items: 0.0, nothing was contradicted.
    """
    if not contradicted:
        return 0.0
    return sum(contradicted) / len(contradicted)


def weighted_cumulative_precision(relevant: Sequence[float]) -> float:
    """Contextual precision of nodes in rank order: relevant nodes ranked first score higher.

    The mean, over the relevant positions k (1-based), of the precision at k
    (relevant nodes in the first k, divided by k). [yes, yes, no] = 1.0,
    [yes, no, yes] = 5/6, [no, yes, yes] = 7/12, [no, no, yes] = 1/3.
    No relevant node (or no node): 0.0. Weighted, each node is relevant with its
    probability r_k: Σ_k r_k · (r_1 + … + r_k) / k, ÷ Σ_k r_k.
    """
    total = 0.0
    seen: float = 0
    for k, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            seen += is_relevant
            total += is_relevant * (seen / k)
    return total / seen if seen else 0.0


def recall_score(supported: Sequence[float]) -> float:
    """Contextual recall: the share of expected-output sentences the retrieval context supports
    (each True/False, or its probability of being supported).

    No sentences: 1.0, nothing expected was missed.
    """
    if not supported:
        return 1.0
    return sum(supported) / len(supported)


def contextual_relevancy_score(relevant: Sequence[float]) -> float:
    """Contextual relevancy: the share of the retrieval context's statements relevant to the input
    (each True/False, or its probability of being relevant).

    No statements: 0.0, the retrieval context offered nothing relevant.
    """
    if not relevant:
        return 0.0
    return sum(relevant) / len(relevant)


def _check_ternary(verdicts: Sequence[ItemVerdict]) -> None:
    unknown = sorted({v for v in verdicts if isinstance(v, str) and v not in TERNARY})
    if unknown:
        raise ValueError(f"verdicts must be 'yes', 'no' or 'idk', got {unknown}")

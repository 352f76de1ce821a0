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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

#: A three-way verdict: ``idk`` is "the judge cannot tell".
Ternary = Literal["yes", "no", "idk"]
TERNARY: tuple[str, ...] = ("yes", "no", "idk")


def relevancy_ratio(verdicts: Sequence[Ternary]) -> float:
    """Answer relevancy: the share of statements that are not irrelevant to the input.

    ``yes`` and ``idk`` count as relevant (an ambiguous statement is not held
    against the output). No statements: 1.0, nothing irrelevant was said.
    """
    _check_ternary(verdicts)
    if not verdicts:
        return 1.0
    return sum(1 for v in verdicts if v != "no") / len(verdicts)


def faithfulness_score(verdicts: Sequence[Ternary], *, idk_is_faithful: bool = True) -> float:
    """Faithfulness: the share of claims the retrieval context does not contradict.

    ``no`` (contradicted) is unfaithful. ``idk`` (the context says nothing about
    the claim) is faithful by default, unfaithful when ``idk_is_faithful`` is
    False. No claims: 1.0, nothing was contradicted.
    """
    _check_ternary(verdicts)
    if not verdicts:
        return 1.0
    unfaithful = {"no"} if idk_is_faithful else {"no", "idk"}
    return sum(1 for v in verdicts if v not in unfaithful) / len(verdicts)


def hallucination_score(contradicted: Sequence[bool]) -> float:
    """Hallucination: the share of context items the output contradicts. Lower is better.

    No context items: 0.0, nothing was contradicted.
    """
    if not contradicted:
        return 0.0
    return sum(1 for c in contradicted if c) / len(contradicted)


def weighted_cumulative_precision(relevant: Sequence[bool]) -> float:
    """Contextual precision of nodes in rank order: relevant nodes ranked first score higher.

    The mean, over the relevant positions k (1-based), of the precision at k
    (relevant nodes in the first k, divided by k). [yes, yes, no] = 1.0,
    [yes, no, yes] = 5/6, [no, yes, yes] = 7/12, [no, no, yes] = 1/3.
    No relevant node (or no node): 0.0.
    """
    total = 0.0
    seen = 0
    for k, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            seen += 1
            total += seen / k
    return total / seen if seen else 0.0


def recall_score(supported: Sequence[bool]) -> float:
    """Contextual recall: the share of expected-output sentences the retrieval context supports.

    No sentences: 1.0, nothing expected was missed.
    """
    if not supported:
        return 1.0
    return sum(1 for s in supported if s) / len(supported)


def contextual_relevancy_score(relevant: Sequence[bool]) -> float:
    """Contextual relevancy: the share of the retrieval context's statements relevant to the input.

    No statements: 0.0, the retrieval context offered nothing relevant.
    """
    if not relevant:
        return 0.0
    return sum(1 for r in relevant if r) / len(relevant)


def _check_ternary(verdicts: Sequence[str]) -> None:
    unknown = sorted({v for v in verdicts if v not in TERNARY})
    if unknown:
        raise ValueError(f"verdicts must be 'yes', 'no' or 'idk', got {unknown}")

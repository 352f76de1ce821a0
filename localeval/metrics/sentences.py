"""The sentences of a text, split by rules (pysbd): no model, the same every time.

A metric that judges each sentence of an output (faithfulness, answer
relevancy, summarization, pii_leakage, by default) reads the output once and
writes only its verdicts. pysbd's rules know abbreviations ("Mr.", "U.S."), decimals and
quotations, which a split at every full stop gets wrong.
"""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def _segmenter() -> Any:
    import pysbd  # imported here: its rules compile at first use

    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """The non-blank sentences of ``text``, stripped, in order."""
    return [s.strip() for s in _segmenter().segment(text) if s.strip()]

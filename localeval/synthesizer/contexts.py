"""Chunks to contexts: the passages one golden's input is written from.

No embedding model runs offline here (the shipped models are small chat models),
so grouping is honest about what it is:

* ``adjacent`` (default): consecutive chunks of one document — text written
  together is about the same thing;
* ``lexical``: each seed chunk with the chunks (of any document) whose word sets
  overlap it most (Jaccard similarity of their words of three letters or more) —
  a bag-of-words stand-in for semantic similarity, pure and deterministic.

Seeds (and windows) are spread evenly over a document when it has more than
``max_contexts_per_document`` of them, so a long document is not read only at its start.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from localeval.synthesizer.documents import Chunk
from localeval.synthesizer.options import Grouping

_WORD = re.compile(r"[^\W_]{3,}")
T = TypeVar("T")


@dataclass(frozen=True)
class Context:
    """The chunks one set of inputs is written from, in order."""

    chunks: tuple[Chunk, ...]

    @classmethod
    def from_texts(cls, texts: Sequence[str], source: str) -> Context:
        """A context given as text (``source`` names it in the goldens' ``chunk_ids``)."""
        return cls(tuple(Chunk(source, i, text, 0) for i, text in enumerate(texts)))

    @property
    def texts(self) -> list[str]:
        return [chunk.text for chunk in self.chunks]

    @property
    def chunk_ids(self) -> list[str]:
        return [chunk.id for chunk in self.chunks]

    @property
    def sources(self) -> list[str]:
        """The files its chunks come from, each once, in order."""
        return list(dict.fromkeys(chunk.source for chunk in self.chunks))


def group_chunks(documents: Sequence[Sequence[Chunk]], grouping: Grouping, size: int, per_document: int) -> list[Context]:
    """Contexts of ``size`` chunks, at most ``per_document`` from each document's chunks."""
    if grouping == "adjacent":
        return [
            Context(tuple(window))
            for chunks in documents
            for window in spread([chunks[i : i + size] for i in range(0, len(chunks), size)], per_document)
        ]
    everything = [chunk for chunks in documents for chunk in chunks]
    words = {chunk.id: word_set(chunk.text) for chunk in everything}
    contexts = []
    for chunks in documents:
        for seed in spread(list(chunks), per_document):
            others = [c for c in everything if c.id != seed.id]
            # most similar first; on a tie, the earlier chunk (sorted() is stable)
            ranked = sorted(others, key=lambda c: -jaccard(words[seed.id], words[c.id]))
            contexts.append(Context((seed, *ranked[: size - 1])))
    return contexts


def spread(items: Sequence[T], limit: int) -> list[T]:
    """At most ``limit`` of ``items``, evenly spaced, the first always among them."""
    if len(items) <= limit:
        return list(items)
    return [items[i * len(items) // limit] for i in range(limit)]


def word_set(text: str) -> frozenset[str]:
    """The lowercased words of three letters or more."""
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 0 for two empty sets."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0

"""The synthesizer's steps, in order: contexts → inputs → evolutions → quality filter → expected outputs.

Every step asks the judge it is given; through :class:`~localeval.backends.cache.CachedBackend`
each call is cached by the judge's fingerprint and the whole request, so a second
run over the same documents and options makes no model call. A step that fails
for one context or input (the judge erred) is that item's error: it is listed,
and the rest goes on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localeval.backends.base import Backend
from localeval.data.case import Golden
from localeval.errors import BackendError, PromptError
from localeval.metrics.geval import GEval
from localeval.synthesizer.contexts import Context, group_chunks
from localeval.synthesizer.documents import Document, judge_token_counter, read_documents, split_into_chunks
from localeval.synthesizer.filtering import (
    QUALITY_FILTER,
    quality_metric,
    quality_record,
    rejection_reason,
    score_input,
)
from localeval.synthesizer.generation import evolutions_for, evolve, generate_inputs, write_expected_output
from localeval.synthesizer.options import SynthesizerOptions


@dataclass(frozen=True)
class Rejected:
    """An input a filter dropped: what it was, where it came from, which filter dropped it and why.

    :meth:`record` is its line in the rejected file (``localeval synthesize`` writes it
    beside the goldens; :func:`localeval.synthesizer.save_rejected`).
    """

    input: str
    chunk_ids: list[str]
    score: float  #: the quality score on 0-1
    name: str  #: the name its golden would have had
    context: list[str]  #: the texts of the context it was written from
    source_files: list[str]
    evolutions: list[str]
    filter: str  #: the filter that dropped it (``quality``)
    reason: str  #: why, in words
    quality: dict[str, Any]  #: the score as a kept golden's ``metadata.quality`` records it

    def record(self) -> dict[str, Any]:
        """The rejected input as a JSON object: the input, its context and sources, the filter and why."""
        return {
            "name": self.name, "input": self.input, "context": self.context, "source_files": self.source_files,
            "chunk_ids": self.chunk_ids, "evolutions": self.evolutions, "filter": self.filter,
            "reason": self.reason, "quality": self.quality,
        }


@dataclass(frozen=True)
class ContextDone:
    """Progress: one more context is done; the counts are the run's so far."""

    done: int
    total: int
    kept: int
    filtered: int
    errors: int


@dataclass
class Synthesis:
    """What a synthesis produced: the goldens kept, the inputs dropped, the errors, and its cost in time."""

    goldens: list[Golden] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    contexts: int = 0
    tokenizer: str = ""
    duration_s: float = 0.0


Progress = Callable[[ContextDone], None]


class Synthesizer:
    """Writes goldens with ``judge``, as ``options`` say; ``on_progress`` hears of each context done."""

    def __init__(
        self, judge: Backend, options: SynthesizerOptions | None = None, on_progress: Progress | None = None
    ) -> None:
        self.judge = judge
        self.options = options or SynthesizerOptions()
        self.on_progress = on_progress

    def contexts_of(self, documents: Sequence[Document | str | os.PathLike[str]]) -> tuple[list[Context], str]:
        """The contexts of ``documents`` (read first when given as paths), and the tokenizer that cut them."""
        read = [d for d in documents if isinstance(d, Document)]
        paths = [d for d in documents if not isinstance(d, Document)]
        loaded = {d.path: d for d in read + (read_documents(paths) if paths else [])}
        ordered = [d if isinstance(d, Document) else loaded[os.fspath(d)] for d in documents]
        count, tokenizer = judge_token_counter(self.judge)
        o = self.options
        chunks = [split_into_chunks(d, o.chunk_size, o.chunk_overlap, count) for d in ordered]
        return group_chunks(chunks, o.grouping, o.context_size, o.max_contexts_per_document), tokenizer

    def from_documents(self, documents: Sequence[Document | str | os.PathLike[str]]) -> Synthesis:
        """Goldens from documents: read (paths), chunked, grouped into contexts, then :meth:`from_contexts`."""
        contexts, tokenizer = self.contexts_of(documents)
        synthesis = self.from_contexts(contexts)
        synthesis.tokenizer = tokenizer
        return synthesis

    def from_contexts(self, contexts: Sequence[Context | Sequence[str]]) -> Synthesis:
        """Goldens from contexts: each a :class:`Context` or a list of texts (named ``context-N`` in chunk ids)."""
        started = time.perf_counter()
        given = [c if isinstance(c, Context) else Context.from_texts(list(c), f"context-{i}") for i, c in enumerate(contexts)]
        synthesis = Synthesis(contexts=len(given))
        metric = self._quality_metric()
        for number, context in enumerate(given):
            self._context(number, context, metric, synthesis)
            if self.on_progress is not None:
                self.on_progress(ContextDone(number + 1, len(given), len(synthesis.goldens),
                                             len(synthesis.rejected), len(synthesis.errors)))
        synthesis.duration_s = time.perf_counter() - started
        return synthesis

    def _quality_metric(self) -> GEval | None:
        if not self.options.quality_filter:
            return None
        metric = quality_metric(self.options)
        try:
            return metric.prepare(self.judge)  # the evaluation steps, written once
        except (BackendError, PromptError):
            return metric  # each score tries again, and its error is listed

    def _context(self, number: int, context: Context, metric: GEval | None, synthesis: Synthesis) -> None:
        where = f"context {number + 1} ({', '.join(context.chunk_ids)})"
        try:
            inputs = generate_inputs(self.judge, context, self.options)
        except (BackendError, PromptError) as err:
            synthesis.errors.append(f"{where}: inputs: {type(err).__name__}: {err}")
            return
        for index, text in enumerate(inputs):
            try:
                golden = self._golden(number, index, text, context, metric, synthesis)
            except (BackendError, PromptError) as err:
                synthesis.errors.append(f"{where}: input {index + 1}: {type(err).__name__}: {err}")
                continue
            if golden is not None:
                synthesis.goldens.append(golden)

    def _golden(
        self, number: int, index: int, text: str, context: Context, metric: GEval | None, synthesis: Synthesis
    ) -> Golden | None:
        """The golden made from ``text``, or None when the filter drops it (recorded in ``synthesis``)."""
        evolutions = evolutions_for(index, self.options)
        for evolution in evolutions:
            text = evolve(self.judge, text, evolution, context, self.options)
        name = f"{Path(context.chunks[0].source).stem}-{number + 1}.{index + 1}"
        metadata: dict[str, Any] = {"source_files": context.sources, "chunk_ids": context.chunk_ids}
        if evolutions:
            metadata["evolutions"] = list(evolutions)
        if metric is not None:
            result = score_input(metric, self.judge, text, context)
            if result.error is not None:
                raise BackendError(f"quality score: {result.error}")
            if not result.passed:
                synthesis.rejected.append(Rejected(
                    text, context.chunk_ids, float(result.score or 0.0), name, context.texts, context.sources,
                    list(evolutions), QUALITY_FILTER, rejection_reason(result), quality_record(result),
                ))
                return None
            metadata["quality"] = quality_record(result)
        expected = write_expected_output(self.judge, text, context, self.options) if self.options.expected_output else None
        return Golden(input=text, expected_output=expected, context=context.texts, name=name, metadata=metadata)

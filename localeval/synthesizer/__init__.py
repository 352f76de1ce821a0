"""Goldens from documents or contexts, written by a local judge model.

    from localeval.synthesizer import Synthesizer, SynthesizerOptions

    synthesis = Synthesizer(judge, SynthesizerOptions(inputs_per_context=3)).from_documents(["guide.md"])
    save_goldens(synthesis.goldens, "goldens.jsonl")   # loads with Dataset.load

Steps: read and check the documents (:mod:`.documents`), cut them into chunks by
tokens with overlap, group chunks into contexts (:mod:`.contexts`), write inputs
from each context as schema-constrained JSON, evolve them, filter them by a G-Eval
quality score (:mod:`.filtering`), write expected outputs (:mod:`.generation`).
Every judge call goes through the judge given, so a cached judge makes reruns free.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from localeval.case import Golden, TestCase
from localeval.dataset import Dataset
from localeval.synthesizer.contexts import Context
from localeval.synthesizer.documents import Chunk, Document, read_document, read_documents
from localeval.synthesizer.options import Styling, SynthesizerOptions
from localeval.synthesizer.pipeline import ContextDone, Rejected, Synthesis, Synthesizer

__all__ = [
    "Chunk",
    "Context",
    "ContextDone",
    "Document",
    "Rejected",
    "Styling",
    "Synthesis",
    "Synthesizer",
    "SynthesizerOptions",
    "read_document",
    "read_documents",
    "save_goldens",
]


def save_goldens(goldens: Sequence[Golden], path: str | os.PathLike[str]) -> None:
    """Write goldens as a dataset file (JSONL, JSON or CSV by extension), atomically.

    A golden is a test case without ``actual_output``: ``Dataset.load`` reads the file back.
    """
    Dataset.from_cases(TestCase.model_validate(g.model_dump()) for g in goldens).save(path)

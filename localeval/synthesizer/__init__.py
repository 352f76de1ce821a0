"""Goldens from documents or contexts, written by a local judge model.

    from localeval.synthesizer import Synthesizer, SynthesizerOptions

    synthesis = Synthesizer(judge, SynthesizerOptions(inputs_per_context=3)).from_documents(["guide.md"])
    save_goldens(synthesis.goldens, "goldens.jsonl")   # loads with Dataset.load
    save_rejected(synthesis.rejected, rejected_path("goldens.jsonl"))  # goldens.rejected.jsonl

Steps: read and check the documents (:mod:`.documents`), cut them into chunks by
tokens with overlap, group chunks into contexts (:mod:`.contexts`), write inputs
from each context as schema-constrained JSON, evolve them, filter them by a G-Eval
quality score (:mod:`.filtering`), write expected outputs (:mod:`.generation`).
Every judge call goes through the judge given, so a cached judge makes reruns free.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from localeval.data.case import Golden, TestCase
from localeval.data.dataset import Dataset
from localeval.files import write_text_atomically
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
    "rejected_path",
    "save_goldens",
    "save_rejected",
]


def save_goldens(goldens: Sequence[Golden], path: str | os.PathLike[str]) -> None:
    """Write goldens as a dataset file (JSONL, JSON or CSV by extension), atomically.

    A golden is a test case without ``actual_output``: ``Dataset.load`` reads the file back.
    """
    Dataset.from_cases(TestCase.model_validate(g.model_dump()) for g in goldens).save(path)


def rejected_path(goldens: str | os.PathLike[str]) -> Path:
    """Where the inputs a filter dropped are kept: beside the goldens, ``goldens.jsonl`` → ``goldens.rejected.jsonl``."""
    path = Path(goldens)
    return path.with_name(f"{path.stem}.rejected.jsonl")


def save_rejected(rejected: Sequence[Rejected], path: str | os.PathLike[str]) -> None:
    """Write each rejected input's :meth:`~Rejected.record` as a line of JSON, atomically.

    Written even when nothing was rejected (an empty file): a file left by an earlier
    run never stands beside goldens it does not belong to.
    """
    lines = [json.dumps(r.record(), ensure_ascii=False, allow_nan=False) + "\n" for r in rejected]
    write_text_atomically(Path(path), "".join(lines))

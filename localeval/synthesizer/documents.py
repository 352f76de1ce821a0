"""Documents to chunks: read ``.txt``, ``.md`` and ``.pdf`` files, split them by tokens with overlap.

Every document is read and checked before any model is loaded or called: a file
that cannot be read, or holds no text, is one ``DatasetError`` naming it.

Chunks are cut between words, at a sentence's end where one is near. A word's size is counted with its leading white
space, by the judge's own tokenizer where the backend offers one (llama.cpp
in-process: ``count_tokens``), else by :func:`approximate_tokens` — about four
characters per token, the usual rule for English with BPE tokenizers. The sum of
the words' counts is within a few tokens of the whole chunk's count: tokenizers
split words at white space first.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localeval.errors import DatasetError

#: How the synthesizer counts tokens: text -> number of tokens.
TokenCounter = Callable[[str], int]

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
SUFFIXES = (*TEXT_SUFFIXES, ".pdf")
_PIECE = re.compile(r"\s*\S+")


@dataclass(frozen=True)
class Document:
    """A document's text, and the path it was read from (as the user gave it)."""

    path: str
    text: str


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: ``index`` counts from 0 in its document; ``tokens`` is its size."""

    source: str
    index: int
    text: str
    tokens: int

    @property
    def id(self) -> str:
        """``source#index``, as goldens record it."""
        return f"{self.source}#{self.index}"


def read_documents(paths: Iterable[str | os.PathLike[str]]) -> list[Document]:
    """Every document, read and checked; the first problem raises ``DatasetError`` naming the file."""
    documents = [read_document(path) for path in paths]
    if not documents:
        raise DatasetError("no documents given")
    return documents


def read_document(path: str | os.PathLike[str]) -> Document:
    """One ``.txt``, ``.md`` or ``.pdf`` file's text; an unreadable or empty one is a ``DatasetError``."""
    name = os.fspath(path)
    suffix = Path(name).suffix.lower()
    if suffix not in SUFFIXES:
        raise DatasetError(f"cannot read {suffix or 'a file without extension'}: give {', '.join(SUFFIXES)}", path=name)
    text = _pdf_text(name) if suffix == ".pdf" else _plain_text(name)
    if not text.strip():
        what = "no text could be extracted (a scanned PDF?)" if suffix == ".pdf" else "the document is empty"
        raise DatasetError(what, path=name)
    return Document(name, text)


def _plain_text(name: str) -> str:
    try:
        return Path(name).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise DatasetError(f"not UTF-8 text (byte {err.start})", path=name) from err
    except OSError as err:
        raise DatasetError(f"cannot read ({err.strerror})", path=name) from err


def _pdf_text(name: str) -> str:
    try:
        import pypdf  # an optional extra: only PDF users need it
    except ImportError as err:
        raise DatasetError("reading PDF needs pypdf: pip install 'localeval[pdf]'", path=name) from err
    try:
        reader = pypdf.PdfReader(name)
        return "\n\n".join(page.extract_text() or "" for page in reader.pages)
    except OSError as err:
        raise DatasetError(f"cannot read ({err.strerror})", path=name) from err
    except (pypdf.errors.PyPdfError, ValueError, KeyError) as err:  # pypdf's errors on broken files
        raise DatasetError(f"not a readable PDF ({err})", path=name) from err


def approximate_tokens(text: str) -> int:
    """About four characters per token: ⌈len/4⌉ for each word (white space is free)."""
    return sum(math.ceil(len(word) / 4) for word in text.split())


def judge_token_counter(judge: Any) -> tuple[TokenCounter, str]:
    """The judge's own token counter and its name, or the approximation's.

    Looks through the cache's wrapper (``CachedBackend.backend``) for a backend with
    ``count_tokens``; an HTTP judge offers none, so it gets the approximation.
    """
    inner = getattr(judge, "backend", judge)
    count = getattr(inner, "count_tokens", None)
    if callable(count):
        return count, f"{inner.fingerprint.kind} tokenizer of {inner.fingerprint.model}"
    return approximate_tokens, "approximate: 4 characters per token"


def split_into_chunks(document: Document, size: int, overlap: int, count_tokens: TokenCounter) -> list[Chunk]:
    """``document`` cut between words into chunks of at most ``size`` tokens, each sharing up to
    ``overlap`` tokens with the one before it.

    A chunk ends at the last sentence end (a word ending in ``.``, ``!``, ``?`` or ``:``,
    or a blank line after it) that keeps it at least half full, else after the last
    word that fits; a single word longer than ``size`` is a chunk alone. The overlap
    starts at a sentence start when one lies within it, else at a word.
    """
    pieces = _PIECE.findall(document.text)
    counts = [count_tokens(piece) for piece in pieces]
    breaks = {i + 1 for i in range(len(pieces)) if _ends_sentence(pieces, i)}
    chunks: list[Chunk] = []
    start = 0
    while start < len(pieces):
        end, total = start, 0
        while end < len(pieces) and (end == start or total + counts[end] <= size):
            total += counts[end]
            end += 1
        if end < len(pieces):
            fitting = [b for b in breaks if start < b <= end and sum(counts[start:b]) * 2 >= size]
            end = max(fitting, default=end)
        chunks.append(Chunk(document.path, len(chunks), "".join(pieces[start:end]).strip(), sum(counts[start:end])))
        if end == len(pieces):
            break
        start = _overlap_start(counts, breaks, start, end, overlap)
    return chunks


def _ends_sentence(pieces: list[str], i: int) -> bool:
    followed_by_blank_line = i + 1 < len(pieces) and pieces[i + 1].count("\n") >= 2
    return pieces[i].endswith((".", "!", "?", ":")) or followed_by_blank_line


def _overlap_start(counts: list[int], breaks: set[int], start: int, end: int, overlap: int) -> int:
    """Where the chunk after ``[start, end)`` starts: the longest tail within ``overlap`` tokens
    (never the whole chunk), from a sentence start in it if there is one."""
    back, tail = end, 0
    while back - 1 > start and tail + counts[back - 1] <= overlap:
        back -= 1
        tail += counts[back]
    sentence_starts = [b for b in breaks if back <= b < end]
    return min(sentence_starts, default=back)

"""The run journal: every finished (case, metric) result, appended durably as it completes.

One JSON object per line. The first line is the :class:`JournalHeader` (what the
run is: its config, the dataset's hash); each later line is one
:class:`JournalEntry`. A line is written whole, flushed and fsynced before the run
goes on, so ``kill -9`` at any moment loses at most the result being computed.
A process killed in the middle of a write leaves a torn last line: reading ignores
it and the next append overwrites it. Anything else unreadable is an error that
names the line.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import IO, Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from localeval.data.results import MetricResult
from localeval.errors import InputError, first_problem
from localeval.targets.generate import Generation

#: Bump when the journal's lines change shape; older journals are refused, not misread.
JOURNAL_FORMAT = 1


class JournalHeader(BaseModel):
    """What was asked: enough to resume the run from the journal alone."""

    model_config = ConfigDict(frozen=True)

    journal_format: int = JOURNAL_FORMAT
    run_id: str
    created_at: str
    config: dict[str, Any]  #: the run's RunConfig, paths absolute
    config_source: str  #: the config file the metrics' relative paths are relative to
    dataset_sha256: str
    cases: int
    metrics: list[str]


class JournalEntry(BaseModel):
    """One finished result of case ``case`` (its index in the dataset)."""

    case: int
    result: MetricResult


class GenerationEntry(BaseModel):
    """Target ``target``'s output for case ``case`` (a run with targets), or why there is none."""

    case: int
    generation: Generation
    target: str


class Journal:
    """An open journal: the header, ``done`` (the results it held when opened), ``generated`` (the
    target's outputs it held), and ``append`` / ``append_generation``."""

    def __init__(self, path: Path, header: JournalHeader, done: dict[tuple[int, str], MetricResult],
                 stream: IO[bytes], generated: dict[tuple[str, int], Generation] | None = None) -> None:
        self.path = path
        self.header = header
        self.done = done
        self.generated = generated if generated is not None else {}
        self._stream = stream
        self._lock = threading.Lock()

    @classmethod
    def create(cls, path: Path, header: JournalHeader) -> Journal:
        """A new journal at ``path``; refuses to overwrite one."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            stream = path.open("xb")
        except OSError as err:
            if isinstance(err, FileExistsError) and path.exists():  # not a file where the folder goes
                raise InputError(f"{path}: a run journal is already there (resume it with --resume)") from err
            raise InputError(f"{path}: cannot create the run journal ({err.strerror})") from err
        journal = cls(path, header, {}, stream)
        journal._write(header.model_dump_json())
        return journal

    @classmethod
    def open(cls, path: Path) -> Journal:
        """An existing journal, ready to append to after its last whole line."""
        try:
            data = path.read_bytes()
        except OSError as err:
            raise InputError(f"{path}: cannot read the run journal ({err.strerror})") from err
        header, done, generated, whole = _parse(path, data)
        stream = path.open("r+b")
        stream.truncate(whole)  # drop a torn last line
        stream.seek(whole)
        return cls(path, header, done, stream, generated)

    def append(self, case: int, result: MetricResult) -> None:
        """Record a result durably: on disk before this returns."""
        with self._lock:
            self._write(JournalEntry(case=case, result=result).model_dump_json())

    def append_generation(self, target: str, case: int, generation: Generation) -> None:
        """Record a target's output for a case durably: a resumed run does not generate it again."""
        with self._lock:
            self._write(GenerationEntry(case=case, generation=generation, target=target).model_dump_json())
            self.generated[(target, case)] = generation

    def generated_by(self, target: str) -> dict[int, Generation]:
        """The outputs of ``target`` the journal holds, by case."""
        return {case: generation for (name, case), generation in self.generated.items() if name == target}

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, line: str) -> None:
        self._stream.write(line.encode("utf-8") + b"\n")
        self._stream.flush()
        os.fsync(self._stream.fileno())


def _parse(
    path: Path, data: bytes
) -> tuple[JournalHeader, dict[tuple[int, str], MetricResult], dict[tuple[str, int], Generation], int]:
    """The header, the results by (case, metric), the target's outputs by case, and the length of the whole lines."""
    lines = data.split(b"\n")
    torn = lines.pop()  # the text after the last newline: empty unless a write was cut
    whole = len(data) - len(torn)
    if not lines:
        raise InputError(f"{path}: not a run journal (no header line)")
    header = _header(path, lines[0])
    done: dict[tuple[int, str], MetricResult] = {}
    generated: dict[tuple[str, int], Generation] = {}
    for number, line in enumerate(lines[1:], start=2):
        try:
            if line.startswith(b'{"case":') and b'"generation":' in line[:40]:
                output = GenerationEntry.model_validate_json(line)
                generated[(output.target, output.case)] = output.generation
                continue
            entry = JournalEntry.model_validate_json(line)
        except ValidationError as err:
            where, message = first_problem(err)
            raise InputError(f"{path}:{number}: not a journal entry ({where}: {message})") from err
        done[(entry.case, entry.result.metric)] = entry.result
    return header, done, generated, whole


def _header(path: Path, line: bytes) -> JournalHeader:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:1: not a run journal header ({err.msg})") from err
    version = raw.get("journal_format") if isinstance(raw, dict) else None
    if version != JOURNAL_FORMAT:
        raise InputError(f"{path}:1: journal format {version!r} is not {JOURNAL_FORMAT}")
    try:
        return JournalHeader.model_validate(raw)
    except ValidationError as err:
        where, message = first_problem(err)
        raise InputError(f"{path}:1: header field '{where}': {message}") from err

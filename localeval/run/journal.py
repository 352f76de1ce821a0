"""The run journal: every finished (case, metric) result, appended durably as it completes.

One JSON object per line. The first line is the :class:`JournalHeader` (what the
run is: its config, the dataset's hash); each later line is one
:class:`JournalEntry`. A line is written whole, flushed and fsynced before the run
goes on, so ``kill -9`` at any moment loses at most the result being computed.
A process killed in the middle of a write leaves a torn last line: reading ignores
it and the next append overwrites it. Anything else unreadable is an error that
names the line.

A journal holds one result of each (case, metric), and one output of each (target, case),
except that one that errored may be followed by another try (a resumed run judges again
what errored, unless told to keep the errors): the last one counts. Any other repeat is an
error naming both lines. A journal with no whole line (the run was killed, or the disk was
full, before its header was written) is no run: a new one may be created over it.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from localeval.data.results import MetricResult
from localeval.errors import InputError, LocalevalError, first_problem
from localeval.run.journal_config import with_secrets
from localeval.targets.generate import Generation

#: Bump when the journal's lines change shape; older journals are refused, not misread.
JOURNAL_FORMAT = 1

#: The journal's file in a run folder.
JOURNAL_FILE = "journal.jsonl"


class JournalHeader(BaseModel):
    """What was asked: enough to resume the run from the journal alone."""

    model_config = ConfigDict(frozen=True)

    journal_format: int = JOURNAL_FORMAT
    run_id: str
    created_at: str
    config: dict[str, Any]  #: the run's RunConfig, paths absolute, server URLs' secrets masked
    config_source: str  #: the config file the metrics' relative paths are relative to
    dataset_sha256: str
    cases: int
    metrics: list[str]
    name: str | None = None  #: the run's name (absent from journals of before names: None)
    tags: list[str] = []
    config_sha256: str | None = None  #: RunConfig.scoring_sha256 of the run's config
    judges: list[str] | None = None  #: the models of the judges its metrics ask (None: not recorded)


class JournalEntry(BaseModel):
    """One finished result of case ``case`` (its index in the dataset)."""

    case: int
    result: MetricResult


class GenerationEntry(BaseModel):
    """Target ``target``'s output for case ``case`` (a run with targets), or why there is none."""

    case: int
    generation: Generation
    target: str


class JournalWriteError(LocalevalError):
    """The journal could not be written (a full disk): the run cannot go on; what it holds is intact."""

    def __init__(self, path: Path, err: OSError) -> None:
        super().__init__(f"cannot write the run journal {path} ({err.strerror})")
        self.path = path


class Journal:
    """An open journal: the header, ``done`` (the results it held when opened), ``generated`` (the
    target's outputs it held), and ``append`` / ``append_generation``.

    Opened to resume, ``done`` and ``generated`` leave out what errored (``retried`` counts them), so
    that the run tries them again, unless ``keep_errors``.
    """

    def __init__(self, path: Path, header: JournalHeader, done: dict[tuple[int, str], MetricResult],
                 stream: IO[bytes], generated: dict[tuple[str, int], Generation] | None = None,
                 retried: int = 0) -> None:
        self.path = path
        self.header = header
        self.done = done
        self.generated = generated if generated is not None else {}
        self.retried = retried  #: the results and outputs that errored, left out of ``done`` and ``generated``
        self._stream = stream
        self._lock = threading.Lock()

    @classmethod
    def create(cls, path: Path, header: JournalHeader) -> Journal:
        """A new journal at ``path``; refuses to overwrite one (but one with no header: no run)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            stream = path.open("xb", buffering=0)
        except FileExistsError as err:
            if not path.is_file():  # not a file where the folder goes
                raise InputError(f"{path}: cannot create the run journal ({err.strerror})") from err
            if _has_header(path):
                raise InputError(f"{path}: a run journal is already there (resume it with --resume)") from err
            stream = path.open("wb", buffering=0)
        except OSError as err:
            raise InputError(f"{path}: cannot create the run journal ({err.strerror})") from err
        try:
            _hold(stream, path)
        except InputError:
            stream.close()
            raise
        journal = cls(path, header, {}, stream)
        try:
            journal._write(header.model_dump_json())
        except OSError as err:  # a full disk: leave no journal without a header behind
            stream.close()
            path.unlink(missing_ok=True)
            raise InputError(f"{path}: cannot write the run journal ({err.strerror}); nothing was judged") from err
        return journal

    @classmethod
    def open(cls, path: Path, keep_errors: bool = False) -> Journal:
        """An existing journal, ready to append to after its last whole line; ``keep_errors``: what
        errored counts as done (else it is left out of ``done`` and ``generated``, to be tried again)."""
        try:
            stream = path.open("r+b", buffering=0)
        except OSError as err:
            raise InputError(f"{path}: cannot read the run journal ({err.strerror})") from err
        try:
            _hold(stream, path)
            data = stream.read()
            header, done, generated, whole = _parse(path, data)
        except BaseException:
            stream.close()
            raise
        header = _whole_urls(header, path)
        retried = 0
        if not keep_errors:
            retried = sum(1 for r in done.values() if r.errored) + sum(1 for g in generated.values() if g.error)
            done = {key: r for key, r in done.items() if not r.errored}
            generated = {key: g for key, g in generated.items() if g.error is None}
        stream.truncate(whole)  # drop a torn last line
        stream.seek(whole)
        return cls(path, header, done, stream, generated, retried)

    def append(self, case: int, result: MetricResult) -> None:
        """Record a result durably: on disk before this returns. Raises :class:`JournalWriteError`."""
        with self._lock:
            self._durably(JournalEntry(case=case, result=result).model_dump_json())

    def append_generation(self, target: str, case: int, generation: Generation) -> None:
        """Record a target's output for a case durably: a resumed run does not generate it again."""
        with self._lock:
            self._durably(GenerationEntry(case=case, generation=generation, target=target).model_dump_json())
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

    def _durably(self, line: str) -> None:
        try:
            self._write(line)
        except OSError as err:  # what was written before is intact; a torn line is dropped on opening
            raise JournalWriteError(self.path, err) from err

    def _write(self, line: str) -> None:
        data = memoryview(line.encode("utf-8") + b"\n")
        while data:  # unbuffered: nothing is left in a buffer to be written at close, after a failure
            data = data[self._stream.write(data) or 0:]
        os.fsync(self._stream.fileno())


def _hold(stream: IO[bytes], path: Path) -> None:
    """Hold the journal for this run alone until ``stream`` closes: a second process that opens it (two
    ``--resume`` of one run) is refused instead of appending the same results twice. Where the system
    has no ``flock`` (Windows), nothing is held."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return
    try:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise InputError(f"{path}: another localeval is running this run now; resume it once that one ends") from None


@dataclass(frozen=True)
class JournalContents:
    """What a journal holds, read without opening it to append (a run may be writing it): the header
    as recorded (its server URLs' secrets masked), every result and every target's output, the last try
    of each."""

    header: JournalHeader
    results: dict[tuple[int, str], MetricResult]
    generated: dict[tuple[str, int], Generation]


def read_journal(path: Path) -> JournalContents:
    """The journal at ``path``, read only: a torn last line is left out (and left there). Raises
    :class:`InputError` naming the line of a journal that cannot be read, as :meth:`Journal.open` does."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"{path}: cannot read the run journal ({err.strerror})") from err
    header, done, generated, _ = _parse(path, data)
    return JournalContents(header, done, generated)


def recorded_header(path: Path) -> JournalHeader:
    """The header of the journal at ``path``, read only (a run may be writing it: nothing is held or cut),
    with its server URLs whole, as :meth:`Journal.open` gives it."""
    return _whole_urls(read_journal(path).header, path)


def _whole_urls(header: JournalHeader, path: Path) -> JournalHeader:
    # The config's server URLs are recorded with their secrets masked: the config file has them.
    return header.model_copy(update={"config": with_secrets(header.config, header.config_source, path)})


def _parse(
    path: Path, data: bytes
) -> tuple[JournalHeader, dict[tuple[int, str], MetricResult], dict[tuple[str, int], Generation], int]:
    """The header, the results by (case, metric), the target's outputs by case, and the length of the whole lines."""
    lines = data.split(b"\n")
    torn = lines.pop()  # the text after the last newline: empty unless a write was cut
    whole = len(data) - len(torn)
    if not lines:
        raise InputError(f"{path}: the run stopped before it recorded anything: nothing to resume; "
                         "run it again (its folder is used again with --run-dir)")
    header = _header(path, lines[0])
    done: dict[tuple[int, str], MetricResult] = {}
    generated: dict[tuple[str, int], Generation] = {}
    seen: dict[tuple[int | str, ...], int] = {}  # the line of each result and output
    for number, line in enumerate(lines[1:], start=2):
        try:
            if line.startswith(b'{"case":') and b'"generation":' in line[:40]:
                output = GenerationEntry.model_validate_json(line)
                made = (output.target, output.case)
                _once(path, number, seen, made, made in generated and generated[made].error is None,
                      f"target '{output.target}''s output for case {output.case + 1}")
                generated[made] = output.generation
                continue
            entry = JournalEntry.model_validate_json(line)
        except ValidationError as err:
            where, message = first_problem(err)
            raise InputError(f"{path}:{number}: not a journal entry ({where}: {message})") from err
        key = (entry.case, entry.result.metric)
        _once(path, number, seen, key, key in done and not done[key].errored,
              f"case {entry.case + 1}, metric '{entry.result.metric}'")
        done[key] = entry.result
    return header, done, generated, whole


def _once(path: Path, number: int, seen: dict[tuple[int | str, ...], int], key: tuple[int | str, ...],
          repeated: bool, what: str) -> None:
    """Refuse line ``number`` when ``repeated`` (what it records is there already, and did not error)."""
    if repeated:
        raise InputError(f"{path}:{number}: {what} is already at line {seen[key]}, which did not error; "
                         "a journal holds one of each (the journal was edited, or two runs wrote it): "
                         "start a new run")
    seen[key] = number


def _has_header(path: Path) -> bool:
    """Whether the file at ``path`` has a whole first line (a journal's header, or something else)."""
    with path.open("rb") as file:
        return file.readline().endswith(b"\n")


def _header(path: Path, line: bytes) -> JournalHeader:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:1: not a run journal header ({err.msg})") from err
    except (UnicodeDecodeError, RecursionError) as err:  # not UTF-8; nested past Python's limit
        raise InputError(f"{path}:1: not a run journal header ({type(err).__name__})") from err
    version = raw.get("journal_format") if isinstance(raw, dict) else None
    if version != JOURNAL_FORMAT:
        raise InputError(f"{path}:1: journal format {version!r} is not {JOURNAL_FORMAT}")
    try:
        return JournalHeader.model_validate(raw)
    except ValidationError as err:
        where, message = first_problem(err)
        raise InputError(f"{path}:1: header field '{where}': {message}") from err

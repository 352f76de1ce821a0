"""Datasets of test cases: load them from JSONL, JSON or CSV, and save them back.

A dataset holds single-turn test cases or conversations (one per record, JSONL
or JSON; see :mod:`localeval.data.conversations`), never both: the first record
decides.

Every case remembers where it came from ("data.jsonl:3"), and every problem is a
``DatasetError`` naming the file, the line and the field, so a user can fix a
large file without bisecting it. Reading raw records is :mod:`localeval.data.records`,
turning them into cases :mod:`localeval.data.case_reader`, writing them back
:mod:`localeval.data.record_writer`.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from localeval.data.case import Case, ConversationalTestCase
from localeval.data.case_reader import CaseReader, UnknownFields
from localeval.data.conversations import holds_conversations
from localeval.data.record_writer import records_text, write_dataset_file
from localeval.data.records import (
    Format,
    csv_table,
    file_format,
    json_records,
    jsonl_records,
    no_records_error,
    read_records,
    read_text,
)
from localeval.errors import DatasetError

__all__ = ["Dataset", "DatasetSource", "Format", "UnknownFields", "no_records_error", "read_records"]


class DatasetSource(BaseModel):
    """The file a dataset was read from, as reports record it: two runs over different files differ here."""

    model_config = ConfigDict(frozen=True)

    path: str
    sha256: str


@dataclass
class Dataset:
    """Test cases, and for each the place it came from (``locations[i]`` is "file:line").

    ``source`` is the file the cases were loaded from (None for cases built in code).
    """

    cases: list[Case]
    locations: list[str]
    source: DatasetSource | None = None

    def __post_init__(self) -> None:
        if len(self.cases) != len(self.locations):
            raise ValueError("cases and locations must have the same length")

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    @property
    def conversational(self) -> bool:
        """Whether the cases are conversations (a dataset holds one kind)."""
        return bool(self.cases) and isinstance(self.cases[0], ConversationalTestCase)

    def require_cases(self, format: Format | None = None) -> None:
        """Raise ``DatasetError`` naming the file when there is no case.

        An empty file is a valid dataset (``load`` reads it, ``save`` writes it), but
        a run over it judges nothing and would report that every metric passed.
        ``format`` is the one the file was loaded with, to say why it is empty.
        """
        if self.cases:
            return
        if self.source is None:
            raise DatasetError("no test cases")
        raise no_records_error(self.source.path, format)

    @classmethod
    def from_cases(cls, cases: Iterable[Case]) -> Dataset:
        """A dataset of cases built in code; their locations are "<memory>:1", "<memory>:2", ..."""
        cases = list(cases)
        if len({type(case) for case in cases}) > 1:
            raise DatasetError("a dataset holds single-turn test cases or conversations, not both")
        return cls(cases, [f"<memory>:{i}" for i in range(1, len(cases) + 1)])

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        format: Format | None = None,
        fields: Mapping[str, str] | None = None,
        list_delimiter: str = "|",
        unknown_fields: UnknownFields = "error",
    ) -> Dataset:
        """Read and validate a whole dataset file; the first invalid record raises ``DatasetError``.

        ``format`` is "jsonl" (one object per line), "json" (a list of objects) or
        "csv" (a header row, then one case per row); by default it follows the
        extension. ``fields`` renames the file's keys or columns to case fields,
        e.g. ``{"query": "input"}``. A key that is not a field is an error, goes into
        ``metadata`` or is dropped, as ``unknown_fields`` says. In CSV, list fields
        are split on ``list_delimiter``, ``metadata`` is a JSON object, and an empty
        cell means "no value". In JSON, list fields must be lists. A JSONL or JSON file
        whose first record has ``turns`` holds conversations
        (:class:`~localeval.data.case.ConversationalTestCase`), one per record.
        """
        name = os.fspath(path)  # as the user spelled it, for messages and locations
        fmt = file_format(name, format)
        reader = CaseReader(name, fmt, dict(fields or {}), list_delimiter, unknown_fields)
        reader.check_options()
        text, sha256 = read_text(name)
        if fmt == "csv":
            header, records = csv_table(text, reader.path)
            reader.check_columns(header)
        else:
            records = json_records(text, reader.path) if fmt == "json" else jsonl_records(text, reader.path)
            first = next(records, None)
            if first is not None:
                reader = dataclasses.replace(reader, conversational=holds_conversations(first[1], reader.fields))
                records = itertools.chain([first], records)
        cases: list[Case] = []
        locations = []
        for line, record in records:
            cases.append(reader.case(record, line))
            locations.append(f"{reader.path}:{line}")
        return cls(cases, locations, DatasetSource(path=name, sha256=sha256))

    def save(
        self,
        path: str | os.PathLike[str],
        *,
        format: Format | None = None,
        list_delimiter: str = "|",
    ) -> None:
        """Write the cases as JSONL, JSON or CSV (by default, by extension), atomically.

        ``load`` gives back equal cases. Where CSV cannot hold a case exactly (a tool
        with arguments, an item containing the delimiter), this raises instead.
        """
        name = os.fspath(path)
        fmt = file_format(name, format)
        if fmt == "csv" and self.conversational:
            raise DatasetError("CSV cannot hold conversations; save as JSONL or JSON", path=name)
        records = [case.model_dump(exclude_none=True, mode="json") for case in self.cases]
        write_dataset_file(name, records_text(records, fmt, name, list_delimiter))

"""Writing test cases back as JSONL, JSON or CSV text, and to a file atomically.

``Dataset.load`` must give back equal cases, so where CSV cannot hold a case
exactly (an empty string, a tool with arguments, an item containing the list
delimiter) writing raises a ``DatasetError`` instead of losing it. The rules
mirror :meth:`localeval.data.case_reader.CaseReader.cell`.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from localeval.data.case import CASE_FIELDS
from localeval.data.records import Format, Record
from localeval.errors import DatasetError
from localeval.files import write_text_atomically

__all__ = ["records_text", "write_dataset_file"]


def records_text(records: list[Record], format: Format, path: str, delimiter: str) -> str:
    """The text of a file of ``format`` holding ``records`` (cases dumped as JSON, nones excluded).

    ``path`` is named in errors; ``delimiter`` joins the items of CSV list cells.
    """
    if format == "csv":
        return _csv_text(records, path, delimiter)
    records = [_without_defaults(record) for record in records]
    if format == "json":
        return json.dumps(records, indent=2, ensure_ascii=False) + "\n"
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def write_dataset_file(name: str, text: str) -> None:
    """Write ``text`` atomically; a failure is a ``DatasetError`` naming the file."""
    path = Path(name)
    if path.is_dir():
        raise DatasetError("is a directory", path=name)
    try:
        write_text_atomically(path, text)
    except OSError as exc:
        raise DatasetError(f"cannot write: {exc.strerror}", path=name) from exc


def _without_defaults(record: Record) -> Record:
    """Empty ``tags`` and ``metadata`` go without saying; it keeps files short."""
    return {key: value for key, value in record.items() if key not in ("tags", "metadata") or value}


def _csv_text(records: list[Record], path: str, delimiter: str) -> str:
    if not delimiter:
        raise DatasetError("list_delimiter must not be empty", path=path)
    for number, record in enumerate(records, start=1):
        for name, value in record.items():
            loss = _csv_loss(name, value, delimiter)
            if loss:
                message = f"case {number}: CSV cannot hold {loss} losslessly; save as JSONL"
                raise DatasetError(message, path=path, field=name)
    columns = [name for name in CASE_FIELDS if name == "input" or any(r.get(name) for r in records)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        writer.writerow([_csv_cell(record.get(name), delimiter) for name in columns])
    return out.getvalue()


def _csv_loss(name: str, value: Any, delimiter: str) -> str | None:
    """What of this value a CSV file would lose (see ``CaseReader.cell``), or None."""
    if value == "":
        return "an empty string (it loads as no value)"
    if value == [] and name != "tags":
        return "an empty list (it loads as no value)"
    if name == "metadata" or not isinstance(value, list):
        return None
    for item in value:
        if isinstance(item, dict):  # a tool call: CSV holds its name only
            if any(v is not None for k, v in item.items() if k != "name"):
                return f"tool '{item['name']}', which has more than a name,"
            item = item["name"]
        if delimiter in item:
            return f"the item {item!r}, which contains the list delimiter {delimiter!r},"
        if not item or item != item.strip():
            return f"the item {item!r} (items are stripped on load)"
    return None


def _csv_cell(value: Any, delimiter: str) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False) if value else ""
    if isinstance(value, list):
        return delimiter.join(item["name"] if isinstance(item, dict) else item for item in value)
    return str(value)

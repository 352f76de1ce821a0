"""Per-case JSON Lines: one line per case, ``{index, name, location, inputs, results}``.

The shape is :class:`~localeval.data.results.CaseResult`'s, so a line reads back as
one; tools that stream or grep a large run use this instead of report.json.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from localeval.data.results import CaseResult
from localeval.errors import InputError, first_problem


def cases_jsonl(cases: Iterable[CaseResult]) -> str:
    """The cases as JSON Lines text, one compact object per line, UTF-8 kept as is."""
    return "".join(
        json.dumps(case.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n"
        for case in cases
    )


def read_cases(path: Path) -> list[CaseResult]:
    """The cases of a JSON Lines file written by :func:`write_cases`; blank lines are skipped.

    Raises :class:`InputError` naming the file, the line and the field at fault.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"{path}: cannot read cases ({err.strerror})") from err
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not UTF-8 text ({err.reason})") from err
    cases = []
    # split("\n"), not splitlines(): a string may hold U+2028, which JSON leaves unescaped.
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            cases.append(_case(path, number, line))
    return cases


def _case(path: Path, number: int, line: str) -> CaseResult:
    try:
        return CaseResult.model_validate_json(line)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        if first["type"] == "json_invalid":
            raise InputError(f"{path}:{number}: not JSON ({first['msg']})") from err
        where, message = first_problem(err)
        raise InputError(f"{path}:{number}: field '{where}': {message}") from err

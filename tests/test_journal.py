"""The run journal: durable appends, a torn last line, and clear errors for anything else."""

from __future__ import annotations

import json

import pytest

from localeval.data.results import MetricResult
from localeval.errors import InputError
from localeval.run.journal import JOURNAL_FORMAT, Journal, JournalHeader

HEADER = JournalHeader(run_id="abc", created_at="2026-11-22T00:00:00+00:00", config={"k": 1},
                       config_source="/x/eval.toml", dataset_sha256="f" * 64, cases=3, metrics=["m"])


def result(score: float) -> MetricResult:
    return MetricResult(metric="m", kind="probe", score=score, passed=score >= 0.5, threshold=0.5, reason="r")


def test_a_journal_reads_back_what_was_appended(tmp_path) -> None:
    path = tmp_path / "run" / "journal.jsonl"
    with Journal.create(path, HEADER) as journal:
        journal.append(0, result(0.25))
        journal.append(2, result(0.75))
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["journal_format"] == JOURNAL_FORMAT
    with Journal.open(path) as again:
        assert again.header == HEADER
        assert again.done == {(0, "m"): result(0.25), (2, "m"): result(0.75)}


def test_create_refuses_to_overwrite_a_run(tmp_path) -> None:
    path = tmp_path / "journal.jsonl"
    Journal.create(path, HEADER).close()
    with pytest.raises(InputError, match="a run journal is already there"):
        Journal.create(path, HEADER)


def test_a_torn_last_line_is_dropped_and_overwritten(tmp_path) -> None:
    path = tmp_path / "journal.jsonl"
    with Journal.create(path, HEADER) as journal:
        journal.append(0, result(0.25))
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"case": 1, "result": {"metric": "m", "ki')  # killed mid-write
    with Journal.open(path) as journal:
        assert list(journal.done) == [(0, "m")]
        journal.append(1, result(1.0))
    assert path.read_bytes().startswith(whole)
    with Journal.open(path) as journal:
        assert sorted(journal.done) == [(0, "m"), (1, "m")]


def test_a_damaged_line_in_the_middle_is_an_error_naming_it(tmp_path) -> None:
    path = tmp_path / "journal.jsonl"
    with Journal.create(path, HEADER) as journal:
        journal.append(0, result(0.25))
    path.write_text(path.read_text() + "not json\n" + '{"case": 2, "result": {}}\n')
    with pytest.raises(InputError, match=r"journal\.jsonl:3: not a journal entry"):
        Journal.open(path)


@pytest.mark.parametrize(("first", "message"), [
    ("", "no header line"),
    ("{", "1: not a run journal header"),
    ('{"journal_format": 99}', "journal format 99 is not 1"),
    ('{"journal_format": 1}', "header field 'run_id'"),
])
def test_a_bad_header_is_refused(tmp_path, first: str, message: str) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text(first + "\n" if first else "")
    with pytest.raises(InputError, match=message):
        Journal.open(path)

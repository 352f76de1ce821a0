"""The run journal: durable appends, a torn last line, and clear errors for anything else."""

from __future__ import annotations

import errno
import json

import pytest

from localeval.data.results import MetricResult
from localeval.errors import InputError
from localeval.run.journal import JOURNAL_FORMAT, Journal, JournalHeader, JournalWriteError
from localeval.targets.generate import Generation

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


def test_a_run_being_written_cannot_be_resumed_beside_it_until_it_ends(tmp_path) -> None:
    path = tmp_path / "journal.jsonl"
    with Journal.create(path, HEADER) as running:  # a run under way (held as another process would hold it)
        running.append(0, result(0.25))
        with pytest.raises(InputError, match="another localeval is running this run now"):
            Journal.open(path)
    with Journal.open(path) as resumed:  # it ended: a resume holds it in turn
        resumed.append(1, result(0.75))
        with pytest.raises(InputError, match="another localeval is running this run now"):
            Journal.open(path)
    with Journal.open(path) as again:
        assert set(again.done) == {(0, "m"), (1, "m")}


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
    ("", "the run stopped before it recorded anything: nothing to resume"),
    ("{", "1: not a run journal header"),
    ('{"journal_format": 99}', "journal format 99 is not 1"),
    ('{"journal_format": 1}', "header field 'run_id'"),
])
def test_a_bad_header_is_refused(tmp_path, first: str, message: str) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text(first + "\n" if first else "")
    with pytest.raises(InputError, match=message):
        Journal.open(path)


def errored() -> MetricResult:
    return MetricResult(metric="m", kind="probe", threshold=0.5, error="the server is down")


def test_what_errored_is_left_out_to_be_tried_again_unless_kept(tmp_path) -> None:
    path = tmp_path / "journal.jsonl"
    with Journal.create(path, HEADER) as journal:
        journal.append(0, result(0.25))
        journal.append(1, errored())
        journal.append_generation("t", 2, Generation(error="timed out"))
    with Journal.open(path) as again:
        assert (list(again.done), again.generated, again.retried) == ([(0, "m")], {}, 2)
        again.append(1, errored())  # still down
        again.append(1, result(1.0))
        again.append_generation("t", 2, Generation(output="4"))
    with Journal.open(path) as again:
        assert again.done == {(0, "m"): result(0.25), (1, "m"): result(1.0)} and again.retried == 0
        assert again.generated == {("t", 2): Generation(output="4")}
    kept = tmp_path / "kept.jsonl"
    with Journal.create(kept, HEADER) as journal:
        journal.append(1, errored())
    with Journal.open(kept, keep_errors=True) as again:
        assert (again.done, again.retried) == ({(1, "m"): errored()}, 0)


@pytest.mark.parametrize(("entries", "message"), [
    ([(0, result(0.25)), (0, result(0.75))], r"journal\.jsonl:3: case 1, metric 'm' is already at line 2, which did not error"),
    ([(0, errored()), (0, result(0.75)), (0, result(0.5))], r"journal\.jsonl:4: case 1, metric 'm' is already at line 3"),
])
def test_a_result_given_twice_is_an_error_naming_both_lines(tmp_path, entries, message: str) -> None:
    path = tmp_path / "journal.jsonl"
    with Journal.create(path, HEADER) as journal:
        for case, entry in entries:
            journal.append(case, entry)
    with pytest.raises(InputError, match=message):
        Journal.open(path)


@pytest.mark.parametrize("content", [b"", b'{"journal_format": 1, "ru'])
def test_a_journal_without_its_header_is_no_run_and_is_created_over(tmp_path, content: bytes) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError, match="the run stopped before it recorded anything: nothing to resume"):
        Journal.open(path)
    Journal.create(path, HEADER).close()
    with Journal.open(path) as journal:
        assert journal.header == HEADER


def full(self: Journal, line: str) -> None:
    """``Journal._write`` on a full disk."""
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_header_that_cannot_be_written_leaves_no_journal(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Journal, "_write", full)
    path = tmp_path / "run" / "journal.jsonl"
    with pytest.raises(InputError, match=r"cannot write the run journal \(No space left on device\); nothing was judged"):
        Journal.create(path, HEADER)
    assert not path.exists()


def test_a_result_that_cannot_be_written_is_a_journal_write_error(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "journal.jsonl"
    with Journal.create(path, HEADER) as journal:
        monkeypatch.setattr(Journal, "_write", full)
        with pytest.raises(JournalWriteError) as failed:
            journal.append(0, result(0.5))
    assert str(failed.value) == f"cannot write the run journal {path} (No space left on device)"

"""No dead ends: a resume judges again what errored (a server that was down), a run folder whose
journal never got its header is used again, a journal that holds a result twice is named, and an
executor that fails mid-run ends in one line with the command that resumes it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from io import StringIO
from pathlib import Path

import pytest
from command_line import Project
from rich.console import Console

from localeval.backends.base import JudgeUsage
from localeval.cli import session
from localeval.cli.exits import EXIT_ERRORED, EXIT_INPUT, EXIT_OK
from localeval.run.execution import Record, Work
from localeval.run.schedule import Task

#: A metric that errors while the file ``down`` lies beside it, as a judge does while its server is down.
FLAKY_PLUGIN = """
from pathlib import Path

from localeval import metric

DOWN = Path(__file__).with_name("down")
CALLS = Path(__file__).with_name("calls")


@metric("flaky", required=("input",))
def flaky(case):
    with CALLS.open("a") as calls:
        calls.write(case.input + "\\n")
    if DOWN.exists() and case.input in DOWN.read_text().split():
        raise ConnectionError("the server is down")
    return 1.0
"""


@pytest.fixture
def project(project: Project) -> Project:
    project.write("flaky.py", FLAKY_PLUGIN)
    project.write_cases([{"input": name} for name in ("a", "b", "c", "d")])
    return project


def calls(project: Project) -> list[str]:
    path = project / "calls"
    calls = path.read_text().split() if path.exists() else []
    path.unlink(missing_ok=True)
    return calls


def run_with_errors(project: Project) -> Path:
    """A run in which cases b and d errored (the server was down for them); the server is back after it."""
    project.write("down", "b d")
    first = project.localeval("run", "cases.jsonl", "--plugin", "flaky.py", "-m", "flaky", "--run-dir", "run")
    assert first.returncode == EXIT_ERRORED, first.stderr
    assert sorted(calls(project)) == ["a", "b", "c", "d"]
    (project / "down").unlink()
    return project / "run"


def test_resume_judges_again_what_errored(project: Project) -> None:
    run_dir = run_with_errors(project)
    resumed = project.localeval("run", "--resume", "run")
    assert resumed.returncode == EXIT_OK, resumed.stderr
    assert sorted(calls(project)) == ["b", "d"]
    assert "Resuming: 2 results that errored are judged again (--keep-errors keeps them)" in resumed.stderr
    report = json.loads((run_dir / "report.json").read_text())
    assert [c["results"][0]["score"] for c in report["cases"]] == [1.0, 1.0, 1.0, 1.0]
    assert report["stats"]["resumed"] == 2
    again = project.localeval("run", "--resume", "run")  # the journal holds each retry after its error
    assert again.returncode == EXIT_OK, again.stderr
    assert calls(project) == []


def test_keep_errors_keeps_them(project: Project) -> None:
    run_with_errors(project)
    kept = project.localeval("run", "--resume", "run", "--keep-errors")
    assert kept.returncode == EXIT_ERRORED, kept.stderr
    assert calls(project) == []
    errors = [line for line in kept.stderr.splitlines() if "flaky: " in line]
    assert [line.rpartition("/")[2] for line in errors] == [
        f"cases.jsonl:{n} flaky: unexpected ConnectionError: the server is down" for n in (2, 4)]


def test_keep_errors_needs_resume(project: Project) -> None:
    result = project.localeval("run", "cases.jsonl", "--plugin", "flaky.py", "-m", "flaky", "--keep-errors")
    assert result.returncode == EXIT_INPUT
    assert result.stderr == "error: --keep-errors applies to --resume only\n"


def test_a_run_folder_whose_journal_has_no_header_is_used_again(project: Project) -> None:
    run_dir = project / "run"
    run_dir.mkdir()
    (run_dir / "journal.jsonl").write_bytes(b'{"journal_format": 1, "run_')  # killed writing its header
    resumed = project.localeval("run", "--resume", "run")
    assert resumed.returncode == EXIT_INPUT
    assert resumed.stderr == (
        "error: run/journal.jsonl: the run stopped before it recorded anything: nothing to resume; "
        "run it again (its folder is used again with --run-dir)\n"
    )
    again = project.localeval("run", "cases.jsonl", "--plugin", "flaky.py", "-m", "flaky", "--run-dir", "run")
    assert again.returncode == EXIT_OK, again.stderr
    assert len(json.loads((run_dir / "report.json").read_text())["cases"]) == 4


def test_a_result_twice_in_a_journal_is_named(project: Project) -> None:
    run = project.localeval("run", "cases.jsonl", "--plugin", "flaky.py", "-m", "flaky", "--run-dir", "run")
    assert run.returncode == EXIT_OK, run.stderr
    journal = project / "run" / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join([*lines, lines[2]]))
    resumed = project.localeval("run", "--resume", "run")
    assert resumed.returncode == EXIT_INPUT
    case = json.loads(lines[2])["case"]
    assert resumed.stderr == (
        f"error: run/journal.jsonl:6: case {case + 1}, metric 'flaky' is already at line 3, which did not error; a journal "
        "holds one of each (the journal was edited, or two runs wrote it): start a new run\n"
    )


class Failing:
    """An executor that measures ``good`` tasks, then fails with ``error``, as a Ray cluster whose
    runtime-env agent died does."""

    def __init__(self, good: int, error: BaseException) -> None:
        self.good, self.error = good, error

    def execute(self, tasks: Sequence[Task], work: Work, record: Record) -> JudgeUsage:
        for task in tasks[: self.good]:
            record(work.measure(task))
        raise self.error


@pytest.mark.parametrize(("error", "said"), [
    (RuntimeError("the runtime env agent is gone"), "unexpected RuntimeError: the runtime env agent is gone"),
    (SystemExit(1), "unexpected SystemExit: 1"),  # a library that exits: was exit code 1 and no word
])
def test_an_executor_that_fails_mid_run_ends_in_one_line_with_the_resume_command(
        project: Project, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory,
        error: BaseException, said: str) -> None:
    monkeypatch.chdir(project)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path_factory.mktemp("tmp")))  # the traceback's file
    monkeypatch.setattr(session, "import_ray", lambda local: None)
    monkeypatch.setattr(session, "ray_executor", lambda *args: Failing(3, error))
    project.write_cases([{"input": q, "actual_output": "a", "expected_output": "a"} for q in "abcd"], "answers.jsonl")
    settings = session.settings_from_cli(  # a built-in metric: a plugin's is registered once in a process
        dataset=Path("answers.jsonl"), config=None, metrics=["exact_match"], model=None, threads=None, fields=None,
        list_delimiter=None, report=None, no_cache=True, cache_dir=None,
    )
    paths = session.Paths.from_environ(project.environ())
    out, err = StringIO(), StringIO()
    run_dir = project / "run"
    code = session.run(settings, paths, Console(file=out), Console(file=err, width=80), {},
                       session.RunFlags(run_dir=run_dir, executor="ray"))
    assert code == EXIT_ERRORED
    lines = err.getvalue().splitlines()
    assert lines[-1].startswith(f"error: the run stopped after 3 of 4 results: {said}; the traceback is in "), lines
    assert lines[-1].endswith(f". Resume with: localeval run --resume {run_dir}")
    assert not (run_dir / "report.json").exists()
    resumed = project.localeval("run", "--resume", "run")
    assert resumed.returncode == EXIT_OK, resumed.stderr
    assert json.loads((run_dir / "report.json").read_text())["stats"]["resumed"] == 3

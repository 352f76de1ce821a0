"""Crash safety end to end: `localeval run` killed with SIGKILL mid-run, then resumed (real model)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from command_line import ANSWERS, Project, command, exit_code_of, localeval, report_outcomes

from localeval.data.case import TestCase

CONFIG = """
[dataset]
path = "cases.jsonl"

[cache]
enabled = false

[[metrics]]
metric = "geval"
name = "correctness"
evaluation_params = ["input", "actual_output"]
evaluation_steps = ["Check whether the answer is correct."]

[[metrics]]
metric = "exact_match"
"""


@pytest.fixture
def project(project: Project) -> Project:
    project.write_cases(TestCase(name=f"q{i}", input=q, actual_output=a, expected_output=a)
                        for i, (q, a) in enumerate(ANSWERS))
    project.write("eval.toml", CONFIG)
    return project


def journal_entries(path: Path) -> list[tuple[int, str]]:
    lines = path.read_text().splitlines()[1:]
    return [(e["case"], e["result"]["metric"]) for e in map(json.loads, lines)]


@pytest.mark.model
def test_a_run_killed_with_sigkill_resumes_to_the_same_report(project: Project) -> None:
    whole = project.localeval("run", "-c", "eval.toml", "--run-dir", "whole")
    assert (project / "whole" / "report.json").exists(), whole.stderr
    assert whole.returncode == exit_code_of(json.loads((project / "whole" / "report.json").read_text())), whole.stderr

    killed_dir = project / "killed"
    journal = killed_dir / "journal.jsonl"
    proc = subprocess.Popen(command("run", "-c", "eval.toml", "--run-dir", str(killed_dir)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=project.environ(), cwd=project)
    deadline = time.monotonic() + 240
    while not (journal.is_file() and len(journal_entries(journal)) >= 5):
        assert proc.poll() is None, "the run finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    before = journal.read_bytes()
    done_before = journal_entries(journal)
    assert 5 <= len(done_before) < 2 * len(ANSWERS)
    assert not (killed_dir / "report.json").exists()

    resumed = project.localeval("run", "--resume", str(killed_dir), cwd="/")
    assert resumed.returncode == whole.returncode, resumed.stderr
    entries = journal_entries(journal)
    assert journal.read_bytes().startswith(before)  # nothing finished was lost or rewritten
    assert len(entries) == len(set(entries)) == 2 * len(ANSWERS)  # nothing computed twice
    assert report_outcomes(killed_dir) == report_outcomes(project / "whole")
    report = json.loads((killed_dir / "report.json").read_text())
    assert report["stats"]["resumed"] == len(done_before)


def test_resume_takes_no_other_settings() -> None:
    result = localeval("run", "--resume", "abc", "--metric", "exact_match")
    assert result.returncode == 2
    assert "--resume runs with the run's own settings; drop --metric" in result.stderr


def test_resume_of_an_unknown_run_names_where_it_looked(project: Project) -> None:
    result = project.localeval("run", "--resume", "nope")
    assert result.returncode == 2
    assert (f"no run 'nope': neither a directory with a journal.jsonl nor a run id under {project / 'runs'}"
            in result.stderr)


def test_resume_refuses_a_changed_dataset(project: Project) -> None:
    first = project.localeval("run", "cases.jsonl", "--metric", "exact_match", "--run-dir", "run")
    assert first.returncode == 0, first.stderr
    with (project / "cases.jsonl").open("a") as stream:
        stream.write(json.dumps({"input": "new", "actual_output": "x", "expected_output": "x"}) + "\n")
    result = project.localeval("run", "--resume", str(project / "run"))
    assert result.returncode == 2
    assert "the dataset changed since run" in result.stderr


@pytest.mark.model
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(project: Project) -> None:
    run_dir = project / "interrupted"
    journal = run_dir / "journal.jsonl"
    proc = subprocess.Popen(command("run", "-c", "eval.toml", "--run-dir", str(run_dir)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=project.environ(), cwd=project)
    deadline = time.monotonic() + 240
    while not (journal.is_file() and len(journal_entries(journal)) >= 2):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    saved = len(journal_entries(journal))
    assert f"Interrupted: {saved} of {2 * len(ANSWERS)} results are saved. " in stderr
    assert f"Resume with: localeval run --resume {run_dir}" in stderr
    assert "Traceback" not in stderr


def test_resume_of_a_run_whose_settings_this_version_cannot_read_is_one_line(project: Project) -> None:
    """A journal from before the typed backend options: [backend] held keys no kind has."""
    first = project.localeval("run", "cases.jsonl", "--metric", "exact_match", "--run-dir", "run")
    assert first.returncode == 0, first.stderr
    journal = project / "run" / "journal.jsonl"
    lines = journal.read_text().splitlines()
    header = json.loads(lines[0])
    header["config"]["backend"] = {**header["config"]["backend"], "base_url": None, "api_key_env": None}
    journal.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    result = project.localeval("run", "--resume", str(project / "run"))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"error: {journal}:1: the run's settings cannot be read (backend" in result.stderr
    assert "start a new run" in result.stderr

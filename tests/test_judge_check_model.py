"""check-judge and the trust it gives runs, end to end with the real default model (SmolLM2: fast, at chance).

These check the mechanism with a real judge — a stored check under its real fingerprint, a run that
reads it, a calibrated threshold taken from it — not the judge's quality, which the judge check's
own figures measure (docs/measurements/judges.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from command_line import Project, exit_code_of

from localeval.cli.exits import EXIT_INPUT, EXIT_OK

pytestmark = pytest.mark.model

CONFIG = """
[dataset]
path = "cases.jsonl"

[backend]
model = "{model}"
n_threads = 1

[[metrics]]
metric = "geval"
name = "correctness"
evaluation_params = ["input", "actual_output", "expected_output"]
evaluation_steps = ["Check whether the actual output states the same fact as the expected output."]
include_reason = false
threshold = "calibrated"
"""


@pytest.fixture
def judged(project: Project, default_model: tuple[object, Path]) -> Project:
    """A project whose judge is the default model's file, with its judge checks kept in the project."""
    _, path = default_model
    project.env["LOCALEVAL_CHECKS_DIR"] = str(project / "checks")
    project.write("eval.toml", CONFIG.format(model=path))
    project.write_cases([{"name": "capital", "input": "What is the capital of Australia?",
                          "actual_output": "Sydney.", "expected_output": "Canberra"}])
    return project


def test_a_calibrated_threshold_without_a_check_stops_the_run_before_any_judge_call(judged: Project) -> None:
    result = judged.localeval("run", "-c", "eval.toml")
    assert result.returncode == EXIT_INPUT, result.stderr
    [line] = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert "metric 'correctness': threshold 'calibrated', but judge 'backend'" in line
    assert "has not been checked; run: localeval check-judge --model" in line
    assert not (judged / "runs").exists() or not any((judged / "runs").iterdir())


def test_a_checked_judge_gives_its_threshold_and_every_report_says_how_far_to_trust_it(judged: Project) -> None:
    check = judged.localeval("check-judge", "-c", "eval.toml", "--family", "correctness", "--pairs", "2")
    assert check.returncode == EXIT_OK, check.stderr
    assert "correctness: ordered" in check.stderr
    [stored] = (judged / "checks").glob("*.json")
    measured = json.loads(stored.read_text())["families"][0]
    assert (measured["family"], measured["pairs"], measured["errored"]) == ("correctness", 2, 0)

    again = judged.localeval("check-judge", "-c", "eval.toml", "--family", "correctness", "--pairs", "2")
    assert again.returncode == EXIT_OK
    assert json.loads(stored.read_text())["families"][0]["ordered"] == measured["ordered"]  # from the cache

    run = judged.localeval("run", "-c", "eval.toml", "--run-dir", str(judged / "run"))
    report = json.loads((judged / "run" / "report.json").read_text())
    assert run.returncode == exit_code_of(report), run.stderr  # the judge decides the pass at that threshold
    [result] = report["cases"][0]["results"]
    assert result["threshold"] == measured["calibrated"]["threshold"]
    assert result["threshold_source"].startswith("calibrated: judge check of ")
    [trust] = report["trust"]
    assert trust["families"][0]["family"] == "correctness" and trust["families"][0]["checked"]
    said = "AT CHANCE on correctness" if trust["families"][0]["at_chance"] else "on correctness: ordered"
    assert said in run.stderr
    assert 'class="trust' in (judged / "run" / "report.html").read_text()

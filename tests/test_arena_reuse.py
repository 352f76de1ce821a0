"""`localeval arena RUN_A RUN_B` without --config: the judges and metrics of RUN_A's own config.

The runs are judged by a backend that a plugin file registers and their config names, so the
arena, in its own process, can only have its judge from the run's config. The judge logs each
prompt it reads; it is 0.7 sure of the first candidate, so every arena case is a tie (A first in
one order, B in the other) and the arena exits 0.
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path
from typing import Any

import pytest
from command_line import Project

from localeval.cli.exits import EXIT_OK

PLUGIN = '''
"""A judge a plugin file registers: 0.7 sure of the first candidate; it logs each prompt."""
import json
import math

from localeval import BackendOptions, register_backend
from localeval.backends.base import Capabilities, DistributionReply, Fingerprint
from localeval.distribution import renormalize


class LeaningOptions(BackendOptions):
    n_threads: int = 1


class LeaningJudge:
    def __init__(self, log):
        self.log = log

    @property
    def capabilities(self):
        return Capabilities(json_schema=True, distribution=True, multi_token_candidates=True)

    @property
    def fingerprint(self):
        return Fingerprint(kind="leaning", model="leaning-1", runtime="leaning 1")

    def generate_json(self, request):
        raise NotImplementedError("the metrics here ask no reason and have their steps")

    def candidate_distribution(self, request):
        with open(self.log, "a") as stream:
            stream.write(json.dumps({"candidates": list(request.candidates),
                                     "prompt": "\\n".join(m.content for m in request.messages)}) + "\\n")
        rest = math.log(0.3 / (len(request.candidates) - 1))
        first = request.candidates[0]
        return DistributionReply(distribution=renormalize(
            {c: math.log(0.7) if c == first else rest for c in request.candidates}))

    def close(self):
        pass


register_backend("leaning", lambda options, context: LeaningJudge(context.environ["LEANING_LOG"]),
                 LeaningOptions, description="0.7 sure of the first candidate.")
'''
RUN = """
plugins = ["leaning.py"]

[backend]
kind = "leaning"

[gate]
min_pass_rate = {{ exact = 0.9 }}
{metrics}
[[metrics]]
metric = "exact_match"
name = "exact"
"""
GEVAL = """
[[metrics]]
metric = "geval"
name = "correct"
criteria = "The answer agrees with the expected output."
evaluation_steps = ["Compare the answer with the expected output.", "Prefer the shorter one."]
evaluation_params = ["input", "actual_output", "expected_output"]
field_labels = { input = "Question", actual_output = "Answer" }
scoring = "top"
threshold = 0.8
include_reason = false
"""
ARENA = """
[[metrics]]
metric = "arena"
name = "better"
evaluation_steps = ["Prefer the output that names the expected city."]
evaluation_params = ["input", "expected_output"]
include_reason = false
"""
QUESTIONS = [("Capital of Australia?", "Canberra"), ("Capital of Canada?", "Ottawa")]


@pytest.fixture
def project(project: Project) -> Project:
    """Two versions' answers to the same questions, each case with contestants too
    (so that a run can hold an arena metric beside its metrics of one output)."""
    project.env["LEANING_LOG"] = str(project / "judge.log")
    for version, answers in (("v1", ["Sydney.", "Ottawa."]), ("v2", ["Canberra.", "Toronto."])):
        project.write_cases([{"input": q, "expected_output": e, "actual_output": a,
                              "contestants": {"terse": e, "wordy": f"It is {e}, I think."}}
                             for (q, e), a in zip(QUESTIONS, answers, strict=True)], f"{version}.jsonl")
    return project


def two_runs(project: Project, metrics: str) -> tuple[Path, Path]:
    """RUN_A and RUN_B: v1 and v2 run with ``metrics`` and exact_match, in a folder of their config's own."""
    config = project.write("configs/run.toml", RUN.format(metrics=metrics))
    project.write("configs/leaning.py", PLUGIN)  # the plugin, relative to the config, not to the folder
    for version in ("v1", "v2"):
        done = project.localeval("run", str(project / f"{version}.jsonl"), "-c", str(config),
                                 "--run-dir", str(project / version))
        assert (project / version / "report.json").is_file(), done.stderr
    (project / "judge.log").unlink(missing_ok=True)
    return project / "v1", project / "v2"


def arena_header(folder: Path) -> dict[str, Any]:
    """The first line of an arena's journal: its config."""
    header: dict[str, Any] = json.loads((folder / "journal.jsonl").read_text().splitlines()[0])
    return header


def prompts(project: Project) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (project / "judge.log").read_text().splitlines()]


def test_the_runs_arena_metric_and_judge_are_taken_without_config(project: Project) -> None:
    v1, v2 = two_runs(project, GEVAL + ARENA)
    done = project.localeval("arena", str(v1), str(v2), "--run-dir", str(project / "arena"))
    assert done.returncode == EXIT_OK, done.stderr
    assert f"Arena settings of run {v1}: its judges and its arena metrics: better; skipped: correct, exact" in done.stderr
    config = arena_header(project / "arena")["config"]
    assert config["metrics"] == [{"metric": "arena", "name": "better", "include_reason": False,
                                  "evaluation_steps": ["Prefer the output that names the expected city."],
                                  "evaluation_params": ["input", "expected_output"]}]
    assert config["backend"]["kind"] == "leaning" and config["plugins"] == ["leaning.py"]
    assert config["dataset"]["path"].startswith(str(project / "runs" / "arena"))
    assert config["gate"] == {"min_pass_rate": {}, "min_mean": {}}  # the run's gate names its metrics
    asked = prompts(project)
    assert len(asked) == 4 and all(a["candidates"] == [" A", " B"] for a in asked)  # 2 cases, both orders
    assert all("Prefer the output that names the expected city." in a["prompt"] for a in asked)
    report = json.loads((project / "arena" / "report.json").read_text())
    assert list(report["cases"][0]["inputs"]["contestants"].values()) == ["Sydney.", "Canberra."]


def test_a_run_still_writing_its_journal_lends_its_settings_and_is_left_as_it_was(project: Project) -> None:
    v1, v2 = two_runs(project, GEVAL + ARENA)
    journal = v1 / "journal.jsonl"
    journal.write_bytes(journal.read_bytes() + b'{"case": 0, "resu')  # a line its run is writing
    written = journal.read_bytes()
    with journal.open("rb") as running:
        fcntl.flock(running.fileno(), fcntl.LOCK_EX)  # held, as a run under way holds it
        done = project.localeval("arena", str(v1), str(v2), "--run-dir", str(project / "arena"))
    assert done.returncode == EXIT_OK, done.stderr
    assert arena_header(project / "arena")["config"]["metrics"][0]["name"] == "better"
    assert journal.read_bytes() == written  # read only: nothing cut from a journal another run writes


def test_the_runs_g_eval_metrics_become_arena_metrics_of_the_same_steps(project: Project) -> None:
    v1, v2 = two_runs(project, GEVAL)
    done = project.localeval("arena", str(v1 / "report.json"), str(v2), "--run-dir", str(project / "arena"))
    assert done.returncode == EXIT_OK, done.stderr
    assert (f"Arena settings of run {v1 / 'report.json'}: its judges and its G-Eval metrics as arena metrics: "
            "correct; skipped: exact") in done.stderr
    metric = arena_header(project / "arena")["config"]["metrics"]
    assert metric == [{"metric": "arena", "name": "correct", "criteria": "The answer agrees with the expected output.",
                       "evaluation_steps": ["Compare the answer with the expected output.", "Prefer the shorter one."],
                       "evaluation_params": ["input", "expected_output"], "field_labels": {"input": "Question"},
                       "include_reason": False}]  # not its threshold, nor "top", which the arena has not
    asked = prompts(project)
    assert len(asked) == 4 and all(a["candidates"] == [" A", " B"] for a in asked)
    assert all("Prefer the shorter one." in a["prompt"] and "Question:" in a["prompt"] for a in asked)


def test_a_run_with_no_arena_or_g_eval_metric_is_told_to_pass_config(project: Project) -> None:
    v1, v2 = two_runs(project, "")
    done = project.localeval("arena", str(v1), str(v2))
    assert done.returncode == 2
    assert done.stderr.strip() == (f"error: run {v1} has no arena or G-Eval metric to judge with (it has exact); "
                                   "pass the arena's with --config")
    assert not (project / "runs" / "arena").exists() and not (project / "judge.log").exists()

"""`localeval arena --resume`: an arena interrupted by Ctrl-C finishes over the cases it wrote.

The command runs in this process (typer's CliRunner) so that the judge can be a scripted
one: it prefers the output that agrees with the expected output, and sends this process
a real SIGINT at a chosen call, as a user's Ctrl-C would.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from command_line import Project, localeval
from typer.testing import CliRunner

from localeval.backends.base import DistributionReply, DistributionRequest, Fingerprint
from localeval.backends.cache import CachedBackend
from localeval.cli import session
from localeval.cli.app import app
from localeval.distribution import renormalize
from localeval.testing.scripted import FULL_CAPABILITIES, ScriptedJudge

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "arena"
ARENA = """
[cache]
enabled = false

[[metrics]]
metric = "arena"
name = "better"
evaluation_steps = ["Prefer the output that agrees with the expected output."]
evaluation_params = ["input", "expected_output"]
include_reason = false
"""
PAIR = re.compile(r"Expected Output:\n(.*?)\n\nOutput A:\n(.*?)\n\nOutput B:\n(.*?)\n\n", re.S)


class AgreeingJudge(ScriptedJudge):
    """Sure of the output that contains the expected output; a Ctrl-C to this process at call ``stop_at``."""

    def __init__(self, stop_at: int | None = None) -> None:
        # Two calls in flight, as an HTTP judge's: a Ctrl-C waits for them and journals their cases.
        super().__init__(capabilities=FULL_CAPABILITIES.model_copy(update={"parallel_requests": 2}),
                         fingerprint=Fingerprint(kind="scripted", model="agreeing", runtime="scripted 1"))
        self.stop_at = stop_at

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        self.requests.append(request)
        if len(self.requests) == self.stop_at:
            os.kill(os.getpid(), signal.SIGINT)  # Python raises KeyboardInterrupt on the main thread
        expected, a, b = PAIR.findall(comparison(request))[0]
        a_agrees = expected.lower() in a.lower()
        logprobs = {" A": -0.1 if a_agrees else -2.5, " B": -2.5 if a_agrees else -0.1}
        return DistributionReply(distribution=renormalize({c: logprobs[c] for c in request.candidates}))

    def pairs(self) -> list[str]:
        """Each request's (input, output A, output B), as text: what one comparison judged."""
        return [comparison(request).split("---\n", 1)[1] for request in self.requests]  # type: ignore[arg-type]


def comparison(request: DistributionRequest) -> str:
    """The prompt's message that shows the two outputs."""
    return next(m.content for m in request.messages if "Output A:" in m.content)


@pytest.fixture
def project(project: Project, monkeypatch: pytest.MonkeyPatch) -> Project:
    """Two finished runs of examples/arena (exact_match only: no judge), and the arena's config; the
    commands run in this process keep their runs and cache in the project too."""
    for name, value in project.env.items():
        monkeypatch.setenv(name, value)
    for version in ("v1", "v2"):
        done = invoke("run", str(EXAMPLE / f"{version}.jsonl"), "-c", str(EXAMPLE / "runs.toml"),
                      "--run-dir", str(project / version))
        assert done.exit_code == session.EXIT_FAILED, done.output  # some answers are wrong in both
    project.write("arena.toml", ARENA)
    return project


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def judged_by(judge: AgreeingJudge, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "load_judges", lambda *args: (CachedBackend(judge, None), {}))


def outcomes(report_path: Path) -> list[Any]:
    report = json.loads(report_path.read_text())
    cases = [(c["name"], c["inputs"], [(r["score"], r["passed"], r["details"]) for r in c["results"]])
             for c in report["cases"]]
    return [cases, [(s["metric"], s["details"]) for s in report["summary"]]]


def test_an_interrupted_arena_resumes_judging_each_pair_once(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    arena = ("arena", str(project / "v2"), str(project / "v1"), "--names", "v2,v1", "-c", str(project / "arena.toml"))
    whole = AgreeingJudge()
    judged_by(whole, monkeypatch)
    uninterrupted = invoke(*arena, "--run-dir", str(project / "whole"))
    # v2 preferred on two questions, v1 on two: no significant difference, exit 0 (though two cases fail)
    assert uninterrupted.exit_code == session.EXIT_OK, uninterrupted.output
    assert len(whole.requests) == 8  # four cases, each pair in both orders

    first = AgreeingJudge(stop_at=3)
    judged_by(first, monkeypatch)
    stopped = invoke(*arena, "--run-dir", str(project / "stopped"))
    assert stopped.exit_code == session.EXIT_INTERRUPTED, stopped.output
    assert f"Resume with: localeval arena --resume {project / 'stopped'}" in stopped.output
    assert len(first.requests) == 4  # the two cases in flight are finished and journaled, no other started
    assert "Interrupted: 2 of 4 results are saved." in stopped.output
    assert not (project / "stopped" / "report.json").exists()
    # Another arena of the same runs, with other names, before the resume: its cases are another file.
    judged_by(AgreeingJudge(), monkeypatch)
    other = invoke(*arena[:3], "--names", "new,old", "-c", str(project / "arena.toml"), "--run-dir",
                   str(project / "other"))
    assert other.exit_code == session.EXIT_OK, other.output

    rest = AgreeingJudge()
    judged_by(rest, monkeypatch)
    resumed = invoke("arena", "--resume", str(project / "stopped"), "--report", str(project / "copy.json"),
                     "--html", str(project / "copy.html"))  # a resume takes where the reports' copies go
    assert resumed.exit_code == session.EXIT_OK, resumed.output  # the arena's exit rule, resumed too
    assert (project / "copy.json").read_text() == (project / "stopped" / "report.json").read_text()
    assert (project / "copy.html").read_text() == (project / "stopped" / "report.html").read_text()
    assert Counter(first.pairs() + rest.pairs()) == Counter(whole.pairs())  # every comparison judged once in all
    assert outcomes(project / "stopped" / "report.json") == outcomes(project / "whole" / "report.json")
    report = json.loads((project / "stopped" / "report.json").read_text())
    assert report["stats"]["resumed"] == 2 and len(rest.requests) == 4
    assert report["dataset"]["path"] == json.loads((project / "whole" / "report.json").read_text())["dataset"]["path"]


def test_arena_resume_takes_no_other_settings() -> None:
    done = localeval("arena", "run-a", "--resume", "abc", "--names", "x,y", "--threads", "2", env={"COLUMNS": "300"})
    assert done.returncode == 2
    assert "error: --resume runs with the run's own settings; drop RUN_A, --names" in done.stderr  # --threads: taken
    bare = localeval("arena", "--threads", "2", env={"COLUMNS": "300"})
    assert bare.returncode == 2 and "arena takes RUN_A (and RUN_B), or --resume RUN" in bare.stderr


def test_arena_resume_refuses_a_run_that_is_no_arena(project: Project) -> None:
    resumed = project.localeval("arena", "--resume", str(project / "v1"))
    assert resumed.returncode == 2
    assert "only arena metrics judge them, not exact_match (exact_match)" in resumed.stderr

"""What ``--resume`` does with the options it is given, and a plugin file's own backend kind.

A resume runs with the run's own settings: the options that cannot change a score (where the
reports' copies go, the cache, the judge's threads, scheduling) take effect, the others are refused
in one line before anything is judged. The end-to-end runs use a judge that a plugin file
registers (``localeval.register_backend``) and names in the run's config: it is sure of the digit
the answer ends with, counts its calls, and sends its own process a real SIGINT at a chosen call.
"""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from command_line import Project, report_outcomes
from typer.testing import CliRunner

from localeval.cli.app import app
from localeval.errors import ConfigError

#: The plugin: registers the backend kind "digit" and nothing else.
PLUGIN = '''
"""A judge a plugin file registers: sure of the digit the answer ends with."""
import json
import math
import os
import re
import signal

from localeval import BackendOptions, register_backend
from localeval.backends.base import Capabilities, DistributionReply, Fingerprint
from localeval.distribution import renormalize


class DigitOptions(BackendOptions):
    n_threads: int = 1


class DigitJudge:
    def __init__(self, options, environ):
        self.options, self.environ, self.calls = options, environ, 0

    @property
    def capabilities(self):
        return Capabilities(json_schema=True, distribution=True, multi_token_candidates=True)

    @property
    def fingerprint(self):
        return Fingerprint(kind="digit", model="digit-1", runtime="digit 1")

    def generate_json(self, request):
        raise NotImplementedError("the G-Eval here asks no reason")

    def candidate_distribution(self, request):
        self.calls += 1
        sure = re.findall(r"answer (\\d)", request.messages[-1].content)[-1]
        self._log({"call": sure})
        if str(self.calls) == self.environ.get("DIGIT_STOP_AT"):
            os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C, as the user's would arrive
        rest = math.log(0.1 / (len(request.candidates) - 1))
        return DistributionReply(distribution=renormalize(
            {c: math.log(0.9) if c == sure else rest for c in request.candidates}))

    def close(self):
        pass

    def _log(self, line):
        with open(self.environ["DIGIT_LOG"], "a") as stream:
            stream.write(json.dumps(line) + "\\n")


def build(options, context):
    judge = DigitJudge(options, context.environ)
    judge._log({"built": options.n_threads})
    return judge


register_backend("digit", build, DigitOptions, description="Sure of the answer's digit.")
'''
CONFIG = """
{plugins}
[dataset]
path = "cases.jsonl"

[backend]
kind = "digit"

[[metrics]]
metric = "geval"
name = "correct"
criteria = "The answer is correct."
evaluation_steps = ["Check the answer."]
evaluation_params = ["input", "actual_output"]
include_reason = false
"""
DIGITS = [2, 5, 3, 4, 1, 5]


def score(digit: int) -> float:
    """G-Eval's score when 0.9 of the mass is on ``digit`` and 0.025 on each other of 1-5, on 0-1."""
    mean = 0.9 * digit + 0.025 * (15 - digit)
    return (mean - 1) / 4


@pytest.fixture
def project(project: Project) -> Project:
    """The plugin, the cases, a config that names the plugin and one that does not; the judge's log."""
    project.write("digit.py", PLUGIN)
    project.write_cases({"name": f"q{i}", "input": f"Question {i}?", "actual_output": f"The answer {d}",
                         "expected_output": f"The answer {d}"} for i, d in enumerate(DIGITS))
    project.write("eval.toml", CONFIG.format(plugins='plugins = ["digit.py"]'))
    project.write("bare.toml", CONFIG.format(plugins=""))
    project.env["DIGIT_LOG"] = str(project / "digit.log")
    return project


def logged(project: Project) -> list[dict[str, Any]]:
    """What the plugin's judge logged since the last call: its builds and calls; the log emptied."""
    log = project / "digit.log"
    lines = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


def test_a_plugin_file_registers_the_backend_kind_its_config_names(project: Project) -> None:
    for run, plugin in (("config", ("-c", "eval.toml")), ("option", ("-c", "bare.toml", "--plugin", "digit.py"))):
        done = project.localeval("run", *plugin, "--run-dir", run, "--no-cache")
        assert done.returncode == 1, done.stderr  # the answers 1 and 2 fail the threshold of 0.5
        report = json.loads((project / run / "report.json").read_text())
        assert [c["results"][0]["score"] for c in report["cases"]] == pytest.approx([score(d) for d in DIGITS],
                                                                                    abs=1e-12)
        assert report["config"]["backend"] == {"kind": "digit", "n_threads": 1}
        assert logged(project) == [{"built": 1}, *({"call": str(d)} for d in DIGITS)]


@pytest.mark.ray
@pytest.mark.skipif(find_spec("ray") is None, reason="the ray extra is not installed")
def test_a_plugin_files_kind_judges_on_ray_workers(project: Project) -> None:
    """A worker imports the plugins before it reads the judges' options (the plugin's model)."""
    done = project.localeval("run", "-c", "eval.toml", "--run-dir", "run", "--no-cache", "--executor", "ray",
                             "--ray-workers", "1")
    assert done.returncode == 1, done.stderr
    report = json.loads((project / "run" / "report.json").read_text())
    assert [c["results"][0]["score"] for c in report["cases"]] == pytest.approx([score(d) for d in DIGITS], abs=1e-12)
    assert sorted(line["call"] for line in logged(project) if "call" in line) == sorted(str(d) for d in DIGITS)


def test_a_plugin_that_fails_to_import_is_one_line_naming_it(project: Project) -> None:
    (project / "digit.py").write_text("1 / 0\n")
    done = project.localeval("run", "-c", "eval.toml")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: eval.toml: plugins[1] 'digit.py': ZeroDivisionError: division by zero"
    done = project.localeval("run", "-c", "bare.toml", "--plugin", "digit.py")
    assert done.returncode == 2
    assert "error: command line: --plugin[1] " in done.stderr and "ZeroDivisionError" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_resume_reimports_the_plugin_and_honours_threads_reports_and_cache(project: Project) -> None:
    whole = project.localeval("run", "-c", "eval.toml", "--run-dir", "whole", "--cache-dir", "cache-whole")
    assert whole.returncode == 1, whole.stderr
    assert len(logged(project)) == 1 + len(DIGITS)

    stopped = project.localeval("run", "-c", "eval.toml", "--run-dir", "stopped", DIGIT_STOP_AT="3")
    assert stopped.returncode == 130, stopped.stderr
    first = logged(project)
    saved = len((project / "stopped" / "journal.jsonl").read_text().splitlines()) - 1
    assert f"Interrupted: {saved} of {len(DIGITS)} results are saved." in stopped.stderr
    assert first[0] == {"built": 1} and 2 <= saved <= 3

    resumed = project.localeval("run", "--resume", "stopped", "--threads", "3", "--report", "out/r.json",
                                "--html", "out/r.html", "--junit", "out/r.xml", "--cache-dir", "cache-resumed")
    assert resumed.returncode == 1, resumed.stderr
    rest = logged(project)
    assert rest[0] == {"built": 3}  # the plugin's judge, built with the resume's thread count
    assert len(first) == 1 + 3 and len(rest) == 1 + len(DIGITS) - saved  # the resume asks only what is missing
    assert report_outcomes(project / "stopped") == report_outcomes(project / "whole")
    copy = json.loads((project / "out" / "r.json").read_text())
    assert copy == json.loads((project / "stopped" / "report.json").read_text())
    assert copy["stats"]["resumed"] == saved
    assert copy["config"]["backend"] == {"kind": "digit", "n_threads": 3}
    assert copy["config"]["cache"]["dir"] == "cache-resumed"
    assert (project / "out" / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert (project / "out" / "r.xml").read_text().count("<testcase ") == len(DIGITS)
    assert any((project / "cache-resumed").iterdir())  # the resumed calls were cached there


#: Each option ``run --resume`` refuses, with a value: each changes how the cases are read or who judges them.
RUN_REFUSES = [["cases.jsonl"], ["--config", "eval.toml"], ["--metric", "exact_match"], ["--model", "m"],
               ["--backend", "ollama"], ["--base-url", "http://127.0.0.1:9"], ["--map", "query=input"],
               ["--list-delimiter", ";"], ["--plugin", "digit.py"], ["--run-dir", "elsewhere"]]
ARENA_REFUSES = [["v1"], ["v1", "v2"], ["--config", "arena.toml"], ["--names", "a,b"], ["--model", "m"],
                 ["--backend", "ollama"], ["--base-url", "http://127.0.0.1:9"], ["--run-dir", "elsewhere"]]


@pytest.mark.parametrize("command", ["run", "arena"])
def test_resume_refuses_each_option_that_would_change_what_it_computes(command: str, tmp_path: Path) -> None:
    for option in RUN_REFUSES if command == "run" else ARENA_REFUSES:
        name = option[0] if option[0].startswith("--") else ("DATASET" if command == "run" else
                                                              ", ".join(f"RUN_{c}" for c in "AB"[:len(option)]))
        with pytest.raises(ConfigError) as refused:  # before the run is even looked for
            CliRunner().invoke(app, [command, *option, "--resume", str(tmp_path / "none")], catch_exceptions=False)
        assert str(refused.value) == f"--resume runs with the run's own settings; drop {name}"


def test_resume_names_every_refused_option_at_once_and_exits_2(project: Project) -> None:
    done = project.localeval("run", "--resume", "none", *(arg for option in RUN_REFUSES for arg in option),
                             "--threads", "2", "--order", "input")
    assert done.returncode == 2
    assert done.stderr.strip() == ("error: --resume runs with the run's own settings; drop DATASET, --config, --metric, "
                                   "--model, --backend, --base-url, --map, --list-delimiter, --plugin, --run-dir")


def test_threads_on_the_resume_of_a_server_judged_run_is_refused_naming_the_backend(project: Project) -> None:
    done = project.localeval("run", "cases.jsonl", "--metric", "exact_match", "--backend", "ollama",
                             "--model", "m", "--run-dir", "run")
    assert done.returncode == 0, done.stderr  # exact_match: no judge loads
    resumed = project.localeval("run", "--resume", "run", "--threads", "2")
    assert resumed.returncode == 2
    assert resumed.stderr.strip() == "error: --threads does not apply to the ollama backend"

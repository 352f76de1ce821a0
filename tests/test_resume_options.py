"""A backend kind that a plugin file registers (``localeval.register_backend``), named by the run's config.

The plugin's judge is sure of the digit the answer ends with, logs its builds and calls, and can
send its own process a real SIGINT at a chosen call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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
def project(tmp_path: Path) -> Path:
    (tmp_path / "digit.py").write_text(PLUGIN)
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"name": f"q{i}", "input": f"Question {i}?", "actual_output": f"The answer {d}",
                    "expected_output": f"The answer {d}"}) + "\n"
        for i, d in enumerate(DIGITS)))
    (tmp_path / "eval.toml").write_text(CONFIG.format(plugins='plugins = ["digit.py"]'))
    (tmp_path / "bare.toml").write_text(CONFIG.format(plugins=""))
    return tmp_path


def localeval(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``localeval ARGS`` in a subprocess, its runs and cache in ``project``; ``env`` on top."""
    environ = {**os.environ, "LOCALEVAL_RUNS_DIR": str(project / "runs"), "COLUMNS": "300",
               "LOCALEVAL_CACHE_DIR": str(project / "cache"), "DIGIT_LOG": str(project / "digit.log"), **env}
    return subprocess.run([sys.executable, "-m", "localeval", *args], capture_output=True, text=True,
                          env=environ, cwd=project, timeout=120)


def logged(project: Path) -> list[dict[str, Any]]:
    """What the plugin's judge logged since the last call: its builds and calls; the log emptied."""
    log = project / "digit.log"
    lines = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


def test_a_plugin_file_registers_the_backend_kind_its_config_names(project: Path) -> None:
    for run, plugin in (("config", ("-c", "eval.toml")), ("option", ("-c", "bare.toml", "--plugin", "digit.py"))):
        done = localeval(project, "run", *plugin, "--run-dir", run, "--no-cache")
        assert done.returncode == 1, done.stderr  # the answers 1 and 2 fail the threshold of 0.5
        report = json.loads((project / run / "report.json").read_text())
        assert [c["results"][0]["score"] for c in report["cases"]] == pytest.approx([score(d) for d in DIGITS],
                                                                                    abs=1e-12)
        assert report["config"]["backend"] == {"kind": "digit", "n_threads": 1}
        assert logged(project) == [{"built": 1}, *({"call": str(d)} for d in DIGITS)]


def test_a_plugin_that_fails_to_import_is_one_line_naming_it(project: Path) -> None:
    (project / "digit.py").write_text("1 / 0\n")
    done = localeval(project, "run", "-c", "eval.toml")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: eval.toml: plugins[1] 'digit.py': ZeroDivisionError: division by zero"
    done = localeval(project, "run", "-c", "bare.toml", "--plugin", "digit.py")
    assert done.returncode == 2
    assert "error: command line: --plugin[1] " in done.stderr and "ZeroDivisionError" in done.stderr
    assert "Traceback" not in done.stderr

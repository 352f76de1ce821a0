"""``localeval`` in a subprocess, for every test that runs the command: one helper, one project folder.

:func:`command` is the command line (the guard of tests/guarded_cli.py in front when the running
test may not load a model or start Ray: tests/tiers.py), :func:`localeval` runs it and captures
its output, and :class:`Project` is a test's folder with the command run there, its runs and cache
kept inside (the ``project`` fixture of tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import tiers

from localeval.cli.exits import EXIT_ERRORED, EXIT_FAILED, EXIT_OK
from localeval.data.case import TestCase

GUARD = Path(__file__).with_name("guarded_cli.py")
#: How long one command may take: a fast-tier command judges nothing; a slow-tier one may run a
#: real model over an example (minutes on a loaded 2-core machine).
FAST_TIMEOUT_S = 120
SLOW_TIMEOUT_S = 900

#: Six short questions with an answer each, some right, some wrong (the runs killed and resumed).
ANSWERS = [
    ("What is the capital of France?", "Paris"),
    ("What is 2 + 2?", "5"),
    ("Who wrote Hamlet?", "William Shakespeare wrote Hamlet."),
    ("What colour is the sky on a clear day?", "Green."),
    ("How many legs does a spider have?", "Eight."),
    ("What is the boiling point of water at sea level?", "100 degrees Celsius."),
]


def command(*args: str) -> list[str]:
    """``localeval ARGS`` by this interpreter; through the guard if the running test may not import
    llama_cpp or ray (its markers: tests/tiers.py)."""
    blocked = tiers.blocked_imports(tiers.current)
    if not blocked:
        return [sys.executable, "-m", "localeval", *args]
    return [sys.executable, str(GUARD), ",".join(f"{name}={marker}" for name, marker in blocked.items()), *args]


def localeval(*args: str, env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
              prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``localeval ARGS`` in a subprocess, its stdout and stderr captured as text.

    ``env``: variables set on top of this process's environment; ``prefix``: a command that runs
    it (``unshare -n``). It may take :data:`SLOW_TIMEOUT_S` in a test of the slow tier (any of its
    markers), else :data:`FAST_TIMEOUT_S`.
    """
    timeout = SLOW_TIMEOUT_S if tiers.current & set(tiers.SLOW_MARKERS) else FAST_TIMEOUT_S
    return subprocess.run([*prefix, *command(*args)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=timeout)


class Project:
    """A test's project folder: ``localeval`` runs there with its runs and cache inside the folder
    (``LOCALEVAL_RUNS_DIR``, ``LOCALEVAL_CACHE_DIR``) and wide lines (``COLUMNS``); the models stay
    where this process finds them. ``project / "eval.toml"`` is a path in it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.env = {"LOCALEVAL_RUNS_DIR": str(path / "runs"), "LOCALEVAL_CACHE_DIR": str(path / "cache"),
                    "COLUMNS": "300"}

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def __fspath__(self) -> str:
        return str(self.path)

    def write(self, name: str, text: str) -> Path:
        """The file ``name`` in the folder, holding ``text``."""
        path = self.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def write_cases(self, cases: Iterable[TestCase | Mapping[str, Any]], name: str = "cases.jsonl") -> Path:
        """A JSONL dataset of ``cases``: a mapping as it is, a test case's name, input and outputs."""
        lines = [json.dumps(case if isinstance(case, Mapping) else
                            {"name": case.name, "input": case.input, "actual_output": case.actual_output,
                             "expected_output": case.expected_output}) for case in cases]
        return self.write(name, "".join(line + "\n" for line in lines))

    def environ(self, **env: str) -> dict[str, str]:
        """The environment of a command run here: this process's, :attr:`env` and ``env`` on top."""
        return {**os.environ, **self.env, **env}

    def localeval(self, *args: str, cwd: str | os.PathLike[str] | None = None,
                  **env: str) -> subprocess.CompletedProcess[str]:
        """``localeval ARGS`` run in the folder (or ``cwd``), with :attr:`env` and ``env`` on top."""
        return localeval(*args, env={**self.env, **env}, cwd=self.path if cwd is None else cwd)


def report_outcomes(run_dir: Path) -> list[list[tuple[str, float | None, bool | None]]]:
    """Each case's results in the run's report: metric, score, passed."""
    report = json.loads((run_dir / "report.json").read_text())
    return [[(r["metric"], r["score"], r["passed"]) for r in case["results"]] for case in report["cases"]]


def exit_code_of(report: Mapping[str, Any]) -> int:
    """The exit code ``localeval run`` owes the run of ``report`` (a report.json's content; the
    codes: localeval/cli/exits.py): 3 when a result errored, 1 when one failed, else 0. For runs
    whose passes are the judge's to decide: the code is then exactly this."""
    if any(metric["errored"] for metric in report["summary"]):
        return EXIT_ERRORED
    return EXIT_FAILED if any(metric["failed"] for metric in report["summary"]) else EXIT_OK

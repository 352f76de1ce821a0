"""What the end-to-end tests of ``localeval run`` in a subprocess share: questions, a project folder, the
command, a report's outcomes (test_resume: killed and resumed; test_ray_executor: a killed Ray driver)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from localeval.data.case import TestCase

#: Six short questions with an answer each, some right, some wrong.
ANSWERS = [
    ("What is the capital of France?", "Paris"),
    ("What is 2 + 2?", "5"),
    ("Who wrote Hamlet?", "William Shakespeare wrote Hamlet."),
    ("What colour is the sky on a clear day?", "Green."),
    ("How many legs does a spider have?", "Eight."),
    ("What is the boiling point of water at sea level?", "100 degrees Celsius."),
]


def write_project(folder: Path, cases: list[TestCase], config: str) -> Path:
    """``folder`` with ``cases.jsonl`` (the cases) and ``eval.toml`` (``config``)."""
    lines = [json.dumps({"name": c.name, "input": c.input, "actual_output": c.actual_output,
                         "expected_output": c.expected_output}) for c in cases]
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "eval.toml").write_text(config)
    return folder


def command(*args: str) -> list[str]:
    """``localeval run`` with ``args``, by this interpreter."""
    return [sys.executable, "-m", "localeval", "run", *args]


def report_outcomes(run_dir: Path) -> list[list[tuple[str, float | None, bool | None]]]:
    """Each case's results in the run's report: metric, score, passed."""
    report = json.loads((run_dir / "report.json").read_text())
    return [[(r["metric"], r["score"], r["passed"]) for r in case["results"]] for case in report["cases"]]

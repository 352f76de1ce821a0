"""The agentic metrics with the real default model: in-process, and the CLI on examples/agent in a subprocess
(and what the CLI refuses before it loads a model).

Mechanics, not judgement (a 135M judge is near chance): every reply valid, one
verdict per tool call, every score recomputed from what the result records.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from command_line import localeval

from localeval.data.dataset import Dataset
from localeval.data.results import MetricResult
from localeval.metrics import ArgumentCorrectness, TaskCompletion
from localeval.run.runner import evaluate

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent"
#: Two tool calls; SmolLM2 wrote a 700-character outcome for it, past an earlier token budget.
CASES = ("sum-extra-search",)


def check_argument_correctness(result: MetricResult, calls: int) -> None:
    assert result.error is None, result.error
    verdicts = result.details["verdicts"]
    assert [v["call"] for v in verdicts] == list(range(calls))
    assert all(v["verdict"] in ("yes", "no") and 0 < len(v["reason"]) <= 200 for v in verdicts)
    yes = sum(v["verdict"] == "yes" for v in verdicts)
    assert result.score == (yes / calls if calls else 1.0)
    assert result.details["counts"] == {"yes": yes, "no": calls - yes}


def check_task_completion(result: MetricResult) -> None:
    assert result.error is None, result.error
    details = result.details
    assert 0 < len(details["task"]) <= 200 and 0 < len(details["outcome"]) <= 300
    distribution = details["distribution"]
    assert list(distribution) == ["1", "2", "3", "4", "5"] and math.isclose(sum(distribution.values()), 1.0)
    expected = sum(p * int(s) for s, p in distribution.items())
    assert result.raw_score == pytest.approx(expected, abs=1e-9) == details["expected_score"]
    assert result.score == pytest.approx((expected - 1) / 4, abs=1e-9)
    assert details["covered_mass"] >= 0.1


@pytest.mark.model
def test_judged_agent_metrics_in_process(llama_backend: Any) -> None:
    full = Dataset.load(EXAMPLE / "agent.jsonl")
    dataset = Dataset.from_cases([c for c in full.cases if c.name in CASES])
    report = evaluate(dataset, [ArgumentCorrectness(), TaskCompletion()], llama_backend)
    for case, results in zip(dataset.cases, report.cases):
        arguments, completion = results.results
        check_argument_correctness(arguments, len(case.tools_called or ()))
        check_task_completion(completion)
        assert arguments.reason and completion.reason
        assert "reason_error" not in arguments.details and "reason_error" not in completion.details


@pytest.mark.model
def test_cli_runs_the_agent_example_and_reruns_from_the_cache(tmp_path: Path) -> None:
    env = {"LOCALEVAL_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "120"}
    config = str(EXAMPLE / "eval.toml")
    first = localeval("run", "-c", config, "--report", str(tmp_path / "a.json"), env=env)
    assert first.returncode == 1, first.stderr  # tools_exact fails on two cases; nothing errors
    report = json.loads((tmp_path / "a.json").read_text())
    cases = {c["name"]: {r["metric"]: r for r in c["results"]} for c in report["cases"]}
    assert {name: results["tool_correctness"]["score"] for name, results in cases.items()} == {
        "weather-paris": 1.0, "weather-wrong-place": 1.0, "flight-not-booked": 0.5, "refund-out-of-order": 1.0,
        "capital-no-tool": 1.0, "sum-extra-search": 1.0, "convert-twice": 0.5,
    }
    dataset = Dataset.load(EXAMPLE / "agent.jsonl")
    for case in dataset.cases:
        results = cases[case.name or ""]
        check_argument_correctness(MetricResult.model_validate(results["argument_correctness"]),
                                   len(case.tools_called or ()))
        check_task_completion(MetricResult.model_validate(results["task_completion"]))
    # per case with calls: verdicts + reason; per case: task and outcome, score, reason (6 cases have calls)
    assert report["stats"]["model_calls"] == 6 * 2 + 7 * 3
    second = localeval("run", "-c", config, "--report", str(tmp_path / "b.json"), env=env)
    assert second.returncode == 1, second.stderr
    assert json.loads((tmp_path / "b.json").read_text())["stats"]["model_calls"] == 0


def test_cli_refuses_a_trace_without_tools_called_before_loading_a_model(tmp_path: Path) -> None:
    data = tmp_path / "agent.jsonl"
    lines = (EXAMPLE / "agent.jsonl").read_text().splitlines()
    broken = {k: v for k, v in json.loads(lines[2]).items() if k != "tools_called"}
    data.write_text("\n".join([*lines[:2], json.dumps(broken), *lines[3:]]) + "\n")
    env = {"LOCALEVAL_CACHE_DIR": str(tmp_path / "cache")}
    result = localeval("run", str(data), "-m", "tool_correctness", "-m", "task_completion", "--model", "nope.gguf",
                       env=env)
    assert result.returncode == 2
    assert f"{data}:3: field 'tools_called': metric 'tool_correctness' needs it, and it is missing" in result.stderr

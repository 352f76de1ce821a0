"""The DAG example (examples/dag) with the real default model: every reply valid, every path consistent.

These check mechanics, not judgement: a 135M judge is near chance at telling
whether headings are in order. What must hold is that every judge call is
answered within its schema (a task output of at most 100 characters, a boolean,
one of the verdicts, a reason), so no case errors, and that the recorded path
is the one the verdicts choose, ending at the score the graph gives it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import diskcache
import pytest
from command_line import exit_code_of, localeval

from localeval.backends.cache import CachedBackend
from localeval.cli.exits import EXIT_ERRORED
from localeval.config import RunConfig
from localeval.data.dataset import Dataset
from localeval.metrics.dag import DAG
from localeval.run.runner import evaluate

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "dag"
#: The score of each verdict of the example's non-binary node, by its place.
ORDER_SCORES = {"in order": 10, "two out of order": 4, "all out of order": 2}


def check_path(path: list[dict[str, Any]], score: float) -> int:
    """Assert that ``path`` is the example's graph walked by its own verdicts; the judge calls it took."""
    task, has_all, has_all_verdict, *rest = path
    assert (task["node"], task["kind"]) == ("headings", "task")
    assert isinstance(task["output"], str) and len(task["output"]) <= 100
    assert (has_all["node"], has_all["kind"]) == ("has_all", "binary_judgement")
    assert isinstance(has_all["verdict"], bool)
    assert has_all_verdict == {
        "node": f"has_all.children[{int(has_all['verdict'])}]", "kind": "verdict", "verdict": has_all["verdict"],
        **({} if has_all["verdict"] else {"score": 0}),
    }
    if not has_all["verdict"]:
        assert rest == [] and score == 0.0
        return 2
    order, leaf = rest
    assert (order["node"], order["kind"]) == ("order", "non_binary_judgement")
    place = list(ORDER_SCORES).index(order["verdict"])
    expected = ORDER_SCORES[order["verdict"]]
    assert leaf == {"node": f"order.children[{place}]", "kind": "verdict", "verdict": order["verdict"], "score": expected}
    assert score == expected / 10
    return 3


def test_the_example_scores_every_case_without_an_error(llama_backend: Any, tmp_path: Path) -> None:
    [metric] = RunConfig.load(EXAMPLE / "eval.toml").build_metrics()
    assert isinstance(metric, DAG) and metric.include_reason
    dataset = Dataset.load(EXAMPLE / "meetings.jsonl")
    judge = CachedBackend(llama_backend, diskcache.Cache(str(tmp_path / "cache")))

    report = evaluate(dataset, [metric], judge)

    errors = [f"{c.name}: {r.error}" for c in report.cases for r in c.results if r.error]
    assert errors == []
    calls = 0
    for case in report.cases:
        [result] = case.results
        assert result.score is not None
        calls += check_path(result.details["path"], result.score) + 1  # and the reason
        assert result.raw_score == result.score
        assert result.passed is (result.score >= 0.5)
        assert result.reason.strip() or "reason_error" in result.details
    # Two cases whose headings read the same ask the same judgement: the cache answers the second.
    assert report.stats.model_calls + report.stats.cache_hits == calls
    print(
        f"\n{len(report.cases)} cases, {calls} judge calls ({report.stats.model_calls} to the model), "
        f"{report.stats.duration_s:.1f} s, 0 errors"
    )


def test_the_cli_runs_the_example(tmp_path: Path) -> None:
    run = localeval("run", "--config", str(EXAMPLE / "eval.toml"), "--report", str(tmp_path / "report.json"),
                    "--run-dir", str(tmp_path / "run"),
                    env={"LOCALEVAL_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "100"})
    assert "format_correctness" in run.stdout, run.stdout + run.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert run.returncode == exit_code_of(report) != EXIT_ERRORED, run.stdout + run.stderr  # no case errored
    results = [r for case in report["cases"] for r in case["results"]]
    assert len(results) == len(Dataset.load(EXAMPLE / "meetings.jsonl").cases)
    assert [r["error"] for r in results] == [None] * len(results)
    for result in results:
        check_path(result["details"]["path"], result["score"])

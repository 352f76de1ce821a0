"""Issue 15's robustness check: judge calls and schema failures of the judged metrics it added.

Runs summarization, bias, toxicity, pii_leakage and prompt_alignment (reasons
on) with the real default model in-process, no cache, on the cases of
examples/metrics/support.jsonl and news articles with a system summary
(qags_cnndm.json: $ALIGNMENT_DATA, else the excerpt in tests/data/alignment).
Every judge call goes through a counter that records it and how it ended: a
reply that breaks its schema would be a ``SchemaViolation``, one cut by its
token limit a ``TruncatedOutput``. Prints the number of calls and of failures
by type, and the results by outcome.

    python benchmarks/judge_metrics.py [--news 8] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time
from pathlib import Path
from typing import Any

from counting import CountingBackend

from localeval import Dataset, LlamaCppBackend, ModelCatalog, TestCase
from localeval.config import RunConfig
from localeval.metrics.judged import JudgedMetric
from localeval.paths import Paths
from localeval.run.runner import evaluate  # the engine: no cache, no progress, no run folder

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "metrics" / "eval.toml"
NEWS = Path(os.environ.get("ALIGNMENT_DATA") or ROOT / "tests" / "data" / "alignment") / "qags_cnndm.json"


def news_cases(count: int) -> list[TestCase]:
    """News articles as summarization cases: the article is the input, a system's summary the output."""
    records = json.loads(NEWS.read_text())[:count]
    return [
        TestCase(name=f"qags-{r['doc_id']}", input=r["source"], actual_output=r["system_output"],
                 expected_output=r["reference"])
        for r in records
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--news", type=int, default=8, help="news cases besides the example's (default 8)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    config = RunConfig.load(EXAMPLE)
    metrics = [m for m in config.build_metrics() if isinstance(m, JudgedMetric)]
    example = Dataset.load(config.dataset.path)  # type: ignore[arg-type]
    cases = [*example.cases, *news_cases(args.news)]
    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve(None)
    judge = CountingBackend(LlamaCppBackend(path, spec))
    start = time.perf_counter()
    try:
        report = evaluate(Dataset.from_cases(cases), metrics, judge)
    finally:
        judge.close()
    results: collections.Counter[str] = collections.Counter(
        "scored" if r.error is None else r.error.split(":")[0] for c in report.cases for r in c.results
    )
    calls = sum(judge.outcomes.values())
    failures = judge.failures()
    summary: dict[str, Any] = {
        "model": spec.name, "cases": len(cases), "metrics": [m.display_name for m in metrics],
        "judge_calls": calls, "failed_calls": failures, "schema_failures": failures.get("generate_json SchemaViolation", 0),
        "results": dict(results), "seconds": round(time.perf_counter() - start, 1),
        "mean_scores": {s.metric: s.mean_score for s in report.summary},
    }
    print(f"{spec.name}: {len(cases)} cases x {len(metrics)} judged metrics in {summary['seconds']} s")
    print(f"judge calls: {calls}; failed calls: {sum(failures.values())} {failures}; "
          f"schema failures: {summary['schema_failures']}")
    print(f"results: {dict(results)}")
    for error in judge.errors:
        print(f"  {error}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()

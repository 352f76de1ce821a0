"""Issue 4's robustness check: many real-model evaluations of the six RAG metrics and the DAG example.

Builds RAG cases from news articles (qags_cnndm.json in $ALIGNMENT_DATA:
the article split into paragraphs is the context and the retrieval context, a
system summary is the output, the reference summary the expected output), runs
all six RAG metrics (reasons on) and the DAG example of examples/dag on the
default model in-process with no cache, and counts the results by outcome:
scored, and errors by type. A schema failure would be an error result naming
SchemaViolation; a reply cut by its token limit, TruncatedOutput.

    python benchmarks/schema_check.py [--cases 32] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time
from pathlib import Path

from localeval import (
    Dataset,
    Events,
    LlamaCppBackend,
    MetricFinished,
    ModelCatalog,
    RunReport,
    TestCase,
    build_metric,
)
from localeval.config import RunConfig
from localeval.paths import Paths
from localeval.run.runner import evaluate  # the engine: no cache, no progress, no run folder

ROOT = Path(__file__).resolve().parents[1]
#: UniEval's QAGS-CNN/DM set: $ALIGNMENT_DATA (a folder with the full sets), else the excerpt in tests/.
DATA = Path(os.environ.get("ALIGNMENT_DATA") or ROOT / "tests" / "data" / "alignment") / "qags_cnndm.json"
RAG_METRICS = ["answer_relevancy", "faithfulness", "hallucination", "contextual_precision", "contextual_recall",
               "contextual_relevancy"]


def chunks(article: str, parts: int = 3) -> list[str]:
    """The article as ``parts`` consecutive pieces of about equal length, cut between words."""
    words = article.split()
    size = -(-len(words) // parts)
    return [" ".join(words[i:i + size]) for i in range(0, len(words), size)]


def rag_cases(count: int) -> list[TestCase]:
    records = json.loads(DATA.read_text())[:count]
    return [
        TestCase(
            name=f"qags-{r['doc_id']}", input="What happened, according to the news article?",
            actual_output=r["system_output"], expected_output=r["reference"],
            context=chunks(r["source"]), retrieval_context=chunks(r["source"]),
        )
        for r in records
    ]


def outcomes(report: RunReport) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for case in report.cases:
        for result in case.results:
            counts["scored" if result.error is None else result.error.split(":")[0]] += 1
    return counts


def progress(event: object) -> None:
    """One line per finished evaluation, so a long run shows where it is."""
    if isinstance(event, MetricFinished):
        r = event.result
        print(f"  case {event.case_index + 1} {r.metric}: {'error' if r.error else f'{r.score:.2f}'} "
              f"({event.duration_s:.1f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=32)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve(None)
    judge = LlamaCppBackend(path, spec)
    dag_config = RunConfig.load(ROOT / "examples" / "dag" / "eval.toml")
    runs = {
        "rag": (Dataset.from_cases(rag_cases(args.cases)), [build_metric(m) for m in RAG_METRICS]),
        "dag": (Dataset.load(dag_config.dataset.path), dag_config.build_metrics()),  # type: ignore[arg-type]
    }
    summary: dict[str, object] = {"model": spec.name}
    try:
        for name, (dataset, metrics) in runs.items():
            start = time.perf_counter()
            report = evaluate(dataset, metrics, judge, events=Events(progress))
            counts = outcomes(report)
            per_metric = {s.metric: {"scored": s.cases - s.errored, "errored": s.errored} for s in report.summary}
            summary[name] = {"evaluations": sum(counts.values()), "outcomes": dict(counts),
                             "per_metric": per_metric, "seconds": round(time.perf_counter() - start, 1)}
            print(f"{name}: {sum(counts.values())} evaluations in {summary[name]['seconds']} s: {dict(counts)}")
            for case in report.cases:
                for result in case.results:
                    if result.error:
                        print(f"  {case.name} {result.metric}: {result.error[:200]}")
    finally:
        judge.close()
    total = sum(s["evaluations"] for s in (summary["rag"], summary["dag"]))  # type: ignore[index]
    scored = sum(s["outcomes"].get("scored", 0) for s in (summary["rag"], summary["dag"]))  # type: ignore[index]
    print(f"total: {total} evaluations, {scored} scored, {total - scored} errors")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()

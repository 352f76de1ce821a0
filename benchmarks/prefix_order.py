"""Prefix-aware ordering against input order, in-process, on documents that many summaries share.

Builds a dataset of DOCS news articles (qags_cnndm.json in $ALIGNMENT_DATA)
with PER_DOC summaries each, listed interleaved (article 1 summary 1, article 2
summary 1, ...) as a dataset sorted by summarizer would be. Runs G-Eval
(consistency steps, no reason, no cache) over it with `order="input"` and with
`order="prefix"`, alternating A-B-A-B, and prints the seconds, the ratio, and
whether the scores are identical (they must be: warm reads equal cold reads).

    python benchmarks/prefix_order.py [--docs 2] [--per-doc 16] [--rounds 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from localeval import (
    Dataset,
    LlamaCppBackend,
    LlamaCppOptions,
    ModelCatalog,
    RunOptions,
    TestCase,
    build_metric,
)
from localeval.paths import Paths
from localeval.run.runner import evaluate  # the engine: no cache, no progress, no run folder

#: UniEval's QAGS-CNN/DM set: $ALIGNMENT_DATA (a folder with the full sets), else the excerpt in tests/.
DATA = Path(os.environ.get("ALIGNMENT_DATA") or Path(__file__).resolve().parents[1] / "tests" / "data" / "alignment") / "qags_cnndm.json"


def interleaved_cases(docs: int, per_doc: int) -> list[TestCase]:
    records = json.loads(DATA.read_text())
    summaries = [r["system_output"] for r in records]
    cases = []
    for k in range(per_doc):
        for d in range(docs):
            summary = summaries[d] if k == 0 else summaries[(docs + d * per_doc + k) % len(summaries)]
            cases.append(TestCase(input=records[d]["source"], actual_output=summary, name=f"doc{d}-summary{k}"))
    return cases


def timed_run(dataset: Dataset, judge: LlamaCppBackend, order: str) -> tuple[float, list[float | None]]:
    metric = build_metric("geval:consistency", {"include_reason": False})
    start = time.perf_counter()
    report = evaluate(dataset, [metric], judge, options=RunOptions(order=order))  # type: ignore[arg-type]
    return time.perf_counter() - start, [c.results[0].score for c in report.cases]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2)
    parser.add_argument("--per-doc", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=1, help="A-B pairs to run")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    dataset = Dataset.from_cases(interleaved_cases(args.docs, args.per_doc))
    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve(None)
    judge = LlamaCppBackend(path, spec, LlamaCppOptions(n_threads=args.threads))
    times: dict[str, list[float]] = {"input": [], "prefix": []}
    scores: dict[str, list[float | None]] = {}
    try:
        timed_run(Dataset.from_cases(dataset.cases[:1]), judge, "input")  # warm up the process
        for _ in range(args.rounds):
            for order in ("input", "prefix"):
                seconds, scores[order] = timed_run(dataset, judge, order)
                times[order].append(seconds)
                print(f"{order:>6}: {seconds:7.1f} s  ({seconds / len(dataset):.2f} s per case)", flush=True)
    finally:
        judge.close()
    result = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {args.threads} thread(s)",
        "model": spec.name, "cases": len(dataset), "docs": args.docs, "per_doc": args.per_doc,
        "input_s": statistics.median(times["input"]), "prefix_s": statistics.median(times["prefix"]),
        "same_scores": scores["input"] == scores["prefix"],
    }
    result["speedup"] = result["input_s"] / result["prefix_s"]
    print(f"{len(dataset)} cases ({args.docs} articles x {args.per_doc} summaries), {spec.name}, "
          f"{args.threads} thread(s): input order {result['input_s']:.1f} s, prefix order {result['prefix_s']:.1f} s, "
          f"speed-up {result['speedup']:.2f}x; identical scores: {result['same_scores']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""The Ray executor against the local one, side by side in one run, and the driver's cost per result.

1. G-Eval (consistency, no reason, no cache) on CASES news summaries (QAGS-CNN/DM,
   $ALIGNMENT_DATA or the excerpt in tests/; past its 30 records an article is
   paired with another record's summary): the local executor with one judge of
   2 threads, against 2 Ray actors with a judge of 1 thread each, on a local
   Ray runtime of 2 CPUs started once before (as a cluster would be). Rounds
   alternate local, Ray. The Ray time includes starting the actors and loading
   their models; the runtime's start is timed apart.
2. The driver's cost per result: TRIVIAL exact_match results (no judge) journaled
   (fsync) through each executor; their time divided by their number.

    python benchmarks/ray_overhead.py [--cases 40] [--rounds 1] [--trivial 2000] [--short] [--json out.json]

``--short``: short arithmetic questions and a correctness G-Eval (~150-token prompts)
instead of the articles (~600), for a machine too busy for those.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.console import Console

from localeval import Dataset, LlamaCppOptions, RunOptions, RunReport, TestCase, build_metric
from localeval.config import CacheConfig
from localeval.judge import load_judges
from localeval.paths import Paths
from localeval.run.journal import Journal, JournalHeader
from localeval.run.ray_executor import JudgeRecipe, RayExecutor, import_ray
from localeval.run.runner import evaluate  # the engine: no cache, no progress, no run folder

DATA = Path(os.environ.get("ALIGNMENT_DATA") or Path(__file__).resolve().parents[1] / "tests" / "data" / "alignment") / "qags_cnndm.json"
NO_CACHE = CacheConfig(enabled=False)


def summaries(count: int) -> list[TestCase]:
    """``count`` distinct (article, summary) cases; past the data's end, each article gets another's summary."""
    records = json.loads(DATA.read_text())
    n = len(records)
    return [TestCase(name=f"case{i}", input=records[i % n]["source"],
                     actual_output=records[(i + i // n) % n]["system_output"]) for i in range(count)]


def questions(count: int) -> list[TestCase]:
    """``count`` short arithmetic questions with right and wrong answers (prompts of ~150 tokens)."""
    return [TestCase(name=f"case{i}", input=f"What is {i} + {i % 7}?", actual_output=str(i + i % 7 + (i % 3 == 0)))
            for i in range(count)]


def workload(cases: int, short: bool, reason: bool = False) -> tuple[Dataset, list[Any]]:
    """The benchmark's cases and its G-Eval: consistency on news summaries, or correctness on short sums."""
    if short:
        steps = {"evaluation_steps": ["Check whether the answer is correct."], "include_reason": reason,
                 "evaluation_params": ["input", "actual_output"], "name": "correctness"}
        return Dataset.from_cases(questions(cases)), [build_metric("geval", steps, "bench")]
    return Dataset.from_cases(summaries(cases)), [build_metric("geval:consistency", {"include_reason": reason}, "bench")]


def outcomes(report: RunReport) -> list[tuple[str, float | None]]:
    return [(r.metric, r.score) for case in report.cases for r in case.results]


def timed(dataset: Dataset, metrics: list[Any], judge: Any, options: RunOptions,
          journal: Journal | None = None) -> tuple[float, RunReport]:
    start = time.perf_counter()
    report = evaluate(dataset, metrics, judge, options=options, journal=journal)
    return time.perf_counter() - start, report


def journal_in(folder: Path, cases: int) -> Journal:
    header = JournalHeader(run_id=folder.name, created_at="-", config={}, config_source="-",
                           dataset_sha256="0" * 64, cases=cases, metrics=["exact_match"])
    return Journal.create(folder / "journal.jsonl", header)


def driver_cost(count: int) -> dict[str, float]:
    """Milliseconds per journaled exact_match result, through each executor (2 actors without a judge)."""
    ray_options = RunOptions(executor=RayExecutor(JudgeRecipe({}, NO_CACHE), workers=2))
    dataset = Dataset.from_cases([TestCase(input=str(i), actual_output=str(i), expected_output=str(i % 7))
                                  for i in range(count)])
    metric = [build_metric("exact_match", {}, "bench")]
    costs = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, options in (("local", RunOptions()), ("ray", ray_options)):
            with journal_in(Path(scratch) / name, count) as journal:
                seconds, _ = timed(dataset, metric, None, options, journal)
            costs[f"{name}_ms_per_result"] = 1000 * seconds / count
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=1, help="local-Ray pairs to run")
    parser.add_argument("--trivial", type=int, default=2000, help="exact_match results for the driver's cost")
    parser.add_argument("--short", action="store_true", help="short questions and a correctness G-Eval instead")
    parser.add_argument("--driver-only", action="store_true", help="only the driver's cost per result")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.driver_only:
        import_ray(local=True).init(num_cpus=2, _node_ip_address="127.0.0.1", include_dashboard=False,
                                    log_to_driver=False)
        costs = driver_cost(args.trivial)
        print(f"driver per journaled result: local {costs['local_ms_per_result']:.2f} ms, "
              f"Ray {costs['ray_ms_per_result']:.2f} ms ({args.trivial} exact_match results)")
        return

    dataset, metrics = workload(args.cases, args.short)
    ray = import_ray(local=True)
    started = time.perf_counter()
    ray.init(num_cpus=2, _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False)
    runtime_s = time.perf_counter() - started
    ray_options = RunOptions(executor=RayExecutor(JudgeRecipe({None: LlamaCppOptions(n_threads=1)}, NO_CACHE),
                                                  workers=2))
    times: dict[str, list[float]] = {"local": [], "ray": []}
    scores: dict[str, list[tuple[str, float | None]]] = {}
    results: list[Any] = []
    with ExitStack() as stack:
        judge, _ = load_judges({None: LlamaCppOptions(n_threads=2)}, NO_CACHE, Paths.from_environ(os.environ),
                               os.environ, stack, Console(stderr=True))
        timed(Dataset.from_cases(dataset.cases[:1]), metrics, judge, RunOptions())  # warm up the process
        for _ in range(args.rounds):
            for name, options in (("local", RunOptions()), ("ray", ray_options)):
                seconds, report = timed(dataset, metrics, judge, options)
                times[name].append(seconds)
                scores[name] = outcomes(report)
                results = [r for case in report.cases for r in case.results]
                print(f"{name:>5}: {seconds:7.1f} s  ({seconds / len(dataset):.2f} s per case)", flush=True)
    costs = driver_cost(args.trivial)
    ray.shutdown()
    local_s, ray_s = statistics.median(times["local"]), statistics.median(times["ray"])
    result = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "cases": len(dataset), "rounds": args.rounds, "local_s": local_s, "ray_s": ray_s,
        "ray_overhead": ray_s / local_s - 1, "ray_runtime_start_s": runtime_s,
        "same_scores": scores["local"] == scores["ray"], "trivial_results": args.trivial, **costs,
        # What crosses the wire: once per actor the cases and the metrics, per task a result back.
        "cases_bytes": len(pickle.dumps(list(dataset.cases))), "metrics_bytes": len(pickle.dumps(metrics)),
        "result_bytes_median": statistics.median(len(pickle.dumps(r)) for r in results),
    }
    print(f"{len(dataset)} cases, G-Eval consistency without reason: local (1 judge x 2 threads) {local_s:.1f} s, "
          f"Ray (2 actors x 1 thread) {ray_s:.1f} s: {100 * result['ray_overhead']:+.1f}%; "
          f"identical scores: {result['same_scores']}; Ray runtime start {runtime_s:.1f} s")
    print(f"driver per journaled result: local {costs['local_ms_per_result']:.2f} ms, "
          f"Ray {costs['ray_ms_per_result']:.2f} ms ({args.trivial} exact_match results)")
    print(f"sent: cases {result['cases_bytes']} B and metrics {result['metrics_bytes']} B once per actor; "
          f"a result {result['result_bytes_median']:.0f} B (median, pickled)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

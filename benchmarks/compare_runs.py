"""How long `localeval compare` takes on two 1,000-case runs, with its JSON and HTML written.

Writes two synthetic reports into FOLDER (CASES cases, 3 metrics, ~60-word outputs; in run B a
third of the outputs are rewritten in part and every score is a little lower, so that some cases
flip), then times `localeval compare a.json b.json --json c.json --html c.html` ROUNDS times in a
subprocess (startup and imports included, as a user sees it) and prints each wall time and the
median. Nothing is judged: the reports are made up, with a fixed seed.

    python benchmarks/compare_runs.py FOLDER [--cases 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from localeval.data.dataset import DatasetSource
from localeval.data.results import CaseResult, MetricResult, MetricSummary, RunReport

METRICS = ("correctness", "relevancy", "faithfulness")
WORDS = "the a answer is capital of France Paris city river model output dose pills day take".split()


def synthetic(run_id: str, outputs: list[str], drop: float, rng: random.Random) -> RunReport:
    """A run over ``outputs``: each metric scores 0.6-0.9, less up to ``drop``; passes at 0.5."""
    cases = []
    for i, output in enumerate(outputs):
        results = []
        for metric in METRICS:
            score = min(1.0, max(0.0, 0.6 + 0.3 * rng.random() - drop * rng.random()))
            results.append(MetricResult(metric=metric, kind="geval", score=score, passed=score >= 0.5, threshold=0.5))
        cases.append(CaseResult(index=i, name=f"case-{i}", results=results,
                                inputs={"input": f"question {i}", "actual_output": output}))
    summary = [MetricSummary.of(m, [c.results[k] for c in cases]) for k, m in enumerate(METRICS)]
    return RunReport(run_id=run_id, created_at="2026-11-25T00:00:00+00:00", localeval_version="0",
                     cases=cases, summary=summary, dataset=DatasetSource(path="cases.jsonl", sha256="0" * 64))


def write_runs(folder: Path, cases: int) -> None:
    rng = random.Random(26)
    before = [" ".join(rng.choice(WORDS) for _ in range(60)) + "." for _ in range(cases)]
    after = [" ".join(w if rng.random() > 0.2 else rng.choice(WORDS) for w in text.split(" ")) if i % 3 == 0
             else text for i, text in enumerate(before)]
    synthetic("run-a", before, 0.0, rng).save(folder / "a.json")
    synthetic("run-b", after, 0.3, rng).save(folder / "b.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    write_runs(args.folder, args.cases)
    command = [sys.executable, "-m", "localeval", "compare", "a.json", "b.json", "--json", "c.json", "--html", "c.html"]
    times = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        done = subprocess.run(command, cwd=args.folder, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            sys.exit(f"compare exited {done.returncode}: {done.stderr}")
    print(done.stdout.splitlines()[-3])  # the summary line, before the two paths
    print("wall seconds:", ", ".join(f"{t:.2f}" for t in times), f"(median {statistics.median(times):.2f})")


if __name__ == "__main__":
    main()

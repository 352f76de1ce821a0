"""The arena's position bias on a real judge: mean P(first) when the same output is shown first and second.

Pairs come from the Topical-Chat human-judgment set (tests/data/alignment/topical_chat.json,
6 dialogues × 6 responses; $ALIGNMENT_DATA for the full set): every two responses to
the same dialogue are a pair, judged in both orders by the arena metric (logprobs).
It prints:

* mean P(first) over both orders of every pair: 0.5 is a judge indifferent to where
  an output stands; each output is shown first once and second once, so quality
  cancels out and what remains is the preference for a position;
* mean P(A) when both positions hold the very same output (A = B): position bias alone;
* order consistency: the share of pairs whose preferred response (P > 0.5) is the
  same whichever is shown first;
* agreement with the humans' "overall" rating on pairs the humans rated differently
  (the averaged preference picks the response they rated higher) — near 0.5 for a
  judge at chance;
* the mean covered mass (how much of the judge's probability the letters had).

    python benchmarks/arena_position_bias.py [--contexts 6] [--model smollm2-135m-instruct] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from localeval import Arena, Dataset, LlamaCppBackend, LlamaCppOptions, ModelCatalog, TestCase
from localeval.paths import Paths
from localeval.run.runner import evaluate  # the engine: no cache, no progress, no run folder

DATA = Path(os.environ.get("ALIGNMENT_DATA") or Path(__file__).resolve().parents[1] / "tests" / "data" / "alignment") / "topical_chat.json"
CRITERIA = "The response continues the conversation naturally, is coherent with it, and is interesting."


def pair_cases(contexts: int) -> tuple[list[TestCase], list[TestCase]]:
    """Every two responses to the same dialogue, and each response against itself."""
    by_source: dict[str, list[dict[str, Any]]] = {}
    for record in json.loads(DATA.read_text()):
        by_source.setdefault(record["source"], []).append(record)
    pairs, same = [], []
    for source, records in list(by_source.items())[:contexts]:
        for x, y in itertools.combinations(records, 2):
            metadata = {"human": {x["system_id"]: x["scores"]["overall"], y["system_id"]: y["scores"]["overall"]}}
            pairs.append(TestCase(input=source, contestants={x["system_id"]: x["system_output"],
                                                             y["system_id"]: y["system_output"]}, metadata=metadata))
        same += [TestCase(input=source, contestants={"first": r["system_output"], "second": r["system_output"]})
                 for r in records]
    return pairs, same


def measure(model: str | None, contexts: int, threads: int) -> dict[str, Any]:
    pairs, same = pair_cases(contexts)
    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve(model)
    judge = LlamaCppBackend(path, spec, LlamaCppOptions(n_threads=threads))
    metric = Arena(criteria=CRITERIA, evaluation_steps=(
        "Read the conversation.", "Check which response follows from it naturally and coherently.",
        "Prefer the more interesting of two coherent responses.",
    ), field_labels={"input": "Conversation"}, include_reason=False)
    start = time.perf_counter()
    paired = evaluate(Dataset.from_cases(pairs), [metric], judge)
    alone = evaluate(Dataset.from_cases(same), [metric], judge)
    seconds = time.perf_counter() - start
    results = [c.results[0] for c in paired.cases]
    errors = [r.error for r in results + [c.results[0] for c in alone.cases] if r.errored]
    details = [r.details["pairs"][0] for r in results if not r.errored]
    p_first = [p for d in details for p in d["p_first"]]
    consistent = [(d["p_first"][0] > 0.5) == (d["p_first"][1] < 0.5) for d in details]
    agree = []
    for case, result in zip(pairs, results):
        human = case.metadata["human"]
        a, b = list(case.contestants or {})
        if result.errored or human[a] == human[b]:
            continue
        agree.append((result.details["pairs"][0]["preference"] > 0.5) == (human[a] > human[b]))
    identical = [c.results[0].details["pairs"][0]["p_first"] for c in alone.cases if not c.results[0].errored]
    covered = [o["covered_mass"] for d in details for o in d["orders"]]
    return {
        "model": spec.name, "model_sha256": judge.fingerprint.model_sha256, "runtime": judge.fingerprint.runtime,
        "data": str(DATA.name), "contexts": contexts, "pairs": len(pairs), "errors": len(errors),
        "judge_calls": 2 * (len(pairs) + len(same)),
        "mean_p_first": statistics.fmean(p_first),
        "mean_p_first_when_first_named_first": statistics.fmean(d["p_first"][0] for d in details),
        "mean_p_first_when_first_named_second": statistics.fmean(d["p_first"][1] for d in details),
        "mean_p_a_identical_outputs": statistics.fmean(p for pair in identical for p in pair),
        "identical_outputs": len(identical),
        "order_consistency": statistics.fmean(consistent),
        "human_agreement": statistics.fmean(agree) if agree else None, "human_pairs": len(agree),
        "mean_covered_mass": statistics.fmean(covered), "min_covered_mass": min(covered),
        "seconds": round(seconds, 1), "threads": threads, "machine": platform.machine(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", type=int, default=6)
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    found = measure(args.model, args.contexts, args.threads)
    print(f"{found['model']}: {found['pairs']} pairs in both orders ({found['judge_calls']} judge calls, "
          f"{found['errors']} errors, {found['seconds']} s)")
    print(f"  mean P(first), both orders of every pair:   {found['mean_p_first']:.3f}  (0.5: no position bias)")
    print(f"  mean P(A), the same output as A and as B:   {found['mean_p_a_identical_outputs']:.3f}  "
          f"({found['identical_outputs']} outputs)")
    print(f"  order consistency (same winner both ways):  {found['order_consistency']:.1%}")
    if found["human_agreement"] is not None:
        print(f"  agreement with the humans' overall rating:  {found['human_agreement']:.1%} "
              f"of {found['human_pairs']} pairs they rated differently")
    print(f"  covered mass of ' A'/' B': mean {found['mean_covered_mass']:.3f}, min {found['min_covered_mass']:.3f}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=2) + "\n")


if __name__ == "__main__":
    main()

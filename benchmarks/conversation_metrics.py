"""The conversational metrics on the real default model: schema outcomes, time per metric, and the shared transcript.

Conversations: those of examples/conversation, cut after every assistant turn,
and each cut again with other names and another chatbot role (the 4 examples give 9 cuts, 18 conversations in all;
no prompt repeats another's).
In one process, in-process llama.cpp, no cache, reasons on:

1. *together*: one run of the five metrics over every conversation, in prefix
   order: the calls about one conversation run back to back and share the
   transcript that opens their prompts;
2. *alone*: each of the five metrics in a run of its own over every conversation.
   Consecutive calls are about different conversations, so each reads its
   transcript from scratch.

Every run starts cold (the judge's KV state emptied), so that no run reuses what
the one before it left behind: with one conversation, a run of one metric would
otherwise find that conversation's transcript already read by the last run.

It prints, per phase and metric, the seconds per conversation, the judge calls,
the prompt tokens sent and the tokens llama.cpp actually evaluated (what its KV
state did not hold already), and counts every result by outcome as
benchmarks/schema_check.py does (a schema failure would be an error result
naming SchemaViolation; a reply cut by its token limit, TruncatedOutput).

    python benchmarks/conversation_metrics.py [--limit 18] [--joined] [--json out.json]

``--joined`` measures one long conversation instead: the example conversations'
turns one after the other (18 turns), where the shared transcript is longer.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import time
from pathlib import Path
from typing import Any

from localeval import (
    ConversationalTestCase,
    Dataset,
    LlamaCppBackend,
    Metric,
    ModelCatalog,
    RunOptions,
    RunReport,
)
from localeval.config import RunConfig
from localeval.paths import Paths
from localeval.run.runner import evaluate  # the engine: no cache, no progress, no run folder

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "conversation"
OTHER_ROLE = "a grumpy pirate who answers every question in pirate speech"
RENAMES = {"Ana": "Mia", "Tom": "Leo", "Friday": "Thursday", "Saturday": "Monday", "Sunday": "Tuesday",
           "Hi": "Hello", "pasta": "rice", "Switzerland": "Norway"}


def conversations(limit: int) -> list[ConversationalTestCase]:
    """The example conversations cut after each assistant turn, and each cut again with other names and role.

    Listed round-robin over the examples (first the whole ones, then the renamed), so a ``limit`` keeps variety.
    """
    per_example: list[list[ConversationalTestCase]] = []
    for case in Dataset.load(EXAMPLE / "conversations.jsonl").cases:
        assert isinstance(case, ConversationalTestCase)
        cuts = [case.model_copy(update={"turns": case.turns[: end + 1], "name": f"{case.name}-{end + 1}"})
                for end in reversed(case.assistant_turns)]
        per_example.append([*cuts, *map(renamed, cuts)])
    found = [c for group in itertools.zip_longest(*per_example) for c in group if c is not None]
    return found[:limit]


def joined() -> list[ConversationalTestCase]:
    """One long conversation: the turns of every example conversation, one after the other."""
    cases = [c for c in Dataset.load(EXAMPLE / "conversations.jsonl").cases if isinstance(c, ConversationalTestCase)]
    turns = [turn for case in cases for turn in case.turns]
    return [cases[0].model_copy(update={"turns": turns, "name": "joined"})]


def renamed(case: ConversationalTestCase) -> ConversationalTestCase:
    """The conversation with other names and days (so no prompt repeats an original's) and another role."""
    def swap(text: str) -> str:
        for old, new in RENAMES.items():
            text = text.replace(old, new)
        return text

    turns = [t.model_copy(update={"content": swap(t.content)}) for t in case.turns]
    return case.model_copy(update={"turns": turns, "chatbot_role": OTHER_ROLE, "name": f"{case.name}-renamed"})


class EvalCounter:
    """Counts the tokens llama.cpp evaluates: it wraps the model's ``eval`` (a benchmark's probe, not product code)."""

    def __init__(self, judge: LlamaCppBackend) -> None:
        llm = judge._llm  # noqa: SLF001 -- measuring the runtime from outside
        self.evaluated = 0
        original = llm.eval

        def counting(tokens: Any) -> None:
            self.evaluated += len(tokens)
            original(tokens)

        llm.eval = counting


def outcomes(report: RunReport) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for case in report.cases:
        for result in case.results:
            counts["scored" if result.error is None else result.error.split(":")[0]] += 1
    return counts


def phase(dataset: Dataset, metrics: list[Metric], judge: LlamaCppBackend, counter: EvalCounter) -> dict[str, Any]:
    """One run, started cold: the judge's KV state holds nothing of the last run, so no run profits from another."""
    judge._llm.reset()  # noqa: SLF001 -- the benchmark's control, not something a run does
    before, start = counter.evaluated, time.perf_counter()
    report = evaluate(dataset, metrics, judge, options=RunOptions(order="prefix"))
    seconds = time.perf_counter() - start
    stats = report.stats
    return {
        "metrics": [m.display_name for m in metrics],
        "seconds": round(seconds, 2),
        "seconds_per_conversation": round(seconds / len(dataset), 3),
        "model_calls": stats.model_calls,
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.completion_tokens,
        "evaluated_tokens": counter.evaluated - before,
        "outcomes": dict(outcomes(report)),
        "errors": [f"{c.name} {r.metric}: {r.error}" for c in report.cases for r in c.results if r.error],
    }


def show(name: str, result: dict[str, Any]) -> dict[str, Any]:
    print(f"{name:>22}: {result['seconds_per_conversation']:6.2f} s/conversation, {result['model_calls']} calls, "
          f"{result['prompt_tokens']} prompt tokens sent, {result['evaluated_tokens']} evaluated, {result['outcomes']}",
          flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=18, help="at most this many conversations")
    parser.add_argument("--joined", action="store_true", help="one long conversation: every example's turns in a row")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve(None)
    judge = LlamaCppBackend(path, spec)
    counter = EvalCounter(judge)
    dataset = Dataset.from_cases(joined() if args.joined else conversations(args.limit))
    metrics = RunConfig.load(EXAMPLE / "eval.toml").build_metrics()
    summary: dict[str, Any] = {"model": spec.name, "conversations": len(dataset), "turns": sum(
        len(c.turns) for c in dataset.cases if isinstance(c, ConversationalTestCase))}
    summary["alone"] = {}
    try:  # each line as soon as its phase ends: a long run shows where it is
        summary["together"] = show("together (all five)", phase(dataset, metrics, judge, counter))
        for metric in metrics:
            summary["alone"][metric.display_name] = show(metric.display_name, phase(dataset, [metric], judge, counter))
    finally:
        judge.close()
    alone = summary["alone"].values()
    for key in ("seconds", "evaluated_tokens", "prompt_tokens", "model_calls"):
        total = sum(r[key] for r in alone)
        summary[f"alone_total_{key}"] = round(total, 2)
        print(f"{key}: each alone {total:.0f}, together {summary['together'][key]:.0f} "
              f"({summary['together'][key] / total:.2f}x)")
    counts = collections.Counter[str]()
    for result in [*alone, summary["together"]]:
        counts.update(result["outcomes"])
    summary["outcomes"] = dict(counts)
    print(f"all results: {dict(counts)}; judge calls: {sum(r['model_calls'] for r in alone) + summary['together']['model_calls']}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()

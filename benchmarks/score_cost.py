"""What a G-Eval score costs in-process: positions read and seconds per score, per model and range.

    python benchmarks/score_cost.py [--models ...] [--ranges 1-5,0-10,0-100] [--top-logprobs 20] [--ratios | --prune-below 1e-4,1e-3] [--threads N]

The G-Eval test case of tests/test_http_backends.py. ``again``: the same case scored again after
a warm run (the prompt is in the context; the vocabulary indexed): what the score position and
the continuations cost. ``new case``: each score on another case (another answer), so the part
of the prompt after the case's first difference is read too, as in a real run. Three scores
each, median wall and CPU time reported. ``positions`` is the number of next-token distributions read, the score
position included: over HTTP, the requests per score. Runs against whichever ``localeval`` is
on PYTHONPATH (main's has no ``top_logprobs`` option and reads one position per candidate token).

``--ratios`` (issue 28): the CPU seconds of a new case's score read at a single position (the
prompt and the score position only, P(starts with c)), with whole answers one token at a time
(the default), and with whole answers batched (``batch_continuations``), each a median of
three, and the whole answers' overhead over the single position; ``--threads`` llama.cpp threads
(default 1). CPU time, and wall time beside it: on a shared machine waiting for a core does not count
in CPU time (state the load with the numbers); with several threads on an idle machine, wall time
is what a user waits.

``--prune-below T1,T2`` (issue 28): the CPU seconds of a new case's score with every reply prefix read
and with those below each threshold left out (G-Eval's ``prune_below``), the continuations read, how
far the scores moved and the bound the results state (``unread_mass / covered_mass``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from localeval import (
    DistributionReply,
    DistributionRequest,
    LlamaCppBackend,
    LlamaCppOptions,
    Metric,
    ModelCatalog,
    TestCase,
    build_metric,
)
from localeval.paths import Paths

CASE = TestCase(input="What is the capital of France?", actual_output="Paris is the capital of France.")
ANSWERS = ("Paris.", "It is Paris.", "Lyon is the capital of France.", "The capital is Paris, on the Seine.")
GEVAL = {"criteria": "The answer is correct and complete.", "include_reason": False, "layout": "case_first",
         "evaluation_steps": ["Check that the answer is correct.", "Check that it is complete."],
         "min_covered_mass": 0.0}


def counted(backend: LlamaCppBackend, metric: Metric, case: TestCase = CASE) -> int:
    """Distributions read for one score: the passes after the prompt (the reply's usage), plus the prompt."""
    replies: list[DistributionReply] = []
    judge = backend.candidate_distribution

    def recording(request: DistributionRequest) -> DistributionReply:
        replies.append(judge(request))
        return replies[-1]

    backend.candidate_distribution = recording  # type: ignore[method-assign]
    try:
        metric.measure(case, backend)
    finally:
        del backend.candidate_distribution
    return replies[-1].usage.completion_tokens + 1


def seconds(metric: Metric, backend: LlamaCppBackend, cases: list[TestCase]) -> str:
    """The median wall and CPU time of one score, over ``cases``.

    CPU time (this process's) is the steadier figure on a shared machine: llama.cpp runs on one
    thread here, and waiting for a core does not count.
    """
    wall, cpu = [], []
    for case in cases:
        start, start_cpu = time.perf_counter(), time.process_time()
        metric.measure(case, backend)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return f"{statistics.median(wall):.3f} s (cpu {statistics.median(cpu):.3f} s)"


def single_position(backend: LlamaCppBackend, request: DistributionRequest) -> DistributionReply:
    """The score as one position reads it: the prompt, then the candidates' first tokens there.

    What a score cost before whole answers (P(the reply starts with c)); the yardstick of ``--ratios``.
    """
    from localeval.backends.base import Usage
    from localeval.backends.llamacpp import VocabularyTokens
    from localeval.distribution import renormalize

    prompt = backend._format.render(request.messages, request.prefill)
    tokens = backend._prompt_tokens(prompt, 4)
    with backend._lock:
        view = VocabularyTokens(backend._logits_after(tokens, prompt, ""), backend._vocabulary())
    logprobs = {c: view.logprob(c) for c in request.candidates}
    return DistributionReply(distribution=renormalize(logprobs), usage=Usage(prompt_tokens=len(tokens)))


def cpu_seconds(metric: Metric, backend: LlamaCppBackend, cases: list[TestCase]) -> tuple[float, float]:
    """The median CPU and wall seconds of one score over ``cases`` (wall: with several threads on an idle
    machine, the time a user waits; CPU counts every thread)."""
    cpu, wall = [], []
    for case in cases:
        start, start_wall = time.process_time(), time.perf_counter()
        metric.measure(case, backend)
        cpu.append(time.process_time() - start)
        wall.append(time.perf_counter() - start_wall)
    return statistics.median(cpu), statistics.median(wall)


def ratios(name: str, ranges: list[str], threads: int) -> None:
    """Per range: CPU (wall) seconds of a new case's score, single position / one at a time / batched."""
    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve(name)
    one = LlamaCppBackend(path, spec, LlamaCppOptions(n_threads=threads))
    batched = LlamaCppBackend(path, spec, LlamaCppOptions(n_threads=threads, batch_continuations=True))
    print(f"{name}, {threads} thread(s) (load {os.getloadavg()[0]:.1f}): range, CPU (wall) seconds: single position, "
          "whole answers one token at a time (×single), batched (×single), batched vs one at a time |score diff|",
          flush=True)
    for score_range in ranges:
        low, high = (int(v) for v in score_range.split("-"))
        metric = build_metric("geval", {**GEVAL, "score_range": [low, high]})
        metric.measure(CASE, one)
        metric.measure(CASE, batched)  # warm: vocabularies indexed, instructions read
        cases = [CASE.model_copy(update={"actual_output": a}) for a in ANSWERS[:3]]
        whole = cpu_seconds(metric, one, cases)
        fast = cpu_seconds(metric, batched, cases)
        one.candidate_distribution = lambda request: single_position(one, request)  # type: ignore[method-assign]
        try:
            single = cpu_seconds(metric, one, cases)
        finally:
            del one.candidate_distribution
        diff = max(abs((metric.measure(c, one).score or 0.0) - (metric.measure(c, batched).score or 0.0))
                   for c in cases)
        print(f"{name} {score_range}: {single[0]:.3f} s ({single[1]:.3f} s), "
              f"{whole[0]:.3f} s ({whole[1]:.3f} s) ({whole[0] / single[0]:.2f}× / {whole[1] / single[1]:.2f}×), "
              f"{fast[0]:.3f} s ({fast[1]:.3f} s) ({fast[0] / single[0]:.2f}× / {fast[1] / single[1]:.2f}×), "
              f"{diff:.1e}", flush=True)
    one.close()
    batched.close()



def pruned(name: str, ranges: list[str], threads: int, thresholds: list[float]) -> None:
    """Per range: CPU seconds of a new case's score at a single position, with every prefix read, and
    with prefixes below each threshold left out (``prune_below``); and what leaving them out did."""
    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve(name)
    backend = LlamaCppBackend(path, spec, LlamaCppOptions(n_threads=threads))
    print(f"{name}, {threads} thread(s) (load {os.getloadavg()[0]:.1f}): range, prune_below: CPU s per score "
          "(× single position), continuations read per score, max |score diff| vs every prefix, "
          "max unread_mass / covered_mass", flush=True)
    cases = [CASE.model_copy(update={"actual_output": a}) for a in ANSWERS[:3]]
    for score_range in ranges:
        low, high = (int(v) for v in score_range.split("-"))
        every = build_metric("geval", {**GEVAL, "score_range": [low, high]})
        every.measure(CASE, backend)  # warm: vocabularies indexed, instructions read
        backend.candidate_distribution = lambda request: single_position(backend, request)  # type: ignore[method-assign]
        try:
            single = cpu_seconds(every, backend, cases)[0]
        finally:
            del backend.candidate_distribution
        exact = [every.measure(c, backend) for c in cases]
        print(f"{name} {score_range}: single position {single:.3f} s", flush=True)
        for threshold in [1e-9, *thresholds]:
            metric = build_metric("geval", {**GEVAL, "score_range": [low, high], "prune_below": threshold})
            cpu = cpu_seconds(metric, backend, cases)[0]
            results = [metric.measure(c, backend) for c in cases]
            read = statistics.mean(counted(backend, metric, c) - 1 for c in cases)
            diff = max(abs((r.score or 0.0) - (e.score or 0.0)) for r, e in zip(results, exact, strict=True))
            bound = max(r.details["unread_mass"] / r.details["covered_mass"] for r in results)
            print(f"{name} {score_range} {threshold:g}: {cpu:.3f} s ({cpu / single:.2f}×), {read:.1f} read, "
                  f"{diff:.1e}, {bound:.1e}", flush=True)
    backend.close()

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="smollm2-135m-instruct,gemma-3-270m")
    parser.add_argument("--ranges", default="1-5,0-10")
    parser.add_argument("--top-logprobs", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (--ratios, --prune-below)")
    parser.add_argument("--prune-below", default=None,
                        help="comma-separated thresholds: CPU seconds and score differences with prune_below")
    parser.add_argument("--ratios", action="store_true", help="single position vs whole answers, one at a time "
                        "and batched (CPU seconds)")
    args = parser.parse_args()
    if args.prune_below:
        for name in args.models.split(","):
            pruned(name, args.ranges.split(","), args.threads, [float(t) for t in args.prune_below.split(",")])
        return
    if args.ratios:
        for name in args.models.split(","):
            ratios(name, args.ranges.split(","), args.threads)
        return
    catalog = ModelCatalog(Paths.from_environ(os.environ).home)
    extra = {} if args.top_logprobs is None else {"top_logprobs": args.top_logprobs}
    for name in args.models.split(","):
        spec, path = catalog.resolve(name)
        backend = LlamaCppBackend(path, spec, LlamaCppOptions(**extra))
        for score_range in args.ranges.split(","):
            low, high = (int(v) for v in score_range.split("-"))
            metric = build_metric("geval", {**GEVAL, "score_range": [low, high]})
            result = metric.measure(CASE, backend)
            again = seconds(metric, backend, [CASE] * 3)
            fresh = seconds(metric, backend, [CASE.model_copy(update={"actual_output": a}) for a in ANSWERS[:3]])
            positions = counted(backend, metric)
            print(f"{name} {score_range}: score {result.score:.7f} covered {result.details['covered_mass']:.3f} "
                  f"positions {positions} again {again} new case {fresh}", flush=True)
        backend.close()


if __name__ == "__main__":
    main()

"""What a G-Eval score costs in-process: positions read and seconds per score, per model and range.

    python benchmarks/score_cost.py [--models ...] [--ranges 1-5,0-10,0-100] [--top-logprobs 20] [--ratios]

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
three, and the whole answers' overhead over the single position; one llama.cpp thread. CPU time,
not wall: on a shared machine waiting for a core does not count (state the load with the numbers).
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


def counted(backend: LlamaCppBackend, metric: Metric) -> int:
    """Distributions read for one score: the passes after the prompt (the reply's usage), plus the prompt."""
    replies: list[DistributionReply] = []
    judge = backend.candidate_distribution

    def recording(request: DistributionRequest) -> DistributionReply:
        replies.append(judge(request))
        return replies[-1]

    backend.candidate_distribution = recording  # type: ignore[method-assign]
    try:
        metric.measure(CASE, backend)
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


def cpu_seconds(metric: Metric, backend: LlamaCppBackend, cases: list[TestCase]) -> float:
    """The median CPU seconds of one score over ``cases``."""
    cpu = []
    for case in cases:
        start = time.process_time()
        metric.measure(case, backend)
        cpu.append(time.process_time() - start)
    return statistics.median(cpu)


def ratios(name: str, ranges: list[str]) -> None:
    """Per range: CPU seconds of a new case's score, single position / one at a time / batched."""
    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve(name)
    one = LlamaCppBackend(path, spec)
    batched = LlamaCppBackend(path, spec, LlamaCppOptions(batch_continuations=True))
    print(f"{name} (load {os.getloadavg()[0]:.1f}): range, single position, whole answers one token at a time "
          "(×single), batched (×single), batched vs one at a time |score diff|", flush=True)
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
        print(f"{name} {score_range}: {single:.3f} s, {whole:.3f} s ({whole / single:.2f}×), "
              f"{fast:.3f} s ({fast / single:.2f}×), {diff:.1e}", flush=True)
    one.close()
    batched.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="smollm2-135m-instruct,gemma-3-270m")
    parser.add_argument("--ranges", default="1-5,0-10")
    parser.add_argument("--top-logprobs", type=int, default=None)
    parser.add_argument("--ratios", action="store_true", help="single position vs whole answers, one at a time "
                        "and batched (CPU seconds)")
    args = parser.parse_args()
    if args.ratios:
        for name in args.models.split(","):
            ratios(name, args.ranges.split(","))
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

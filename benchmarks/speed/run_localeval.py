"""The localeval side of the benchmark, through its public Python API.

A case is judged by ``localeval.run.runner.evaluate`` on a one-case dataset with
every metric of the set, so each case gets its own wall time (what a run of
many cases costs is the sum; the prefix ordering that matters here — the four
G-Evals of one article — happens inside a case). The judge is
``CachedBackend(CountingBackend(backend), open_cache(dir))``: a fresh cache
directory makes a cold run, the same one again a fully cached re-run.
:class:`CountingBackend` adds up the calls that reach the model and the
``usage`` each reply reports; in-process, :func:`count_forward_tokens` also
counts the tokens the model really evaluates (after localeval's reuse of a
shared KV prefix), prompt and generated alike.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for the shared counting wrapper

from counting import CountingBackend, Counts  # noqa: E402 -- after the path is set

from localeval import (
    CachedBackend,
    Dataset,
    Metric,
    RunOptions,
    TestCase,
    build_metric,
    evaluate,
    make_backend,
    open_cache,
)


def localeval_metrics(specs: list[dict[str, Any]], include_reason: bool) -> list[Metric]:
    """The set's metrics: G-Evals with the given steps only (as deepeval gets them), as presets or plain."""
    metrics = []
    for spec in specs:
        if spec["kind"] == "geval":
            options = {"criteria": None, "evaluation_steps": spec["evaluation_steps"], "include_reason": include_reason}
            if spec.get("preset", True):
                metrics.append(build_metric(f"geval:{spec['name']}", options))
            else:  # a plain geval with the preset's steps, range and fields: the default layout
                plain = {key: spec[key] for key in ("evaluation_params", "score_range")}
                metrics.append(build_metric("geval", {**options, **plain, "name": spec["name"]}))
        else:
            metrics.append(build_metric(spec["kind"], {"include_reason": include_reason}))
    return metrics


def count_forward_tokens(backend: Any, counts: Counts) -> None:
    """Count every token the in-process model evaluates (its ``Llama.eval``), into ``counts``.

    A measuring hook on a private attribute of the backend: the benchmark's, not
    an API. ``create_completion`` evaluates generated tokens through the same method.
    """
    llm = backend._llm
    evaluate_tokens = llm.eval

    def counted(tokens: Any) -> None:
        counts.forward_tokens += len(tokens)
        evaluate_tokens(tokens)

    llm.eval = counted


class Judge:
    """One localeval backend, counted; ``cached(dir)`` gives the judge a run uses."""

    def __init__(self, name: str, backend: Any) -> None:
        self.name = name
        self.backend = backend
        self.counting = CountingBackend(backend)
        if name == "localeval":
            count_forward_tokens(backend, self.counting.counts)

    @classmethod
    def in_process(cls, model: Path, spec: Any, threads: int) -> Judge:
        return cls("localeval", make_backend("llama.cpp", model=spec.name, n_threads=threads))

    @classmethod
    def http(cls, proxy_url: str, model_id: str) -> Judge:
        backend = make_backend("llama-cpp-python", base_url=f"{proxy_url}/v1", model=model_id)
        backend.capabilities  # noqa: B018 -- its one-time probe of log-probabilities, before any timing
        return cls("localeval-http", backend)

    def cached(self, directory: Path) -> CachedBackend:
        return CachedBackend(self.counting, open_cache(directory))

    def close(self) -> None:
        self.backend.close()


def measure_case(case: dict[str, Any], metrics: list[Metric], judge: CachedBackend,
                 counting: CountingBackend) -> dict[str, Any]:
    """One case through ``evaluate``: seconds, scores, errors, and what reached the model."""
    test_case = TestCase(name=case["name"], input=case["input"], actual_output=case["actual_output"],
                         retrieval_context=case["retrieval_context"])
    before, first_call = counting.snapshot(), len(counting.calls)
    start = time.perf_counter()
    report = evaluate(Dataset.from_cases([test_case]), metrics, judge, options=RunOptions())
    seconds = time.perf_counter() - start
    after = counting.snapshot()
    results = report.cases[0].results
    return {
        "seconds": seconds,
        "scores": {r.metric: r.score for r in results},
        "errors": {r.metric: r.error for r in results if r.error is not None},
        "model_calls": after.calls - before.calls,
        "prompt_tokens": after.prompt_tokens - before.prompt_tokens,
        "completion_tokens": after.completion_tokens - before.completion_tokens,
        "forward_tokens": after.forward_tokens - before.forward_tokens,
        "calls": counting.calls[first_call:],
    }

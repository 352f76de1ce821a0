"""localeval's metrics as a promptfoo assertion: ``get_assert(output, context)``.

promptfoo calls ``get_assert`` from the Python file an assertion names (``type: python``,
``value: file://localeval_assert.py``; that file holds one line,
``from localeval.integrations.promptfoo import get_assert``). The assertion's ``config`` names the
metric or metrics, their options and the judge (:mod:`localeval.integrations.promptfoo_inputs`); the test's
``vars`` and promptfoo's ``output`` are the case. See docs/promptfoo.md.

It returns promptfoo's ``GradingResult`` as a dict (pass, score, reason, namedScores, componentResults,
tokensUsed, metadata) and never raises into promptfoo: a bad option, a bad var or a judge that cannot load
is a failing result whose reason says what, in one line.

Each judge is loaded once per process (:func:`process_judge`) behind localeval's cache, in the folder the
CLI uses (``LOCALEVAL_CACHE_DIR``, else the XDG cache folder), so a second promptfoo run of the same cases
makes no model call. :func:`grade` is the same assertion with judges from elsewhere (a test's scripted judge).
"""

from __future__ import annotations

import atexit
import io
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from rich.console import Console

from localeval.backends.base import Backend, JudgeUsage
from localeval.backends.options import BackendOptions
from localeval.config import CacheConfig
from localeval.data.case import TestCase
from localeval.data.results import MetricResult
from localeval.errors import LocalevalError
from localeval.integrations.promptfoo_inputs import Assertion, case_of, read_assertion
from localeval.judge import load_judge
from localeval.metrics.base import Metric
from localeval.paths import Paths
from localeval.run.execution import unexpected
from localeval.run.panel import JudgePanel
from localeval.testing.assertions import describe, prepared

__all__ = ["JudgeLoader", "close_judges", "get_assert", "grade", "process_judge"]

#: Gives the judge a table describes: (its options, the cache settings, where the table is, for messages).
JudgeLoader = Callable[[BackendOptions, CacheConfig, str], Backend]
#: What a lower-is-better metric's line adds: promptfoo shows its score as it is.
LOWER_IS_BETTER = "lower is better for this metric: 0 is its best score"


def get_assert(output: Any, context: Mapping[str, Any]) -> dict[str, Any]:
    """promptfoo's entry point: ``output`` judged by the metrics ``context["config"]`` names, with judges
    loaded once per process (:func:`process_judge`). Returns a GradingResult dict; never raises for bad input."""
    return grade(output, context, process_judge)


def grade(output: Any, context: Mapping[str, Any], load: JudgeLoader) -> dict[str, Any]:
    """:func:`get_assert` with the judges ``load`` gives (a test passes one that returns a scripted judge)."""
    if not isinstance(context, Mapping):
        return _failure(f"context: expected promptfoo's mapping, got {type(context).__name__}")
    try:
        assertion = read_assertion(context.get("config"))
        case = case_of(output, context, assertion)
        panel = _panel(assertion, load)
        results = [_measure(metric, case, panel) for metric in assertion.metrics]
    except LocalevalError as err:
        return _failure(str(err))
    return _grading_result(results, assertion.metrics)


def _failure(problem: str) -> dict[str, Any]:
    """A failing GradingResult for input localeval cannot judge: the problem, on one line."""
    return {"pass": False, "score": 0.0, "reason": "localeval: " + " ".join(problem.split())}


def _grading_result(results: Sequence[MetricResult], metrics: Sequence[Metric]) -> dict[str, Any]:
    """promptfoo's GradingResult for one case's results (in the order of ``metrics``).

    One metric: its pass, its score (0 for a metric that could not score, whose reason says so) and its line
    (:func:`localeval.testing.assertions.describe`). Several: pass when every one passes, the score is the
    share that passed, and each is a component result. ``namedScores`` holds every score there is, by
    metric name; ``metadata["localeval"]`` the results themselves and what the judges cost.
    """
    components = [_component(result, metric) for result, metric in zip(results, metrics)]
    usage = sum((r.usage or JudgeUsage() for r in results), JudgeUsage())
    if len(components) == 1:
        graded = dict(components[0])
    else:
        passed = sum(c["pass"] for c in components)
        header = f"{passed} of {len(components)} localeval metrics passed (score: the share that passed)"
        graded = {"pass": passed == len(components), "score": passed / len(components),
                  "reason": "\n".join([header, *(c["reason"] for c in components)]), "componentResults": components}
    graded["namedScores"] = {r.metric: r.score for r in results if r.score is not None}
    graded["tokensUsed"] = {"total": usage.prompt_tokens + usage.completion_tokens,
                            "prompt": usage.prompt_tokens, "completion": usage.completion_tokens}
    graded["metadata"] = {"localeval": {"results": [r.model_dump(mode="json") for r in results],
                                        "judge_usage": usage.model_dump(mode="json")}}
    return graded


def _component(result: MetricResult, metric: Metric) -> dict[str, Any]:
    reason = describe(result, metric)
    if result.lower_is_better and result.score is not None:
        reason += f" ({LOWER_IS_BETTER})"
    return {"pass": result.passed is True, "score": result.score if result.score is not None else 0.0,
            "reason": reason}


def _panel(assertion: Assertion, load: JudgeLoader) -> JudgePanel:
    loaded = {name: load(options, assertion.cache, assertion.where(name)) for name, options in assertion.judges.items()}
    default = loaded.pop(None, None)
    return JudgePanel.of(assertion.metrics, default, {name: j for name, j in loaded.items() if name is not None})


def _measure(metric: Metric, case: TestCase, panel: JudgePanel) -> MetricResult:
    """One metric's result on the case, with what its judge calls cost (as a run records it)."""
    judge = panel.judge_of(metric)
    before = panel.thread_usage()
    ready = prepared(metric, judge)  # G-Eval's steps once per process (counted here); a calibrated threshold read
    try:
        result = ready.measure(case, judge)
    except Exception as err:  # noqa: BLE001 -- a metric that raises (a plugin's bug) is that metric's error
        result = unexpected(ready, err)
    return result if judge is None else result.model_copy(update={"usage": panel.thread_usage() - before})


# -- judges, once per process ------------------------------------------------------------

_JUDGES: dict[str, Backend] = {}
_LOCK = threading.Lock()
_OPEN = ExitStack()  #: closes the loaded judges and their caches: at exit, or by close_judges
_closed_at_exit = False


def process_judge(options: BackendOptions, cache: CacheConfig, where: str) -> Backend:
    """The judge ``options`` describes, loaded on first use and kept for this process, behind the cache
    (in the CLI's folder, ``LOCALEVAL_CACHE_DIR`` or the XDG one, unless ``cache`` says otherwise).

    A judge that fails to load is not kept: the error (naming the model and the command that pulls it)
    reaches the caller, and the next call tries again.
    """
    global _closed_at_exit
    paths = Paths.from_environ(os.environ)
    key = json.dumps([options.model_dump(mode="json"), cache.model_dump(mode="json"), str(paths.cache),
                      str(paths.home)], sort_keys=True)
    with _LOCK:
        judge = _JUDGES.get(key)
        if judge is None:
            with ExitStack() as stack:
                judge = load_judge(options, cache, paths, os.environ, stack, Console(file=io.StringIO()),
                                   where=where)
                _OPEN.enter_context(stack.pop_all())  # loaded: kept open past this block
            if not _closed_at_exit:
                atexit.register(close_judges)
                _closed_at_exit = True
            _JUDGES[key] = judge
        return judge


def close_judges() -> None:
    """Close every judge :func:`process_judge` loaded, and their caches; the next call loads afresh."""
    with _LOCK:
        _JUDGES.clear()
        _OPEN.close()

"""The runner: order of work, threads, fail-fast, unexpected errors, journal, events."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import ClassVar

import pytest
from scripted import FULL_CAPABILITIES, ScriptedBackend

from localeval.backends.base import Capabilities, Fingerprint, JudgeUsage, Usage
from localeval.backends.cache import CachedBackend, open_cache
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.errors import BackendError, ConfigError, DatasetError
from localeval.metrics import GEval
from localeval.metrics.base import Metric, Verdict
from localeval.run.events import Events, MetricFinished, MetricStarted, RunFinished, RunStarted
from localeval.run.journal import Journal, JournalHeader
from localeval.run.runner import RunInterrupted, RunOptions, evaluate
from localeval.run.schedule import Task, plan


class Probe(Metric):
    """Scores len(actual_output) / 10; counts how many run at once, each calling ``CONCURRENCY.meet``
    with its output while it runs (a barrier's wait, say); may fail on cue."""

    kind: ClassVar[str] = "probe"
    error_on: str | None = None  #: a BackendError for this output
    crash_on: str | None = None  #: a ValueError (a bug) for this output
    interrupt_on: str | None = None  #: Ctrl-C while measuring this output

    def required_fields(self) -> tuple[str, ...]:
        return ("input", "actual_output")

    def verdict(self, case: TestCase, judge: object) -> Verdict:
        output = case.actual_output or ""
        with CONCURRENCY.running():
            CONCURRENCY.meet(output)
        if output == self.error_on:
            raise BackendError("scripted failure")
        if output == self.crash_on:
            raise ValueError("boom")
        if output == self.interrupt_on:
            raise KeyboardInterrupt
        return Verdict(score=min(len(output) / 10, 1.0), reason=f"{len(output)} characters")


class Concurrency:
    """How many run at once now, and the most at once; ``meet`` is called by each while it runs."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self.lock = threading.Lock()
        self.meet: Callable[[str], object] = lambda output: None
        self.threads: set[str] = set()  #: the names of the threads that ran one

    def running(self) -> Concurrency:
        return self

    def __enter__(self) -> None:
        with self.lock:
            self.threads.add(threading.current_thread().name)
            self.now += 1
            self.most = max(self.most, self.now)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1


CONCURRENCY = Concurrency()


@pytest.fixture(autouse=True)
def fresh_concurrency() -> None:
    CONCURRENCY.now = CONCURRENCY.most = 0
    CONCURRENCY.meet = lambda output: None
    CONCURRENCY.threads.clear()


def in_flight_together(parties: int) -> None:
    """From now on each Probe waits until ``parties`` of them run at once (or the barrier breaks)."""
    barrier = threading.Barrier(parties, timeout=30)
    CONCURRENCY.meet = lambda output: barrier.wait()


def dataset(*outputs: str, inputs: str = "ab") -> Dataset:
    return Dataset.from_cases(
        [TestCase(input=inputs[i % len(inputs)], actual_output=o, name=f"c{i}") for i, o in enumerate(outputs)]
    )


def finished(events: list[object]) -> list[tuple[int, str]]:
    return [(e.case_index, e.result.metric) for e in events if isinstance(e, MetricFinished)]


def scores(report) -> list[list[float | None]]:
    return [[r.score for r in case.results] for case in report.cases]


def test_work_is_ordered_by_prompt_start_and_reported_in_input_order() -> None:
    seen: list[object] = []
    report = evaluate(dataset("x", "xx", "xxx", "xxxx"), [Probe()], events=Events(seen.append))
    # prompt_start is "probe\n<input>\n<output>": the cases with input "a" (0, 2) come first
    assert finished(seen) == [(0, "probe"), (2, "probe"), (1, "probe"), (3, "probe")]
    assert [c.index for c in report.cases] == [0, 1, 2, 3]
    assert scores(report) == [[0.1], [0.2], [0.3], [0.4]]


def test_input_order_is_case_by_case() -> None:
    seen: list[object] = []
    evaluate(dataset("x", "xx"), [Probe(), Probe(name="p2")], options=RunOptions(order="input"),
             events=Events(seen.append))
    assert finished(seen) == [(0, "probe"), (0, "p2"), (1, "probe"), (1, "p2")]


def test_plan_groups_calls_that_share_a_document() -> None:
    metric = GEval(criteria="c", evaluation_steps=("s",), evaluation_params=("input", "actual_output"))
    cases = [TestCase(input=doc, actual_output=summary)
             for summary in ("one", "two") for doc in ("doc B", "doc A", "doc C")]
    order = plan(cases, [metric])
    assert [cases[t.case].input for t in order] == ["doc A", "doc A", "doc B", "doc B", "doc C", "doc C"]
    assert plan(cases, [metric], "input") == [Task(i, 0) for i in range(6)]


def test_threads_keep_this_many_in_flight_and_events_arrive_on_the_calling_thread() -> None:
    threads: set[str] = set()
    seen: list[object] = []

    def listen(event: object) -> None:
        seen.append(event)
        if isinstance(event, MetricFinished):
            threads.add(threading.current_thread().name)

    in_flight_together(4)
    report = evaluate(dataset(*["x" * i for i in range(1, 9)]), [Probe()],
                      options=RunOptions(workers=4), events=Events(listen))
    assert CONCURRENCY.most == 4
    assert threads == {threading.current_thread().name}
    assert scores(report) == [[i / 10] for i in range(1, 9)]
    assert sorted(finished(seen)) == [(i, "probe") for i in range(8)]


class Timed(Probe):
    """A Probe that logs when each output's measure starts and ends."""

    log: ClassVar[list[tuple[str, float, float]]] = []

    def verdict(self, case: TestCase, judge: object) -> Verdict:
        start = time.monotonic()
        verdict = super().verdict(case, judge)
        self.log.append((case.actual_output or "", start, time.monotonic()))
        return verdict


def test_each_thread_takes_neighbours_in_prefix_order_one_after_the_other() -> None:
    Timed.log.clear()
    outputs = [f"{n:02d}" for n in range(16)]  # plan order is this order (one input)
    in_flight_together(2)  # the two threads run their tasks side by side
    evaluate(dataset(*outputs, inputs="a"), [Timed()], options=RunOptions(workers=2))
    when = {output: (start, end) for output, start, end in Timed.log}
    # 16 tasks, 2 threads: groups of 2 (at least 4 per thread). A group's second task starts
    # after its first ends, so calls sharing a prefix follow each other on one judge slot;
    # the two threads start two groups at once.
    for first, second in zip(outputs[::2], outputs[1::2], strict=True):
        assert when[second][0] >= when[first][1]
    assert when["02"][0] < when["00"][1]
    assert CONCURRENCY.most == 2


def test_the_judges_parallel_requests_sets_the_threads() -> None:
    judge = ScriptedBackend(capabilities=FULL_CAPABILITIES.model_copy(update={"parallel_requests": 3}))
    in_flight_together(3)
    evaluate(dataset(*["x"] * 6), [Probe()], judge)
    assert CONCURRENCY.most == 3
    CONCURRENCY.meet = lambda output: None
    CONCURRENCY.threads.clear()
    evaluate(dataset(*["x"] * 3), [Probe()], ScriptedBackend())
    assert CONCURRENCY.most == 3  # the default judge serves one request at a time; no new peak
    assert CONCURRENCY.threads == {threading.current_thread().name}  # all on this thread: one at a time


def test_an_error_is_that_cases_error_and_the_run_goes_on() -> None:
    report = evaluate(dataset("x", "bad", "crash", "xx"), [Probe(error_on="bad", crash_on="crash")])
    results = [case.results[0] for case in report.cases]
    assert [r.error for r in results[:2]] == [None, "BackendError: scripted failure"]
    assert results[2].error == "unexpected ValueError: boom"
    assert "raise ValueError" in results[2].details["traceback"]
    assert results[3].score == 0.2
    assert (report.summary[0].passed, report.summary[0].failed, report.summary[0].errored) == (0, 2, 2)


@pytest.mark.parametrize("workers", [1, 3])
def test_fail_fast_stops_at_the_first_error(workers: int) -> None:
    outputs = ["x", "bad", *["xx"] * 10]
    recorded = threading.Event()  # the error is back on this thread: the run has stopped starting tasks
    if workers > 1:  # the others in flight with "bad" finish after its error, as slower calls would
        CONCURRENCY.meet = lambda output: output == "bad" or recorded.wait(30)
    report = evaluate(dataset(*outputs), [Probe(error_on="bad")],
                      options=RunOptions(order="input", fail_fast=True, workers=workers),
                      events=Events(lambda e: isinstance(e, MetricFinished) and e.result.error and recorded.set()))
    errors = [case.results[0].error for case in report.cases]
    assert errors[1] == "BackendError: scripted failure"
    not_run = [e for e in errors if e and e.startswith("not run: --fail-fast stopped the run at the error of case 2")]
    computed = len(outputs) - len(not_run)
    assert computed <= 2 + workers  # what was in flight when the error came back finished; nothing new started
    assert not_run and errors[computed:] == not_run


def test_ctrl_c_stops_the_run_and_what_finished_is_journaled(tmp_path) -> None:
    journal = new_journal(tmp_path, cases=4)
    with pytest.raises(RunInterrupted) as stop, journal:
        evaluate(dataset("x", "xx", "stop", "xxx"), [Probe(interrupt_on="stop")],
                 options=RunOptions(order="input"), journal=journal)
    assert (stop.value.finished, stop.value.total) == (2, 4)
    with Journal.open(journal.path) as reopened:
        assert sorted(reopened.done) == [(0, "probe"), (1, "probe")]


def test_results_in_the_journal_are_not_computed_again(tmp_path) -> None:
    journal = new_journal(tmp_path, cases=4)
    with journal:
        first = evaluate(dataset("x", "xx"), [Probe()], journal=journal)
    seen: list[object] = []
    with Journal.open(journal.path) as reopened:
        again = evaluate(dataset("x", "xx"), [Probe()], journal=reopened, events=Events(seen.append))
    assert finished(seen) == []
    assert isinstance(seen[0], RunStarted) and (seen[0].total, seen[0].resumed) == (2, 2)
    assert again.cases == first.cases and again.run_id == first.run_id == "run1"
    assert again.stats.resumed == 2


def test_events_in_order_with_each_results_cost(tmp_path) -> None:
    judge = ScriptedBackend(logprobs=[{"1": math.log(0.25), "2": math.log(0.75)}])
    metric = GEval(evaluation_steps=("s",), score_range=(1, 2), include_reason=False)
    seen: list[object] = []
    with open_cache(tmp_path / "cache") as store:
        cached = CachedBackend(judge, store)
        evaluate(Dataset.from_cases([TestCase(input="q", actual_output="a")] * 2), [metric], cached,
                 options=RunOptions(order="input"), events=Events(seen.append))
    assert [type(e) for e in seen] == [RunStarted, MetricStarted, MetricFinished, MetricStarted, MetricFinished,
                                       RunFinished]
    costs = [(e.model_calls, e.cache_hits) for e in seen if isinstance(e, MetricFinished)]
    assert costs == [(1, 0), (0, 1)]
    assert seen[-1].report.stats.model_calls == 1


def test_each_result_and_the_run_count_the_judges_tokens_with_or_without_a_cache(tmp_path) -> None:
    """A result's usage is what its calls cost; a cache hit costs no tokens; the run adds them up,
    its preparation (G-Eval's steps) included."""
    cases = Dataset.from_cases([TestCase(input="q", actual_output="a")] * 2)
    metric = GEval(criteria="c", score_range=(1, 2), include_reason=False)
    scripted = {"json_values": [{"steps": ["s"]}], "usage": Usage(prompt_tokens=100, completion_tokens=3)}
    distribution = {"1": math.log(0.25), "2": math.log(0.75)}

    bare = evaluate(cases, [metric], ScriptedBackend(logprobs=[distribution] * 2, **scripted),
                    options=RunOptions(order="input"))
    usage = [c.results[0].usage for c in bare.cases]
    assert usage == [JudgeUsage(model_calls=1, prompt_tokens=100, completion_tokens=3)] * 2
    stats = bare.stats
    assert (stats.model_calls, stats.cache_hits, stats.prompt_tokens, stats.completion_tokens) == (3, 0, 300, 9)

    with open_cache(tmp_path / "cache") as store:
        cached = CachedBackend(ScriptedBackend(logprobs=[distribution], **scripted), store)
        report = evaluate(cases, [metric], cached, options=RunOptions(order="input"))
    usage = [c.results[0].usage for c in report.cases]
    assert usage == [JudgeUsage(model_calls=1, prompt_tokens=100, completion_tokens=3), JudgeUsage(cache_hits=1)]
    stats = report.stats
    assert (stats.model_calls, stats.cache_hits, stats.prompt_tokens, stats.completion_tokens) == (2, 1, 200, 6)


def test_a_listener_may_unsubscribe_and_subscribe() -> None:
    events = Events()
    heard: list[str] = []
    remove = events.subscribe(lambda e: heard.append(type(e).__name__))
    events.subscribe(lambda e: events.subscribe(lambda _: heard.append("late")) if isinstance(e, RunStarted) else None)
    events.emit(RunStarted("r", 0, (), 0, 0))
    remove()
    events.emit(RunStarted("r", 0, (), 0, 0))
    assert heard == ["RunStarted", "late"]


def new_journal(tmp_path, cases: int) -> Journal:
    header = JournalHeader(run_id="run1", created_at="2026-11-22T00:00:00+00:00", config={},
                           config_source="<command line>", dataset_sha256="0" * 64, cases=cases, metrics=["probe"])
    return Journal.create(tmp_path / "run" / "journal.jsonl", header)


def test_capabilities_default_to_one_request_at_a_time() -> None:
    assert Capabilities(json_schema=True, distribution=True, multi_token_candidates=True).parallel_requests == 1


# -- per-metric judges -------------------------------------------------------------------------


def named_judge(model: str, *distributions: dict[str, float], parallel: int = 1) -> ScriptedBackend:
    return ScriptedBackend(
        logprobs=list(distributions),
        capabilities=FULL_CAPABILITIES.model_copy(update={"parallel_requests": parallel}),
        fingerprint=Fingerprint(kind="scripted", model=model, runtime="scripted 1"),
        usage=Usage(prompt_tokens=10, completion_tokens=1),
    )


def test_each_metric_asks_the_judge_it_names_and_the_report_records_every_judge(tmp_path) -> None:
    low, high = {"1": math.log(0.9), "2": math.log(0.1)}, {"1": math.log(0.1), "2": math.log(0.9)}
    default, big = named_judge("small", low, low), named_judge("big", high, high)
    options = {"evaluation_steps": ("s",), "score_range": (1, 2), "include_reason": False}
    metrics = [GEval(name="quick", **options), GEval(name="careful", judge="big", **options)]
    cases = Dataset.from_cases([TestCase(input="q", actual_output="a"), TestCase(input="r", actual_output="b")])
    with open_cache(tmp_path / "cache") as store:  # one store: the fingerprints keep the judges' answers apart
        report = evaluate(cases, metrics, CachedBackend(default, store), judges={"big": CachedBackend(big, store)})
    assert [[r.raw_score for r in c.results] for c in report.cases] == [[pytest.approx(1.1), pytest.approx(1.9)]] * 2
    assert (len(default.requests), len(big.requests)) == (2, 2)
    assert report.backend is not None and report.backend.model == "small"
    assert {name: f.model for name, f in report.judges.items()} == {"big": "big"}
    assert report.stats.model_calls == 4 and report.stats.prompt_tokens == 40
    assert metrics[1].judge_name == "big" and metrics[1].model_dump(by_alias=True)["judge"] == "big"


def test_a_metric_naming_a_judge_that_is_not_there_stops_the_run_before_any_call() -> None:
    judge = named_judge("small")
    metric = GEval(name="careful", judge="big", evaluation_steps=("s",))
    with pytest.raises(ConfigError, match=r"metric 'careful': judge 'big' is not configured \(judges: other\)"):
        evaluate(dataset("a"), [metric], judge, judges={"other": named_judge("other")})
    with pytest.raises(ConfigError, match="metric 'geval' needs a judge, and the run has no default judge"):
        evaluate(dataset("a"), [GEval(evaluation_steps=("s",))], None, judges={"other": named_judge("other")})
    assert judge.requests == []


class JudgedProbe(Probe):
    """A Probe that also asks its judge one distribution, so each judge's concurrency shows."""

    kind: ClassVar[str] = "judged_probe"
    needs_judge: ClassVar[bool] = True

    def verdict(self, case: TestCase, judge: object) -> Verdict:
        LANES[self.judge_name].__enter__()
        try:
            LANES[self.judge_name].meet(case.actual_output or "")
        finally:
            LANES[self.judge_name].__exit__()
        return super().verdict(case, judge)


LANES: dict[str | None, Concurrency] = {}


def test_each_judge_keeps_its_own_number_of_requests_in_flight() -> None:
    LANES.clear()
    LANES.update({None: Concurrency(), "wide": Concurrency()})
    wide = threading.Barrier(3, timeout=30)  # the wide judge's three in flight at once, or this breaks
    LANES["wide"].meet = lambda output: wide.wait()
    one, three = named_judge("one", parallel=1), named_judge("three", parallel=3)
    metrics = [JudgedProbe(name="a"), JudgedProbe(name="b", judge="wide")]
    report = evaluate(dataset(*["x"] * 6), metrics, one, judges={"wide": three})
    assert not report.any_errored
    assert (LANES[None].most, LANES["wide"].most) == (1, 3)


def test_a_run_over_no_cases_is_an_error_not_a_pass() -> None:
    with pytest.raises(DatasetError, match="no test cases"):
        evaluate(Dataset.from_cases([]), [Probe()])

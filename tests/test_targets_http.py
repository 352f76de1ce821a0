"""A target behind a real HTTP server on 127.0.0.1 (servers.EchoServer): as many requests in
flight as the backend's max_concurrency, each output on its own golden, the cache key unchanged,
and Ctrl-C keeping what was in flight."""

from __future__ import annotations

import io
import json
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from servers import FAST_RETRIES, EchoServer

from localeval.backends import make_backend
from localeval.backends.base import Backend
from localeval.backends.cache import CachedBackend, open_cache
from localeval.cli import session
from localeval.config import RunConfig
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.paths import Paths
from localeval.run.journal import Journal
from localeval.targets import Generation, PromptTemplate, TargetOptions, generate_outputs


class Said(io.StringIO):
    """A console's file: ``seen`` is set once what was written holds ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.seen = text, threading.Event()

    def write(self, written: str) -> int:
        count = super().write(written)
        if self.text in self.getvalue():
            self.seen.set()
        return count


QUESTIONS = ["q0", "q1", "q2", "q3", "q4", "FAIL q5", "q6", "q7", "q8"]
OPTIONS = TargetOptions(name="echo", user="Q: {{ input }}")


def goldens() -> Dataset:
    """The questions as goldens, and one case at the end that has its output already."""
    cases = [TestCase(input=q) for q in QUESTIONS] + [TestCase(input="given", actual_output="mine")]
    return Dataset(cases, [f"g.jsonl:{i}" for i in range(1, len(cases) + 1)])


@pytest.fixture
def server() -> Iterator[EchoServer]:
    echo = EchoServer()
    yield echo
    echo.close()


def target(server: EchoServer, parallel: int) -> Backend:
    return make_backend("openai-compatible", base_url=server.url, max_concurrency=parallel, **FAST_RETRIES)


def test_max_concurrency_requests_are_in_flight_and_each_output_lands_on_its_golden(server: EchoServer) -> None:
    first_four = threading.Barrier(4, timeout=30)  # four requests in flight at once, or this breaks
    server.hold = lambda count: count <= 4 and first_four.wait()
    recorded: list[tuple[int, str | None, bool]] = []
    progress: list[tuple[int, int]] = []
    start = time.monotonic()
    outputs = generate_outputs(
        goldens(), OPTIONS, PromptTemplate(OPTIONS), target(server, 4),
        record=lambda i, g: recorded.append((i, g.output, threading.current_thread() is threading.main_thread())),
        progress=lambda finished, total: progress.append((finished, total)),
    )
    elapsed = time.monotonic() - start
    assert server.peak == 4
    assert Counter(server.prompts) == Counter(f"Q: {q}" for q in QUESTIONS)  # each asked once
    assert [c.actual_output for c in outputs.dataset.cases] == [
        "echo: Q: q0", "echo: Q: q1", "echo: Q: q2", "echo: Q: q3", "echo: Q: q4", None,
        "echo: Q: q6", "echo: Q: q7", "echo: Q: q8", "mine",
    ]
    assert outputs.failed == {5: f"the target failed: {server.url}/chat/completions answered HTTP 400: "
                                 "'{\"error\": {\"message\": \"the prompt asked to fail\"}}'"}
    # recorded on this thread, once per golden, each with its own output
    assert sorted(recorded) == [(i, None if i == 5 else f"echo: Q: {QUESTIONS[i]}", True) for i in range(9)]
    assert progress == [(n, 9) for n in range(10)]
    record = outputs.record
    assert (record.generated, record.errored, record.given, record.resumed) == (8, 1, 1, 0)
    assert 0 < record.duration_s <= elapsed  # the generation's wall time


def test_a_target_that_serves_one_at_a_time_is_asked_in_dataset_order(server: EchoServer) -> None:
    second = threading.Event()
    server.arrived = lambda count: count == 2 and second.set()
    server.hold = lambda count: count == 1 and second.wait(0.5)  # a second request would come now, were it sent
    recorded: list[int] = []
    generate_outputs(goldens(), OPTIONS, PromptTemplate(OPTIONS), target(server, 1),
                     record=lambda i, g: recorded.append(i))
    assert server.peak == 1 and second.is_set()
    assert server.prompts == [f"Q: {q}" for q in QUESTIONS]
    assert recorded == list(range(9))


def test_the_cache_key_does_not_depend_on_how_many_are_in_flight(server: EchoServer, tmp_path: Path) -> None:
    with open_cache(tmp_path) as store:
        four = CachedBackend(target(server, 4), store)
        first = generate_outputs(goldens(), OPTIONS, PromptTemplate(OPTIONS), four)
        one = CachedBackend(target(server, 1), store)
        again = generate_outputs(goldens(), OPTIONS, PromptTemplate(OPTIONS), one)
    assert [c.actual_output for c in again.dataset.cases] == [c.actual_output for c in first.dataset.cases]
    assert (one.stats.hits, one.stats.model_calls) == (8, 0)  # a call that fails counts as none
    assert Counter(server.prompts)["Q: FAIL q5"] == 2 and len(server.prompts) == 10


def test_ctrl_c_keeps_what_was_in_flight_and_a_resumed_run_asks_for_the_rest_only(server: EchoServer) -> None:
    journal: dict[int, Generation] = {}

    def record_then_interrupt(index: int, generation: Generation) -> None:
        journal[index] = generation
        if len(journal) == 2:
            raise KeyboardInterrupt  # Ctrl-C as the second output is journaled, others in flight

    with pytest.raises(KeyboardInterrupt):
        generate_outputs(goldens(), OPTIONS, PromptTemplate(OPTIONS), target(server, 4), record=record_then_interrupt)
    assert 2 < len(journal) < len(QUESTIONS)  # those in flight were kept; nothing new started
    asked = len(server.prompts)
    assert asked == len(journal)
    rest = generate_outputs(goldens(), OPTIONS, PromptTemplate(OPTIONS), target(server, 4), done=journal)
    assert Counter(server.prompts) == Counter(f"Q: {q}" for q in QUESTIONS)  # no golden asked twice
    assert (rest.record.resumed, rest.record.generated + rest.record.errored) == (asked, len(QUESTIONS) - asked)
    assert [c.actual_output for c in rest.dataset.cases][:5] == [f"echo: Q: q{i}" for i in range(5)]


# -- localeval run: the journal, Ctrl-C (a real SIGINT), --resume ------------------------------

CONFIG = """
[dataset]
path = "goldens.jsonl"

[target]
name = "echo"
user = "Q: {{{{ input }}}}"

[target.backend]
kind = "openai-compatible"
base_url = "{url}"
max_concurrency = 3
max_attempts = 1

[cache]
enabled = false

[[metrics]]
metric = "exact_match"
"""


def test_a_run_interrupted_with_requests_in_flight_resumes_without_asking_twice(tmp_path: Path) -> None:
    said = Said("Interrupted: finishing")
    first_three = threading.Barrier(3, timeout=30)  # the run's three requests in flight at once, or this breaks

    def ctrl_c_at_the_fourth(count: int) -> None:
        if count == 4:
            os.kill(os.getpid(), signal.SIGINT)  # Python raises KeyboardInterrupt on the main thread

    def hold(count: int) -> None:
        if count <= 3:
            first_three.wait()
        else:  # the fourth (and any sent with it) is answered once the run has taken the Ctrl-C
            said.seen.wait(30)

    echo = EchoServer(arrived=ctrl_c_at_the_fourth, hold=hold)
    try:
        goldens = [{"name": q, "input": q, "expected_output": f"echo: Q: {q}"} for q in QUESTIONS]
        (tmp_path / "goldens.jsonl").write_text("".join(json.dumps(g) + "\n" for g in goldens))
        (tmp_path / "eval.toml").write_text(CONFIG.format(url=echo.url))
        paths = Paths(home=tmp_path / "home", cache=tmp_path / "cache")
        quiet = Console(file=said)
        config = RunConfig.load(tmp_path / "eval.toml")
        flags = session.RunFlags(run_dir=tmp_path / "run")
        assert session.run(config, paths, quiet, quiet, {}, flags) == session.EXIT_INTERRUPTED
        with Journal.open(tmp_path / "run" / "journal.jsonl", keep_errors=True) as journal:
            kept = sorted(index for _, index in journal.generated)
        assert echo.peak == 3
        assert len(kept) == len(echo.prompts) >= 4  # the request that was cut short is journaled too
        # --keep-errors: the FAIL golden's error stands (without it, a resume asks for it again, by design)
        resumed = session.RunFlags(resume=str(tmp_path / "run"), keep_errors=True)
        assert session.run(config, paths, quiet, quiet, {}, resumed) == session.EXIT_ERRORED  # the FAIL golden
    finally:
        echo.close()
    assert Counter(echo.prompts) == Counter(f"Q: {q}" for q in QUESTIONS)  # no golden asked twice
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert [c["inputs"].get("actual_output") for c in report["cases"]] == [
        None if q.startswith("FAIL") else f"echo: Q: {q}" for q in QUESTIONS]
    assert [c["results"][0]["score"] for c in report["cases"]] == [None if q.startswith("FAIL") else 1.0
                                                                   for q in QUESTIONS]
    target = report["targets"][0]  # the failed golden counts as failed, whichever run asked
    assert (target["resumed"], target["generated"], target["errored"]) == (len(kept), 8 - len(kept), 1)

"""Fault injection at the run level (issue 5): each fault is a per-case error, and the run goes on.

* A scripted server (httpx.MockTransport) that picks its answer by the case a
  request is about: OK, HTTP 500 on every retry, a reply slower than the timeout,
  a truncated JSON reply, a body that is not JSON, OK again.
* A real slow server on 127.0.0.1, for a real read timeout.
* llama-cpp-python's real server, killed (SIGKILL) after the second case (the slow tier).
* No server at all: the backend, and ``localeval run``, say so in one line.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx
import pytest
from command_line import localeval
from servers import (
    FAST_RETRIES,
    STOP_POLL,
    ServerProcess,
    completion,
    free_port,
    legacy_completion,
    token,
)

from localeval.backends import make_backend
from localeval.backends.base import Backend, JsonRequest, Message
from localeval.backends.openai_compat import OpenAICompatBackend
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.distribution import renormalize
from localeval.errors import BackendUnavailable
from localeval.metrics import build_metric
from localeval.metrics.base import Metric, Verdict
from localeval.run.events import Events, MetricFinished
from localeval.run.runner import RunOptions, evaluate

#: These tests script faults per call: one call at a time, case by case.
IN_ORDER = RunOptions(order="input", workers=1)

GEVAL = {"criteria": "The answer is correct.", "include_reason": False,
         "evaluation_steps": ["Check that the answer is correct."]}
VERDICT_SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
                  "required": ["verdict"], "additionalProperties": False}
#: What the scripted server does for each case, in the dataset's order.
FAULTS = ("ok", "http500", "slow", "truncated", "garbage", "ok")
TOP = {"4": -0.5, "5": -1.2, "3": -2.0, "2": -4.0}
#: After a score: the answer ends (the same factor for every score, so the expected score is TOP's).
AFTER_SCORE = {"\n": -0.1}
URL = "http://judge.local:8000/v1"


def position(body: dict[str, Any]) -> dict[str, float]:
    """The alternatives at the position a score request asks about: the score position, or after a score."""
    text = body["prompt"] if "prompt" in body else body["messages"][-1]["content"]
    return TOP if text.endswith("Score: ") else AFTER_SCORE


class VerdictCheck(Metric):
    """A metric that generates schema-constrained JSON: 1 when the judge says "yes"."""

    kind: ClassVar[str] = "verdict-check"
    needs_judge: ClassVar[bool] = True

    def required_fields(self) -> tuple[str, ...]:
        return ("input", "actual_output")

    def verdict(self, case: TestCase, judge: Backend | None) -> Verdict:
        assert judge is not None  # measure() checks needs_judge first
        question = f"{case.input}\nAnswer: {case.actual_output}\nIs the answer correct? Reply in JSON."
        reply = judge.generate_json(JsonRequest(messages=(Message(role="user", content=question),),
                                                json_schema=VERDICT_SCHEMA, max_tokens=20))
        return Verdict(score=float(reply.value["verdict"] == "yes"), reason=reply.text)


def dataset(tags: tuple[str, ...]) -> Dataset:
    """One case per tag; the tag is in the input, so a server can tell which case a request is for."""
    return Dataset.from_cases(TestCase(input=f"[{i}:{tag}] What is 2+2?", actual_output="4", name=f"{i}:{tag}")
                              for i, tag in enumerate(tags, 1))


class ScriptedServer:
    """An OpenAI-compatible server in a function: answers each request as its case's fault says."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []  # (fault, path) of every generation request

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "judge", "owned_by": "me"}]})
        if request.url.path in ("/props", "/version"):
            return httpx.Response(404, json={"detail": "Not Found"})
        body = json.loads(request.content)
        found = re.search(r"\[\d+:(\w+)\]", json.dumps(body))
        fault = found.group(1) if found else "probe"
        self.calls.append((fault, request.url.path))
        if fault == "http500":
            return httpx.Response(500, json={"error": {"message": "llama_decode returned -3 (simulated)"}})
        if fault == "slow":
            raise httpx.ReadTimeout("timed out", request=request)
        if fault == "garbage":
            return httpx.Response(200, text="<html><body>502 Bad Gateway</body></html>")
        if "response_format" in body:
            return self._json(fault)
        top = position(body)
        if request.url.path == "/v1/completions":
            return legacy_completion(next(iter(top)), top)
        return completion(next(iter(top)), [token(next(iter(top)), top)], finish="length")

    @staticmethod
    def _json(fault: str) -> httpx.Response:
        if fault == "truncated":
            return completion('{"verdict": "ye', finish="length")
        return completion('{"verdict": "yes"}')


def expected_geval_score() -> float:
    dist = renormalize({d: TOP.get(d, -math.inf) for d in "12345"})
    return (dist.expected_value({d: float(d) for d in "12345"}) - 1) / 4


@pytest.mark.parametrize("prefill", ["completion", "continue"])
def test_every_fault_is_a_per_case_error_and_the_run_goes_on(prefill):
    server = ScriptedServer()
    backend = OpenAICompatBackend(URL, "judge", transport=httpx.MockTransport(server), sleep=lambda s: None,
                                  prefill=prefill, chat_template="chatml", structured_output="json_object",
                                  timeout=0.5, **FAST_RETRIES)
    seen: list[tuple[int, str]] = []
    metrics = [build_metric("geval", GEVAL), VerdictCheck()]
    report = evaluate(dataset(FAULTS), metrics, backend, options=IN_ORDER,
                      events=Events(lambda e: seen.append((e.case_index, e.result.metric))
                                    if isinstance(e, MetricFinished) else None))
    backend.close()

    assert seen == [(i, m) for i in range(len(FAULTS)) for m in ("geval", "verdict-check")]
    geval, check = ([case.results[m] for case in report.cases] for m in (0, 1))
    scores_url = f"{URL}/completions" if prefill == "completion" else f"{URL}/chat/completions"
    for results, url in ((geval, scores_url), (check, f"{URL}/chat/completions")):
        assert results[1].error.startswith(f"HttpStatusError: {url} answered HTTP 500 (after 3 attempts): ")
        assert "llama_decode returned -3 (simulated)" in results[1].error
        assert results[2].error == f"ReplyTimeout: {url}: no reply within 0.5 s"
        assert results[4].error.startswith(f"BackendError: {url} answered HTTP 200 with a body that is not JSON: ")
        assert "502 Bad Gateway" in results[4].error
        assert all(r.score is None and r.passed is None for r in (results[1], results[2], results[4]))
    assert check[3].error == "TruncatedOutput: generation stopped by 'length' after 2 tokens (max_tokens=20)"
    assert [r.score for r in check] == [1.0, None, None, None, None, 1.0]
    score = pytest.approx(expected_geval_score(), abs=1e-12)
    assert [r.score for r in geval] == [score, None, None, score, None, score]  # truncation hit JSON only
    summary = {s.metric: (s.cases, s.passed, s.failed, s.errored) for s in report.summary}
    assert summary == {"geval": (6, 3, 0, 3), "verdict-check": (6, 2, 0, 4)}
    # 500s are retried (3 attempts each), a read timeout is not (the server may still be at work)
    faults = [fault for fault, _ in server.calls]
    assert (faults.count("http500"), faults.count("slow")) == (2 * 3, 2 * 1)  # two metrics each


# -- a real slow server on 127.0.0.1 ---------------------------------------------------------


class SlowServer:
    """Answers like llama-cpp-python's server, but holds a request about a "slow" case for 5 s."""

    def __init__(self) -> None:
        self.release = threading.Event()
        handler = type("Handler", (_SlowHandler,), {"owner": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs=STOP_POLL, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.release.set()  # let a held request finish now
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


class _SlowHandler(BaseHTTPRequestHandler):
    owner: SlowServer

    def do_GET(self) -> None:
        self._send(200, {"data": [{"id": "judge"}]} if self.path == "/v1/models" else {"detail": "Not Found"})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        if ":slow]" in body:
            self.owner.release.wait(5.0)
        top = position(json.loads(body))
        reply = legacy_completion(next(iter(top)), top)
        self._send(reply.status_code, reply.json())

    def _send(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (its timeout) and closed the connection
            pass

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture
def slow_server() -> Iterator[SlowServer]:
    server = SlowServer()
    yield server
    server.close()


def test_a_reply_slower_than_the_timeout(slow_server):
    backend = make_backend("llama-cpp-python", base_url=slow_server.url, timeout=0.5, **FAST_RETRIES)
    start = time.monotonic()
    report = evaluate(dataset(("ok", "slow", "ok")), [build_metric("geval", GEVAL)], backend, options=IN_ORDER)
    elapsed = time.monotonic() - start
    backend.close()
    results = [case.results[0] for case in report.cases]
    assert [r.error for r in results] == [None, f"ReplyTimeout: {slow_server.url}/completions: no reply within 0.5 s",
                                          None]
    assert results[2].score == pytest.approx(expected_geval_score(), abs=1e-12)
    assert elapsed < 4.0  # the run did not wait for the slow reply (5 s)


# -- llama-cpp-python's real server, killed mid-run ---------------------------------------


@pytest.mark.model
@pytest.mark.server
def test_a_server_killed_after_the_second_case(default_model, tmp_path):
    server = ServerProcess.llama_cpp_python(default_model[1], tmp_path / "log.txt")

    def kill_after_second_case(event: object) -> None:
        if isinstance(event, MetricFinished) and event.case_index == 1 and event.result.metric == "verdict-check":
            server.kill()

    try:
        backend = make_backend("llama-cpp-python", base_url=server.url, **FAST_RETRIES)
        try:
            metrics = [build_metric("geval", GEVAL), VerdictCheck()]
            report = evaluate(dataset(("ok",) * 5), metrics, backend, options=IN_ORDER,
                              events=Events(kill_after_second_case))
        finally:
            backend.close()
    finally:
        server.stop()
    assert server.proc.returncode == -9
    errors = [[r.error for r in case.results] for case in report.cases]
    assert errors[:2] == [[None, None], [None, None]], errors
    for url, error in ((f"{server.url}/completions", errors[2][0]), (f"{server.url}/chat/completions", errors[2][1])):
        assert error.startswith(f"BackendUnavailable: cannot connect to {url} after 3 attempts: ")
        assert error.endswith("; is the server running?")
    assert errors[3:] == [errors[2]] * 2
    assert [(s.cases, s.errored) for s in report.summary] == [(5, 3), (5, 3)]


# -- no server at all ------------------------------------------------------------------------


def test_a_server_that_is_not_running():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(BackendUnavailable) as info:
        make_backend("llama-cpp-python", base_url=url, **FAST_RETRIES)
    message = str(info.value)
    assert message.startswith(f"cannot connect to {url}/models after 3 attempts: ")
    assert message.endswith("; is the server running?")


def test_localeval_run_without_a_server_is_one_line_and_exit_2(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    (tmp_path / "cases.jsonl").write_text('{"input": "What is 2+2?", "actual_output": "4"}\n')
    (tmp_path / "eval.toml").write_text(
        f'[backend]\nkind = "llama-cpp-python"\nbase_url = "{url}"\n'
        '[backend.options]\nmax_attempts = 2\nbackoff = 0.05\n'
        '[[metrics]]\nmetric = "geval"\ncriteria = "The answer is correct."\ninclude_reason = false\n'
        'evaluation_steps = ["Check the answer."]\n'
    )
    result = localeval("run", str(tmp_path / "cases.jsonl"), "-c", str(tmp_path / "eval.toml"),
                       "--cache-dir", str(tmp_path / "cache"), env={"COLUMNS": "300"})
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: cannot connect to {url}/models after 2 attempts: ")
    assert lines[0].endswith("; is the server running?")
    assert not (tmp_path / "report.json").exists()

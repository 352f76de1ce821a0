"""A fleet of judge servers (issue 17, item 1): routing, identity, failures, per-endpoint limits.

* Pure routing: rendezvous ranking, the shared prefix, the choice of an endpoint.
* Scripted OpenAI-compatible servers on 127.0.0.1 (real HTTP, real sockets): which server a
  call reaches, a server stopped and started again, a server that serves another model.
* Two real llama-cpp-python servers as a fleet, one killed mid-run: no result lost, every
  score equal to a one-server run.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from command_line import localeval
from servers import FAST_RETRIES, LLAMA_SERVER, STOP_POLL, JsonHandler, ServerProcess, completion, legacy_completion

from localeval.backends import make_backend
from localeval.backends.base import JsonRequest, Message
from localeval.backends.fleet import Endpoint, FleetBackend, choose, flatten, ranking, shared_prefix
from localeval.backends.http import HttpStatusError
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.errors import BackendUnavailable, ConfigError
from localeval.metrics import GEval
from localeval.run.events import Events, MetricFinished
from localeval.run.runner import evaluate
from localeval.testing.scripted import ScriptedJudge

VERDICT_SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
                  "required": ["verdict"], "additionalProperties": False}
SYSTEM = Message(role="system", content="You are a careful grader.")


def ask(topic: str, *follow_up: str) -> JsonRequest:
    """A verdict request about ``topic``; ``follow_up`` adds turns after the first question."""
    turns = [Message(role="user", content=f"Is {topic} correct? Reply in JSON.")]
    for text in follow_up:
        turns += [Message(role="assistant", content='{"verdict": "yes"}'), Message(role="user", content=text)]
    return JsonRequest(messages=(SYSTEM, *turns), json_schema=VERDICT_SCHEMA, max_tokens=20)


# -- pure routing ------------------------------------------------------------------------------


def test_the_ranking_is_stable_and_spreads_keys():
    urls = [f"http://judge-{n}:8000/v1" for n in range(3)]
    keys = [flatten(ask(f"case {n}").messages) for n in range(3000)]
    first = [ranking(key, urls)[0] for key in keys]
    assert first == [ranking(key, list(reversed(urls)))[0] for key in keys]  # the list's order does not matter
    shares = Counter(first)
    assert set(shares) == set(urls) and all(900 <= n <= 1100 for n in shares.values()), shares


def test_removing_an_endpoint_moves_only_its_keys():
    urls = [f"http://judge-{n}:8000/v1" for n in range(4)]
    keys = [flatten(ask(f"case {n}").messages) for n in range(2000)]
    before = {key: ranking(key, urls) for key in keys}
    after = {key: ranking(key, urls[:2] + urls[3:]) for key in keys}
    moved = [key for key in keys if before[key][0] != after[key][0]]
    assert moved and all(before[key][0] == urls[2] for key in moved)
    assert len(moved) == sum(order[0] == urls[2] for order in before.values())
    # a moved key goes to its second choice: the order of the others is kept
    assert all(after[key] == [u for u in before[key] if u != urls[2]] for key in keys)


def test_the_prompt_is_the_conversation_as_text_and_its_shared_start_is_exact():
    assert flatten(ask("Paris", "Why?").messages) == (
        '[[system]]\nYou are a careful grader.\n[[user]]\nIs Paris correct? Reply in JSON.\n'
        '[[assistant]]\n{"verdict": "yes"}\n[[user]]\nWhy?\n')
    assert [shared_prefix(a, b) for a, b in [("abcdef", "abcxyz"), ("abc", "abc"), ("abc", "abcd"), ("abcd", "abc"),
                                             ("", "x"), ("x", "y"), ("x" * 5000 + "a", "x" * 5000 + "b")]] == [
        3, 3, 3, 3, 0, 0, 5000]


CRITERIA = "[[system]]\nGrade.\n[[user]]\nEvaluation criteria:\n" + "Be right. " * 20


def pool(*names: str, limit: int = 2) -> list[Endpoint]:
    return [Endpoint(f"http://{name}/v1", limit) for name in names]


def key_preferring(url: str, urls: list[str]) -> str:
    """A first message whose rendezvous ranking puts ``url`` first: a tie would go there."""
    return next(key for key in (f"[[system]]\nGrade {n}.\n" for n in range(100)) if ranking(key, urls)[0] == url)


def test_a_call_goes_where_its_prefix_was_read_when_both_are_idle():
    a, b = pool("a", "b")
    key = key_preferring(b.url, [a.url, b.url])
    b.prompts.appendleft("[[system]]\nSomething else.\n")
    a.prompts.appendleft(CRITERIA + "---\ncase 1")
    a.prompts.appendleft("[[system]]\nA later call of another metric.\n")  # an older prompt still counts
    assert choose(CRITERIA + "---\ncase 2", key, [a, b]) == (a, len(CRITERIA) + len("---\ncase "))
    assert choose(CRITERIA + "---\ncase 2", key, [b, a]) == (a, len(CRITERIA) + len("---\ncase "))
    assert choose("Nothing shared.", key, [a, b]) == (b, 0)  # nothing shared: the ranking's first


def test_an_idle_endpoint_wins_over_a_busier_one_that_shares_more():
    a, b = pool("a", "b")
    key = key_preferring(a.url, [a.url, b.url])
    a.prompts.appendleft(CRITERIA + "---\ncase 1")
    a.in_flight = 1  # a free slot left, but one call more than b
    assert choose(CRITERIA + "---\ncase 2", key, [a, b]) == (b, 0)
    b.in_flight = 1
    assert choose(CRITERIA + "---\ncase 2", key, [a, b]) == (a, len(CRITERIA) + len("---\ncase "))
    b.prompts.appendleft(CRITERIA + "---\ncase 2")
    assert choose(CRITERIA + "---\ncase 2", key, [a, b]) == (b, len(CRITERIA) + len("---\ncase 2"))


def test_ties_go_by_the_rendezvous_ranking_of_the_first_message():
    winners = []
    for n in range(20):
        endpoints = pool("a", "b", "c")
        for endpoint in endpoints:  # each shares as much with the call: a tie
            endpoint.prompts.appendleft(CRITERIA + "---\ncase 1")
        key = f"[[system]]\nGrade {n}.\n"
        expected = ranking(key, [e.url for e in endpoints])[0]
        assert choose(CRITERIA + "---\ncase 2", key, endpoints)[0].url == expected
        assert choose(CRITERIA + "---\ncase 2", key, endpoints[::-1])[0].url == expected
        winners.append(expected)
    assert set(winners) == {"http://a/v1", "http://b/v1", "http://c/v1"}  # different first messages spread


# -- scripted servers on 127.0.0.1 -----------------------------------------------------------


class Judge:
    """A scripted OpenAI-compatible server on a loopback port; it can stop and start on the same port.

    It records every generation request's user question, and the most requests it held at once;
    ``hold`` is called while a generation request is held, before it is answered (a barrier's
    ``wait``, say: the request waits there for others to be in flight too).
    """

    def __init__(self, model: str = "smollm2", port: int = 0) -> None:
        self.model = model
        self.questions: list[str] = []
        self.model_lists = 0
        self.in_flight = self.most_in_flight = 0
        self.hold: Callable[[], object] = lambda: None
        self.broken = False  # answer HTTP 500 to every generation request
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self.port = port
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, model: str | None = None) -> None:
        self.model = model or self.model
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), type("Handler", (_Handler,), {"owner": self}))
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, kwargs=STOP_POLL, daemon=True).start()

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path == "/v1/completions":  # the preset's logprob probe, or a score read
            if "Reply with OK." in body["prompt"]:
                return 200, legacy_completion("OK", {"OK": -0.1}).json()
            if body["prompt"][-1:].isdigit():  # a score's continuation (whole answers): the number ends there
                return 200, legacy_completion("\n", {"\n": 0.0}).json()
            question = body["prompt"]
        else:
            question = next(m["content"] for m in body["messages"] if m["role"] == "user")
        with self._lock:
            self.questions.append(question)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            self.hold()
        finally:
            with self._lock:
                self.in_flight -= 1
        if self.broken or "poison" in question:
            return 500, {"error": {"message": "llama_decode returned -3 (simulated)"}}
        if path == "/v1/completions":
            return 200, legacy_completion("4", {"4": -0.5, "3": -1.0}).json()
        return 200, completion('{"verdict": "yes"}').json()


class _Handler(JsonHandler):
    owner: Judge

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self.owner.model_lists += 1
            self._send(200, {"data": [{"id": self.owner.model, "owned_by": "me"}]})
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._send(*self.owner.answer(self.path, body))


@pytest.fixture
def judges() -> Iterator[tuple[Judge, Judge]]:
    pair = Judge(), Judge()
    yield pair
    for judge in pair:
        judge.stop()


def fleet(*judges: Judge, **options: Any) -> FleetBackend:
    backend = make_backend("llama-cpp-python", base_url=[j.url for j in judges], **{**FAST_RETRIES, **options})
    assert isinstance(backend, FleetBackend)
    return backend


def test_endpoints_serving_different_models_are_refused_before_any_call():
    first, second = Judge("smollm2"), Judge("qwen2.5")
    try:
        with pytest.raises(ConfigError) as info:
            fleet(first, second)
    finally:
        first.stop()
        second.stop()
    assert str(info.value) == (f"the fleet's endpoints serve different models: {first.url} reports model "
                               f"'smollm2', {second.url} reports model 'qwen2.5'")
    assert first.questions == second.questions == []


def by_preference(judges: tuple[Judge, Judge]) -> tuple[Judge, Judge]:
    """The judges, the one that ranks first for SYSTEM (where calls go when all is even) first."""
    first = ranking(flatten([SYSTEM]), [j.url for j in judges])[0]
    favourite, other = sorted(judges, key=lambda j: j.url != first)
    return favourite, other


def test_calls_one_at_a_time_stay_where_their_prefix_is_and_are_counted_exactly(judges):
    favourite, other = by_preference(judges)
    backend = fleet(favourite, other)
    lenient = JsonRequest(messages=(Message(role="system", content="Be lenient."), *ask("case 1").messages[1:]),
                          json_schema=VERDICT_SCHEMA, max_tokens=20)
    for request in (ask("case 1"), ask("case 2"), ask("case 1", "Why?"), lenient):
        backend.generate_json(request)
    backend.close()
    assert favourite.questions == ["Is case 1 correct? Reply in JSON.", "Is case 2 correct? Reply in JSON.",
                                   "Is case 1 correct? Reply in JSON.", "Is case 1 correct? Reply in JSON."]
    assert other.questions == []
    # prompts of 80, 80, 127 and 66 characters sharing 0, 54 ("[[system]]...Is case "), 80 (the whole
    # first prompt) and 11 ("[[system]]\n", which is more than the other endpoint shares) characters:
    # calls 2 and 3 shared at least half their prompt
    first, second = backend.stats()
    assert (first.served, first.reused, first.shared) == (4, 2, pytest.approx(145 / 353))
    assert (second.served, second.reused, second.shared) == (0, 0, 0.0)
    assert backend.summary() == (f"{favourite.url}: in, 4 served, 2 reused a prefix (41% of prompt characters "
                                 f"shared); {other.url}: in, 0 served, 0 reused a prefix (0% of prompt characters "
                                 "shared)")


def test_a_call_goes_to_the_idle_server_rather_than_queue_behind_its_prefix(judges):
    favourite, other = by_preference(judges)
    held, release = threading.Event(), threading.Event()

    def hold_the_first_call() -> None:  # on the favourite, until the second call is answered
        held.set()
        release.wait(30)

    favourite.hold = hold_the_first_call
    backend = fleet(favourite, other, max_concurrency=2)
    first = threading.Thread(target=backend.generate_json, args=(ask("case 1"),))
    first.start()
    try:
        assert held.wait(30)
        backend.generate_json(ask("case 1", "Why?"))  # shares the whole first prompt, but the favourite is busier
    finally:
        release.set()
        first.join()
    backend.close()
    assert len(favourite.questions) == len(other.questions) == 1
    assert [(s.served, s.reused, s.shared) for s in backend.stats()] == [(1, 0, 0.0), (1, 0, 0.0)]


def test_a_stopped_server_is_taken_out_and_verified_again_when_it_returns(judges):
    first, second = by_preference(judges)
    backend = fleet(first, second, eject_cooldown=0.5)
    first.stop()
    for topic in ("case 1", "case 2", "case 3", "case 4"):  # the first fails over; the others go to the second
        assert backend.generate_json(ask(topic)).value == {"verdict": "yes"}
    assert len(second.questions) == 4 and first.questions == []
    assert [s.state.split(" (")[0] for s in backend.stats()] == ["out", "in"]
    assert backend.stats()[0].failures == 1
    lists_before = first.model_lists
    first.start()
    time.sleep(0.6)
    backend.generate_json(ask("a new topic for the first server", ))
    assert first.model_lists == lists_before + 1  # asked who it is before it got a call
    assert backend.stats()[0].state == "in"
    backend.generate_json(ask("case that routes anywhere"))
    backend.close()


def test_a_server_that_returns_with_another_model_stays_out(judges):
    first, second = by_preference(judges)
    backend = fleet(first, second, eject_cooldown=0.3)
    first.stop()
    backend.generate_json(ask("case 1"))
    first.start(model="qwen2.5")
    time.sleep(0.4)
    backend.generate_json(ask("case 1"))
    backend.close()
    state = backend.stats()[0].state
    assert state.startswith("out (refused: the fleet's endpoints serve different models: ")
    assert f"{first.url} reports model 'qwen2.5'" in state
    assert first.questions == [] and len(second.questions) == 2


def test_a_request_every_server_refuses_is_its_own_error_and_empties_no_fleet(judges):
    backend = fleet(*judges)
    with pytest.raises(HttpStatusError, match=r"answered HTTP 500 \(after 3 attempts\): .*llama_decode returned -3"):
        backend.generate_json(ask("poison"))
    assert [(s.state, s.failures) for s in backend.stats()] == [("in", 1), ("in", 1)]
    assert len(judges[0].questions) == len(judges[1].questions) == 3  # the retry policy's attempts, on each
    backend.close()


def test_a_server_whose_replies_fail_is_taken_out_after_three_in_a_row(judges):
    first, second = by_preference(judges)
    backend = fleet(first, second)
    first.broken = True
    for topic in ("case 1", "case 2", "case 3", "case 4", "case 5"):
        assert backend.generate_json(ask(topic)).value == {"verdict": "yes"}
    assert len(first.questions) == 3 * 3  # three calls of three attempts each, then it was out
    assert len(second.questions) == 5
    state = backend.stats()[0].state
    assert state.startswith(f"out ({first.url}/chat/completions answered HTTP 500 (after 3 attempts)")
    backend.close()


def test_a_server_down_at_the_start_joins_once_verified(judges):
    first, second = judges
    first.stop()
    backend = fleet(first, second, eject_cooldown=0.3)
    assert backend.stats()[0].state.startswith("out (cannot connect to ")
    # what `backends check` shows
    assert backend.capabilities.notes["fleet"].startswith(f"{first.url}: out (cannot connect to {first.url}/models ")
    assert backend.capabilities.notes["fleet"].endswith(
        f"; {second.url}: in, 0 served, 0 reused a prefix (0% of prompt characters shared)")
    assert backend.capabilities.parallel_requests == 2  # it will serve when it returns
    first.start()
    time.sleep(0.4)  # past the cooldown: the next call verifies it
    both = threading.Barrier(2, timeout=30)  # the two calls are in flight at once, or this breaks
    for judge in judges:
        judge.hold = both.wait
    threads = [threading.Thread(target=backend.generate_json, args=(ask(f"case {n}"),)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    backend.close()
    assert len(first.questions) == len(second.questions) == 1 and first.model_lists == 1


def test_a_fleet_with_no_server_up_is_unavailable(judges):
    for judge in judges:
        judge.stop()
    with pytest.raises(BackendUnavailable, match="^no endpoint of the fleet can be reached: cannot connect to "):
        fleet(*judges)


def test_each_server_gets_at_most_its_limit(judges):
    four = threading.Barrier(4, timeout=30)  # four calls in flight at once (the fleet's limit), or this breaks
    for judge in judges:
        judge.hold = four.wait
    backend = fleet(*judges, max_concurrency=2)
    assert backend.capabilities.parallel_requests == 4
    threads = [threading.Thread(target=backend.generate_json, args=(ask(f"case {n}"),)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    backend.close()
    assert [j.most_in_flight for j in judges] == [2, 2]
    assert sum(len(j.questions) for j in judges) == 16


def test_the_fingerprint_has_no_address_when_the_model_file_pins_the_weights(judges):
    backend = fleet(*judges)
    assert "base_url" not in backend.fingerprint.settings
    # scripted servers name no model file: their addresses stay in the cache key
    assert backend.fingerprint.settings["endpoints"] == sorted(j.url for j in judges)
    backend.close()


def test_backends_check_shows_each_endpoint_and_a_mismatch_is_one_line(judges):
    first, second = judges
    result = localeval("backends", "check", "--backend", "llama-cpp-python", "--base-url", first.url,
                       "--base-url", second.url, env={"COLUMNS": "400"})
    assert "Traceback" not in result.stderr
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in result.stdout.splitlines()
            if line.startswith("│") and line.count("│") == 3}
    assert rows["note on fleet"] == (f"{first.url}: in, 0 served, 0 reused a prefix (0% of prompt characters "
                                     f"shared); {second.url}: in, 0 served, 0 reused a prefix (0% of prompt "
                                     "characters shared)")
    assert rows["setting endpoints"] == str(sorted([first.url, second.url]))
    second.stop()
    second.start(model="qwen2.5")
    result = localeval("backends", "check", "--backend", "llama-cpp-python", "--base-url", f"{first.url},{second.url}",
                       env={"COLUMNS": "400"})
    assert result.returncode == 2
    assert result.stderr.strip() == (f"error: the fleet's endpoints serve different models: {first.url} reports model "
                                     f"'smollm2', {second.url} reports model 'qwen2.5'")


def test_a_run_on_a_fleet_says_what_each_endpoint_did(judges, tmp_path):
    both = threading.Barrier(2, timeout=30)  # the run's two calls in flight overlap, or this breaks
    for judge in judges:
        judge.hold = both.wait
    data = tmp_path / "cases.jsonl"
    cases = [TestCase(input=f"What is {n} + 1?", actual_output=str(n + 1)) for n in range(6)]  # prompts of one length
    data.write_text("".join(json.dumps({"input": c.input, "actual_output": c.actual_output}) + "\n" for c in cases))
    config = tmp_path / "eval.toml"
    config.write_text('[backend]\nkind = "llama-cpp-python"\n'
                      f'base_url = {json.dumps([j.url for j in judges])}\n'
                      '[[metrics]]\nmetric = "geval"\ncriteria = "The sum is right."\ninclude_reason = false\n'
                      'evaluation_steps = ["Check the sum."]\n')
    result = localeval("run", str(data), "-c", str(config), "--no-cache", "--run-dir", str(tmp_path / "run"),
                       env={"COLUMNS": "400"})
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stderr.splitlines() if line.startswith("Judge fleet: "))
    counts = [len(j.questions) for j in judges]
    assert sum(counts) == 6 and min(counts) > 0  # two calls in flight: both servers worked
    # the prompts the fleet saw, as a scripted judge sees them: after its first, each call on a server
    # shared the criteria, the steps and "What is " with the one before
    scripted = ScriptedJudge(logprobs=[{str(k): -1.0 for k in range(1, 6)}] * 6)
    evaluate(Dataset.from_cases(cases), [GEval(criteria="The sum is right.", evaluation_steps=("Check the sum.",),
                                               include_reason=False)], scripted)
    prompts = [flatten(r.messages) for r in scripted.requests]
    shared, length = shared_prefix(prompts[0], prompts[1]), len(prompts[0])
    assert {len(p) for p in prompts} == {length} and 2 * shared >= length
    shown = [f"{judge.url}: in, {n} served, {n - 1} reused a prefix ({100 * (n - 1) * shared / (n * length):.0f}% "
             "of prompt characters shared)" for judge, n in zip(judges, counts, strict=True)]
    assert line == f"Judge fleet: {shown[0]}; {shown[1]}"
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    four = math.exp(-0.5) / (math.exp(-0.5) + math.exp(-1.0))  # the servers' "4" against "3", renormalized
    expected = (4 * four + 3 * (1 - four) - 1) / 4  # the 1-5 scale mapped onto 0-1
    assert [c["results"][0]["score"] for c in report["cases"]] == [pytest.approx(expected, abs=1e-12)] * 6


# -- two real servers, one killed mid-run --------------------------------------------------------


def start_server(kind: str, model: Path, log: Path) -> ServerProcess:
    """A real server of ``kind`` (its backend preset's name) on 127.0.0.1, 1 thread."""
    if kind == "llama-cpp-python":
        return ServerProcess.llama_cpp_python(model, log)
    if not LLAMA_SERVER:
        pytest.skip("llama-server not found: put it on PATH or set LOCALEVAL_LLAMA_SERVER")
    return ServerProcess.llama_server(LLAMA_SERVER, model, log)


@pytest.mark.model
@pytest.mark.server
@pytest.mark.parametrize("kind", ["llama-cpp-python", "llama-server"])
def test_a_fleet_member_killed_mid_run_loses_nothing(kind, default_model, tmp_path):
    cases = [TestCase(input=f"What is {n} + {n % 4}?", actual_output=str(n + n % 4 + (n % 3 == 0)), name=f"c{n}")
             for n in range(10)]
    metric = GEval(name="correct", criteria="The answer is correct.", evaluation_steps=("Check the sum.",),
                   include_reason=False)
    doomed = start_server(kind, default_model[1], tmp_path / "doomed.txt")
    survivor = start_server(kind, default_model[1], tmp_path / "survivor.txt")
    finished: list[int] = []

    def kill_after_three(event: object) -> None:
        if isinstance(event, MetricFinished):
            finished.append(event.case_index)
            if len(finished) == 3:
                doomed.kill()

    try:
        alone = make_backend(kind, base_url=survivor.url, **FAST_RETRIES)
        one_server = evaluate(Dataset.from_cases(cases), [metric], alone)
        alone.close()
        backend = make_backend(kind, base_url=[doomed.url, survivor.url], max_concurrency=1, **FAST_RETRIES)
        assert isinstance(backend, FleetBackend) and backend.capabilities.parallel_requests == 2
        assert backend.fingerprint.model_sha256 == alone.fingerprint.model_sha256
        assert "endpoints" not in backend.fingerprint.settings  # the file's sha256 pins the model
        report = evaluate(Dataset.from_cases(cases), [metric], backend, events=Events(kill_after_three))
        stats = backend.stats()
        backend.close()
    finally:
        doomed.stop()
        survivor.stop()
    assert doomed.proc.returncode == -9
    assert [r.error for c in report.cases for r in c.results] == [None] * len(cases)
    fleet_scores = [r.score for c in report.cases for r in c.results]
    alone_scores = [r.score for c in one_server.cases for r in c.results]
    assert None not in alone_scores
    assert fleet_scores == pytest.approx(alone_scores, abs=1e-9)
    assert stats[0].state.startswith("out (") and stats[0].failures >= 1
    assert stats[0].served >= 1 and stats[0].served + stats[1].served == len(cases)


# -- Ollama: the same fleet around the official client ------------------------------------------


@pytest.mark.model
@pytest.mark.server
@pytest.mark.parametrize("version", ["0.12.11", "0.13.0"])
def test_an_ollama_fleet_checks_identity_and_scores_like_one_server(standin, ollama_backend, default_model, version):
    from ollama_standin import OllamaStandIn

    from localeval.backends.base import DistributionRequest

    other = OllamaStandIn(default_model[1], version=version)
    other.serve()
    try:
        if version != standin.version:
            with pytest.raises(ConfigError) as info:
                make_backend("ollama", model="smollm2:135m", base_url=[standin.url, other.url], **FAST_RETRIES)
            assert str(info.value) == (f"the fleet's endpoints serve different models: {standin.url} reports "
                                       f"runtime 'ollama 0.12.11', {other.url} reports runtime 'ollama 0.13.0'")
            assert not [path for path, _ in other.requests if path == "/api/chat"]
            return
        backend = make_backend("ollama", model="smollm2:135m", base_url=[standin.url, other.url], **FAST_RETRIES)
        assert isinstance(backend, FleetBackend)
        assert backend.fingerprint == ollama_backend.fingerprint.model_copy(
            update={"settings": {k: v for k, v in ollama_backend.fingerprint.settings.items() if k != "host"}})
        backend.close()
        # The scores are compared on servers that have not read this prompt: one that holds the
        # prompt and a continuation of it (the session's stand-in after the same request) reads
        # the prompt's last token again alone, as llama-cpp-python and Ollama do, and that
        # moves its numbers (by 0.005 here); which of the fleet's two endpoints answers is a
        # rendezvous of random ports, so comparing on the shared stand-in was a coin toss.
        third, alone = OllamaStandIn(default_model[1], version=version), OllamaStandIn(default_model[1], version=version)
        third.serve()
        alone.serve()
        fleet = make_backend("ollama", model="smollm2:135m", base_url=[other.url, third.url], **FAST_RETRIES)
        one = make_backend("ollama", model="smollm2:135m", base_url=alone.url, **FAST_RETRIES)
        try:
            grade = (SYSTEM, Message(role="user", content="Rate the answer 4 to 2+2 from 1 to 5."))
            request = DistributionRequest(messages=grade, prefill="Score: ", candidates=tuple("12345"))
            assert fleet.candidate_distribution(request) == one.candidate_distribution(request)
        finally:
            fleet.close()
            one.close()
            third.close()
            alone.close()
    finally:
        other.close()

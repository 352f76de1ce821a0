"""The cache key covers everything that changes a reply; the cached backend answers from disk."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import diskcache
import pytest
from scripted import ScriptedBackend, ScriptExhausted

from localeval.backends.base import (
    Backend,
    DistributionRequest,
    Fingerprint,
    JsonRequest,
    Message,
)
from localeval.backends.cache import CachedBackend, cache_key, open_cache

FINGERPRINT = Fingerprint(
    kind="llama.cpp",
    model="tiny",
    model_sha256="a" * 64,
    runtime="llama-cpp-python 0.3.36",
    settings={"chat_format": "plain", "n_batch": 64},
)
MESSAGES = (Message(role="system", content="Grade."), Message(role="user", content="Is 2+2=4?"))
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def json_request(**changes: Any) -> JsonRequest:
    fields: dict[str, Any] = {"messages": MESSAGES, "json_schema": SCHEMA, "max_tokens": 64}
    return JsonRequest(**{**fields, **changes})


def dist_request(**changes: Any) -> DistributionRequest:
    fields: dict[str, Any] = {"messages": MESSAGES, "prefill": "Score: ", "candidates": ("1", "2", "3")}
    return DistributionRequest(**{**fields, **changes})


def json_key(request: JsonRequest, fingerprint: Fingerprint = FINGERPRINT) -> str:
    return cache_key("generate_json", fingerprint, request)


def dist_key(request: DistributionRequest, fingerprint: Fingerprint = FINGERPRINT) -> str:
    return cache_key("candidate_distribution", fingerprint, request)


# --- cache_key -------------------------------------------------------------------------


def test_the_key_is_a_sha256_hex_digest() -> None:
    key = json_key(json_request())
    assert len(key) == 64
    assert set(key) <= set("0123456789abcdef")


def test_an_equal_request_built_separately_has_the_same_key() -> None:
    again = JsonRequest(
        messages=[
            {"role": "system", "content": "Grade."},  # type: ignore[list-item]
            Message(role="user", content="Is 2+2=4?"),
        ],
        json_schema={"properties": {"ok": {"type": "boolean"}}, "type": "object"},  # other order
        max_tokens=64,
    )
    assert json_key(again) == json_key(json_request())
    fingerprint = Fingerprint(**FINGERPRINT.model_dump())
    assert dist_key(dist_request(), fingerprint) == dist_key(dist_request())


@pytest.mark.parametrize(
    "change",
    [
        {"model_sha256": "b" * 64},
        {"model_sha256": None},
        {"model": "tiny-2"},
        {"runtime": "llama-cpp-python 0.3.37"},
        {"kind": "ollama"},
        {"settings": {"chat_format": "plain", "n_batch": 128}},
        {"settings": {"chat_format": "jinja:0123456789abcdef", "n_batch": 64}},
        {"settings": {"chat_format": "plain", "n_batch": 64, "n_ctx": 2048}},
    ],
    ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()),
)
def test_the_key_changes_with_the_fingerprint(change: dict[str, Any]) -> None:
    other = FINGERPRINT.model_copy(update=change)
    assert json_key(json_request(), other) != json_key(json_request())
    assert dist_key(dist_request(), other) != dist_key(dist_request())


@pytest.mark.parametrize(
    "change",
    [
        {"messages": (Message(role="user", content="Is 2+2=4?"),)},
        {"messages": (MESSAGES[0], Message(role="user", content="Is 2+2=5?"))},
        {"messages": (Message(role="user", content="Grade."), MESSAGES[1])},
        {"json_schema": {"type": "object", "properties": {"ok": {"type": "string"}}}},
        {"max_tokens": 65},
        {"temperature": 0.5},
        {"seed": 1},
        {"seed": None},
    ],
    ids=["fewer-messages", "message-text", "message-role", "schema", "max_tokens", "temperature", "seed", "no-seed"],
)
def test_the_key_changes_with_the_json_request(change: dict[str, Any]) -> None:
    assert json_key(json_request(**change)) != json_key(json_request())


@pytest.mark.parametrize(
    "change",
    [
        {"messages": (MESSAGES[0], Message(role="user", content="Is 2+2=5?"))},
        {"prefill": "Score:"},
        {"prefill": ""},
        {"candidates": ("1", "2", "3", "4")},
        {"candidates": ("3", "2", "1")},
    ],
    ids=["message-text", "prefill-space", "no-prefill", "more-candidates", "candidate-order"],
)
def test_the_key_changes_with_the_distribution_request(change: dict[str, Any]) -> None:
    assert dist_key(dist_request(**change)) != dist_key(dist_request())


def test_the_key_changes_with_the_operation() -> None:
    request = json_request()
    assert cache_key("generate_json", FINGERPRINT, request) != cache_key(
        "candidate_distribution", FINGERPRINT, request
    )


# --- CachedBackend ---------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Iterator[diskcache.Cache]:
    with open_cache(tmp_path / "cache") as cache:
        yield cache


def test_a_scripted_backend_is_a_backend(store: diskcache.Cache) -> None:
    backend = ScriptedBackend()
    assert isinstance(backend, Backend)
    assert isinstance(CachedBackend(backend, store), Backend)


def test_closing_the_cache_wrapper_closes_the_backend(store: diskcache.Cache) -> None:
    backend = ScriptedBackend()
    CachedBackend(backend, store).close()
    assert backend.closed is True
    store.set("still", "open")  # the store is its opener's to close
    assert store.get("still") == "open"


def test_the_second_identical_call_is_a_hit(store: diskcache.Cache) -> None:
    backend = ScriptedBackend(json_values=[{"ok": True}])
    cached = CachedBackend(backend, store)
    first = cached.generate_json(json_request())
    second = cached.generate_json(json_request())
    assert len(backend.requests) == 1
    assert (cached.stats.hits, cached.stats.model_calls, cached.stats.uncacheable) == (1, 1, 0)
    assert second.model_dump() == first.model_dump()
    assert second.value == {"ok": True}


def test_a_distribution_read_back_equals_the_original(store: diskcache.Cache) -> None:
    logprobs = {"1": math.log(0.1), "2": math.log(0.2), "3": math.log(0.3)}
    backend = ScriptedBackend(logprobs=[logprobs])
    cached = CachedBackend(backend, store)
    first = cached.candidate_distribution(dist_request())
    second = cached.candidate_distribution(dist_request())
    assert len(backend.requests) == 1
    assert (cached.stats.hits, cached.stats.model_calls) == (1, 1)
    assert second.model_dump() == first.model_dump()
    assert second.distribution.probabilities == first.distribution.probabilities  # bit-exact


def test_a_different_request_is_a_miss(store: diskcache.Cache) -> None:
    backend = ScriptedBackend(json_values=[{"ok": True}, {"ok": False}])
    cached = CachedBackend(backend, store)
    cached.generate_json(json_request())
    other = cached.generate_json(json_request(max_tokens=128))
    assert other.value == {"ok": False}
    assert (cached.stats.hits, cached.stats.model_calls) == (0, 2)


def test_another_fingerprint_is_a_miss(store: diskcache.Cache) -> None:
    CachedBackend(ScriptedBackend(json_values=[{"ok": True}]), store).generate_json(json_request())
    other_model = FINGERPRINT.model_copy(update={"model_sha256": "c" * 64})
    backend = ScriptedBackend(json_values=[{"ok": False}], fingerprint=other_model)
    cached = CachedBackend(backend, store)
    assert cached.generate_json(json_request()).value == {"ok": False}
    assert (cached.stats.hits, cached.stats.model_calls) == (0, 1)


def test_the_cache_survives_reopening_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    with open_cache(folder) as store:
        backend = ScriptedBackend(json_values=[{"ok": True}], fingerprint=FINGERPRINT)
        original = CachedBackend(backend, store).generate_json(json_request())
    with diskcache.Cache(str(folder)) as store:
        backend = ScriptedBackend(fingerprint=FINGERPRINT)  # nothing scripted: a call would fail
        cached = CachedBackend(backend, store)
        again = cached.generate_json(json_request())
    assert backend.requests == []
    assert (cached.stats.hits, cached.stats.model_calls) == (1, 0)
    assert again.model_dump() == original.model_dump()


def test_sampling_without_a_seed_is_never_cached(store: diskcache.Cache) -> None:
    backend = ScriptedBackend(json_values=[{"ok": True}, {"ok": False}])
    cached = CachedBackend(backend, store)
    request = json_request(temperature=0.7, seed=None)
    assert cached.generate_json(request).value == {"ok": True}
    assert cached.generate_json(request).value == {"ok": False}
    assert len(backend.requests) == 2
    assert (cached.stats.hits, cached.stats.model_calls, cached.stats.uncacheable) == (0, 2, 2)
    assert len(store) == 0


def test_sampling_with_a_fixed_seed_is_cached(store: diskcache.Cache) -> None:
    backend = ScriptedBackend(json_values=[{"ok": True}])
    cached = CachedBackend(backend, store)
    request = json_request(temperature=0.7, seed=42)
    cached.generate_json(request)
    assert cached.generate_json(request).value == {"ok": True}
    assert len(backend.requests) == 1
    assert (cached.stats.hits, cached.stats.model_calls, cached.stats.uncacheable) == (1, 1, 0)
    assert len(store) == 1


def test_greedy_decoding_without_a_seed_is_cached(store: diskcache.Cache) -> None:
    backend = ScriptedBackend(json_values=[{"ok": True}])
    cached = CachedBackend(backend, store)
    request = json_request(temperature=0.0, seed=None)
    cached.generate_json(request)
    cached.generate_json(request)
    assert (cached.stats.hits, cached.stats.model_calls, cached.stats.uncacheable) == (1, 1, 0)


def test_a_failed_call_is_not_cached(store: diskcache.Cache) -> None:
    backend = ScriptedBackend(json_values=[RuntimeError("model crashed"), {"ok": True}])
    cached = CachedBackend(backend, store)
    with pytest.raises(RuntimeError, match="model crashed"):
        cached.generate_json(json_request())
    assert cached.generate_json(json_request()).value == {"ok": True}
    assert len(backend.requests) == 2


def test_the_wrapper_reports_the_backends_identity(store: diskcache.Cache) -> None:
    backend = ScriptedBackend(fingerprint=FINGERPRINT)
    cached = CachedBackend(backend, store)
    assert cached.fingerprint == FINGERPRINT
    assert cached.capabilities == backend.capabilities


# --- the scripted backend itself -------------------------------------------------------


def test_the_scripted_backend_says_when_its_script_runs_out() -> None:
    backend = ScriptedBackend()
    with pytest.raises(ScriptExhausted, match="no scripted reply left for candidate_distribution"):
        backend.candidate_distribution(dist_request())
    assert isinstance(ScriptExhausted(), RuntimeError)
    assert backend.requests == [dist_request()]


def test_the_scripted_backend_checks_its_candidates() -> None:
    backend = ScriptedBackend(logprobs=[{"1": -1.0, "2": -1.0}])
    with pytest.raises(RuntimeError, match="the request asks for"):
        backend.candidate_distribution(dist_request())


# --- concurrency: a lock per key -------------------------------------------------------------


class BlockingJudge(ScriptedBackend):
    """Each generate_json call first calls ``wait`` (a barrier's or an event's) and then answers."""

    def __init__(self, wait: Any, **script: Any) -> None:
        super().__init__(**script)
        self.wait = wait
        self.entered = threading.Semaphore(0)
        self._script_lock = threading.Lock()

    def generate_json(self, request: JsonRequest) -> Any:
        self.entered.release()
        if self.wait() is False:  # an Event's wait: False on its timeout
            raise TimeoutError("the call was never released")
        with self._script_lock:
            return super().generate_json(request)


def same_old_stripe(fingerprint: Fingerprint) -> tuple[JsonRequest, JsonRequest]:
    """Two different requests whose keys fell on one of the 64 stripes the cache used to lock by."""
    stripes: dict[int, JsonRequest] = {}
    for i in range(1000):
        request = json_request(messages=(Message(role="user", content=f"question {i}"),))
        stripe = int(json_key(request, fingerprint)[:8], 16) % 64
        if stripe in stripes:
            return stripes[stripe], request
        stripes[stripe] = request
    raise AssertionError("no two keys on one stripe")  # impossible: 65 keys fill 64 stripes


def both_at_once(call: Any, first: Any, second: Any) -> list[Any]:
    """``call(first)`` and ``call(second)`` on two threads; their results (an error raises)."""
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(call, first), pool.submit(call, second)]
        return [f.result(timeout=30) for f in futures]


def test_different_requests_are_computed_at_the_same_time(store: diskcache.Cache) -> None:
    # Each call waits until both are in the model; one after the other, the barrier breaks after 5 s.
    judge = BlockingJudge(threading.Barrier(2, timeout=5).wait, json_values=[{"ok": True}, {"ok": False}])
    cached = CachedBackend(judge, store)
    first, second = same_old_stripe(cached.fingerprint)
    replies = both_at_once(cached.generate_json, first, second)
    assert sorted(r.value["ok"] for r in replies) == [False, True]
    assert (cached.stats.model_calls, cached.stats.hits) == (2, 0)
    assert len(cached._key_locks) == 0  # no lock kept once no one holds it


def test_identical_requests_at_the_same_time_make_one_model_call(store: diskcache.Cache) -> None:
    release = threading.Event()
    judge = BlockingJudge(lambda: release.wait(timeout=5), json_values=[{"ok": True}])
    cached = CachedBackend(judge, store)
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(cached.generate_json, json_request())]
        assert judge.entered.acquire(timeout=5)  # the first is in the model...
        futures.append(pool.submit(cached.generate_json, json_request()))
        key, deadline = cache_key("generate_json", cached.fingerprint, json_request()), time.monotonic() + 5
        while cached._key_locks._locks[key].users < 2:  # ...the second waits for its key
            assert time.monotonic() < deadline, "the second call never waited"
            time.sleep(0.01)
        release.set()
        replies = [f.result(timeout=30) for f in futures]
    assert len(judge.requests) == 1  # one model call; the other read its reply from disk
    assert (cached.stats.model_calls, cached.stats.hits) == (1, 1)
    assert [r.value for r in replies] == [{"ok": True}] * 2
    assert len(cached._key_locks) == 0


def test_a_call_that_fails_releases_its_key(store: diskcache.Cache) -> None:
    judge = ScriptedBackend(json_values=[])  # its script is empty: the call raises
    cached = CachedBackend(judge, store)
    with pytest.raises(ScriptExhausted):
        cached.generate_json(json_request())
    assert len(cached._key_locks) == 0

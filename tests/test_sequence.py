"""One score's requests to a server go back to back (localeval/backends/sequence.py)."""

from __future__ import annotations

import threading
import time

from localeval.backends.sequence import EndpointOrder, endpoint_order


def test_a_score_holds_off_other_threads_requests_and_passes_its_own():
    order = EndpointOrder()
    events: list[str] = []
    held = threading.Event()

    def score() -> None:
        with order.exclusive():
            held.set()
            with order.shared():  # the score's own request: not held off by itself
                events.append("score request 1")
            time.sleep(0.05)  # another thread's request would come here, were it not held off
            with order.shared():
                events.append("score request 2")

    def json_call() -> None:
        held.wait()
        with order.shared():
            events.append("json request")

    threads = [threading.Thread(target=score), threading.Thread(target=json_call)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=5)
    assert events == ["score request 1", "score request 2", "json request"]


def test_ordinary_requests_run_side_by_side_and_a_score_waits_for_them():
    order = EndpointOrder()
    inside = threading.Barrier(3, timeout=5)  # both requests in flight at once, or this times out
    events: list[str] = []

    def request(name: str) -> None:
        with order.shared():
            inside.wait()
            time.sleep(0.05)
            events.append(name)

    threads = [threading.Thread(target=request, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    inside.wait()
    with order.exclusive():
        events.append("score")
    for thread in threads:
        thread.join(timeout=5)
    assert sorted(events[:2]) == ["a", "b"] and events[2] == "score"


def test_one_order_per_server_origin():
    assert endpoint_order("http://judge:80/v1") is endpoint_order("http://judge/v1/completions")
    assert endpoint_order("http://user:pw@judge:8080/v1") is endpoint_order("http://judge:8080/api/chat")
    assert endpoint_order("http://judge:8080") is not endpoint_order("http://judge:8081")

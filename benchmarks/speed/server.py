"""llama-cpp-python's OpenAI-compatible server as a subprocess on a free loopback port.

Started as tests/servers.py starts it (one thread for generation *and* prompt
reading), with the same context size as localeval's in-process backend. Its
defaults are kept otherwise: ``logits_all`` is on there, which localeval's
``completion`` route needs for log-probabilities and deepeval does not use.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

N_CTX = 4096


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (closed again before it is returned)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """One server process; :meth:`restart` replaces it with a fresh one (a new port)."""

    def __init__(self, model: Path, log: Path, threads: int = 1) -> None:
        self.model, self.log_path, self.threads = model, log, threads
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.model_id = ""
        self.starts = 0

    def start(self) -> None:
        """Start and wait until ``GET /v1/models`` answers; raises RuntimeError if it does not."""
        port = free_port()
        args = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--host", "127.0.0.1",
                "--port", str(port), "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads),
                "--n_ctx", str(N_CTX)]
        with self.log_path.open("a") as log:
            log.write(f"\n--- start {self.starts + 1}: {' '.join(args)}\n")
            log.flush()
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        self.starts += 1
        try:
            self.model_id = self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, limit: float = 120.0) -> str:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}; see {self.log_path}")
            try:
                reply = httpx.get(f"{self.url}/v1/models", timeout=1.0)
                if reply.status_code == 200:
                    return str(reply.json()["data"][0]["id"])
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the server was not ready after {limit} s; see {self.log_path}")

    def stop(self) -> None:
        """Terminate (kill after 10 s); safe to call twice."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self) -> None:
        """A fresh process: drops whatever an abandoned request left it generating."""
        self.stop()
        self.start()

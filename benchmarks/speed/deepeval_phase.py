"""Runs run_deepeval.py in deepeval's virtualenv and bounds each case's time.

The runner writes a ``start`` and a ``done`` line per case to an events file;
this side follows that file. A case still running ``timeout`` seconds after its
``start`` is abandoned: the runner's process group is killed, the server is
restarted (deepeval's request would otherwise keep it generating, and the next
case would queue behind it), the case is recorded as errored with
``timed_out``, and a new runner starts at the next case. The runner works in a
scratch directory, because deepeval writes ``./.deepeval/`` there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proxy import CountingProxy
from server import LlamaServer

RUNNER = Path(__file__).resolve().parent / "run_deepeval.py"
#: Seconds a runner may take to import deepeval and reach its first case.
STARTUP_LIMIT = 180.0
ENVIRONMENT = {"DEEPEVAL_TELEMETRY_OPT_OUT": "1", "DEEPEVAL_DISABLE_DOTENV": "1"}


@dataclass
class DeepevalPhase:
    """What every deepeval run of the benchmark shares."""

    python: Path
    plan: Path
    work: Path
    server: LlamaServer
    proxy: CountingProxy
    timeout: float

    def run(self, metric: str, label: str, cases: int) -> dict[int, dict[str, Any]]:
        """Each case's result (``seconds``, ``scores``, ``errors``, ``timed_out``), by case index."""
        scratch = self.work / "deepeval-cwd"
        scratch.mkdir(parents=True, exist_ok=True)
        events = self.work / f"{label.replace('|', '-')}.events.jsonl"
        events.unlink(missing_ok=True)
        results: dict[int, dict[str, Any]] = {}
        start: int | None = 0
        while start is not None and start < cases:
            start = self._one_runner(metric, label, start, scratch, events, results)
        self._drain(results)
        return results

    def _drain(self, results: dict[int, dict[str, Any]]) -> None:
        """Wait for the requests deepeval gave up on but the server still works on, and count
        that wait in the last case: the next measurement would otherwise queue behind them."""
        waited = self.proxy.drain(self.timeout)
        if self.proxy.in_flight:
            self.server.restart()
            self.proxy.upstream = self.server.url
        if results:
            last = results[max(results)]
            last["seconds"] += waited
            last["drain_s"] = waited

    def _one_runner(self, metric: str, label: str, start: int, scratch: Path, events: Path,
                    results: dict[int, dict[str, Any]]) -> int | None:
        """Run from case ``start`` until the runner ends or a case times out; the next case to run
        (None: the runner finished them all)."""
        args = [str(self.python), str(RUNNER), "--plan", str(self.plan), "--metric", metric, "--start", str(start),
                "--proxy", self.proxy.url, "--model", self.server.model_id, "--label", label, "--events", str(events)]
        log = (self.work / "deepeval.log").open("a")
        log.write(f"\n--- {label} from case {start}\n")
        log.flush()
        proc = subprocess.Popen(args, cwd=scratch, env={**os.environ, **ENVIRONMENT}, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        follower = _Follower(events)
        running: int | None = None
        deadline = time.monotonic() + STARTUP_LIMIT
        try:
            while True:
                for event in follower.new():
                    if event["event"] == "start":
                        running, deadline = event["case"], time.monotonic() + self.timeout
                    else:
                        results[event["case"]] = {**event, "timed_out": False}
                        running = None
                if proc.poll() is not None:
                    if follower.pending():
                        continue
                    return self._after_exit(proc.returncode, running, start, results)
                if time.monotonic() > deadline:
                    return self._abandon(proc, running, start, results)
                time.sleep(0.1)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            log.close()

    def _abandon(self, proc: subprocess.Popen[bytes], running: int | None, start: int,
                 results: dict[int, dict[str, Any]]) -> int:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        self.server.restart()
        self.proxy.upstream = self.server.url
        case = start if running is None else running
        results[case] = {"seconds": self.timeout, "scores": {}, "timed_out": True,
                         "errors": {"*": f"no result within the per-case limit of {self.timeout:g} s"}}
        return case + 1

    def _after_exit(self, code: int, running: int | None, start: int,
                    results: dict[int, dict[str, Any]]) -> int | None:
        if code == 0:
            return None
        case = start if running is None else running  # it crashed: that case errs, the next goes on
        results[case] = {"seconds": 0.0, "scores": {}, "timed_out": False,
                         "errors": {"*": f"the deepeval runner exited with {code}; see deepeval.log"}}
        return case + 1


class _Follower:
    """Reads the complete lines appended to a file since the last call (or since it was made:
    a runner started after a timeout must not see its predecessor's events)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0

    def new(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        return [json.loads(line) for line in complete.splitlines() if line.strip()]

    def pending(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > self.offset

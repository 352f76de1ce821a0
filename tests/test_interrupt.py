"""Ctrl-C (a real SIGINT to `localeval run`) with judge calls in flight on a real HTTP server.

The judge (servers.EchoServer on 127.0.0.1) holds every request; the metric, a plugin,
asks it a sampled, unseeded question, which the cache never keeps: only the journal can save
its answer. A first Ctrl-C starts nothing new and waits for the calls in flight, journaling
them, so ``--resume`` asks only the rest; a second one stops at once.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest
from command_line import Project, command
from servers import EchoServer

from localeval.inflight import ctrl_c_held

CASES = [f"answer {i}" for i in range(12)]
PLUGIN = '''
from localeval.backends.base import JsonRequest, Message
from localeval.metrics import metric

SCHEMA = {"type": "object", "properties": {"said": {"type": "string"}}, "required": ["said"]}


@metric("sampled_judge", required=("actual_output",))
def sampled_judge(case, judge):
    request = JsonRequest(messages=(Message(role="user", content=f"Judge: {case.actual_output}"),),
                          json_schema=SCHEMA, temperature=0.7, seed=None)  # sampled, unseeded: never cached
    return 1.0, judge.generate_json(request).value["said"]
'''
CONFIG = """
plugins = ["sampled.py"]

[dataset]
path = "cases.jsonl"

[backend]
kind = "openai-compatible"
base_url = "{url}"
max_concurrency = 3
max_attempts = 1
timeout = 120

[[metrics]]
metric = "sampled_judge"
"""


@pytest.fixture
def project(project: Project) -> Project:
    """The dataset and the plugin (the config, naming the judge's address: :func:`start_run`)."""
    project.write_cases({"input": "q", "actual_output": a} for a in CASES)
    project.write("sampled.py", PLUGIN)
    project.env["LOCALEVAL_HOME"] = str(project / "home")
    return project


def start_run(project: Project, judge: EchoServer) -> subprocess.Popen[str]:
    """``localeval run`` of the project with ``judge`` as the judge, started in the background."""
    project.write("eval.toml", CONFIG.format(url=judge.url))
    return subprocess.Popen(command("run", "-c", "eval.toml", "--run-dir", "run"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=project.environ(), cwd=project)


class Stderr:
    """A process's stderr, read line by line on a thread; ``seen`` is set (and ``on_seen`` called)
    once a line holds ``text``."""

    def __init__(self, stream: IO[str] | None, text: str, on_seen: Callable[[], object] = lambda: None) -> None:
        assert stream is not None
        self.lines: list[str] = []
        self.seen = threading.Event()
        self._text, self._on_seen = text, on_seen
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: IO[str]) -> None:
        with stream:
            for line in stream:
                self.lines.append(line)
                if self._text in line and not self.seen.is_set():
                    self.seen.set()
                    self._on_seen()

    def text(self) -> str:
        """All of it, once the process has closed it."""
        self.thread.join(timeout=60)
        return "".join(self.lines)


def journaled(run_dir: Path) -> dict[int, Any]:
    """Each journaled result's reason (what the judge said), by case index."""
    lines = (run_dir / "journal.jsonl").read_text().splitlines()[1:]
    return {e["case"]: e["result"]["reason"] for e in map(json.loads, lines)}


def judge_reply(prompt: str) -> str:
    return json.dumps({"said": prompt})


def test_ctrl_c_journals_the_judge_calls_in_flight_and_resume_sends_only_the_rest(project: Project) -> None:
    procs: list[subprocess.Popen[str]] = []
    first_three = threading.Barrier(3, timeout=60)  # the run's three calls are in flight at once, or this breaks
    finishing = threading.Event()  # the run has taken the Ctrl-C: it says it finishes what is in flight

    def ctrl_c_at_the_fourth(count: int) -> None:
        if count == 4:
            procs[0].send_signal(signal.SIGINT)

    def hold(count: int) -> None:
        if count <= 3:
            first_three.wait()
        else:  # the fourth call (and any sent with it) is answered once the run has taken the Ctrl-C
            finishing.wait(60)

    judge = EchoServer(arrived=ctrl_c_at_the_fourth, hold=hold, say=judge_reply)
    try:
        procs.append(start_run(project, judge))
        stderr = Stderr(procs[0].stderr, "Interrupted: finishing", on_seen=finishing.set)
        assert procs[0].wait(timeout=120) == 130, stderr.text()
        said = stderr.text()
        run_dir = project / "run"
        asked = list(judge.prompts)
        kept = journaled(run_dir)
        assert judge.peak == 3
        assert len(asked) >= 4  # three answered, then the fourth was in flight at Ctrl-C at least
        assert sorted(f"Judge: {CASES[i]}" for i in kept) == sorted(asked)  # every call sent is saved
        assert all(reason == f"Judge: {CASES[i]}" for i, reason in kept.items())  # with the judge's answer
        finishing_line = re.search(r"Interrupted: finishing (\d) results in flight; Ctrl-C again to stop now\n", said)
        # the fourth, and maybe some of the first three
        assert finishing_line is not None and 1 <= int(finishing_line[1]) <= 3, said
        assert f"Interrupted: {len(asked)} of {len(CASES)} results are saved. " in said, said
        assert "Traceback" not in said

        resumed = project.localeval("run", "--resume", str(run_dir))
        assert resumed.returncode == 0, resumed.stderr
    finally:
        for proc in procs:
            proc.kill()  # a run that did not stop must not outlive the test
        judge.close()
    assert Counter(judge.prompts) == Counter(f"Judge: {a}" for a in CASES)  # each case asked once over both runs
    report = json.loads((run_dir / "report.json").read_text())
    assert [c["results"][0]["reason"] for c in report["cases"]] == [f"Judge: {a}" for a in CASES]
    assert report["stats"]["resumed"] == len(asked)


def test_a_second_ctrl_c_stops_at_once_without_waiting_for_the_calls_in_flight(project: Project) -> None:
    three, release = threading.Event(), threading.Event()
    judge = EchoServer(arrived=lambda count: count == 3 and three.set(), hold=lambda count: release.wait(120),
                       say=judge_reply)  # every call held longer than the test would wait
    procs: list[subprocess.Popen[str]] = []
    try:
        procs.append(start_run(project, judge))
        proc = procs[0]
        stderr = Stderr(proc.stderr, "Interrupted: finishing")
        assert three.wait(60), "the run did not send three calls"
        proc.send_signal(signal.SIGINT)
        assert stderr.seen.wait(60), stderr.lines  # the first Ctrl-C waits for the three calls...
        assert proc.poll() is None and not any("results are saved" in line for line in stderr.lines)
        proc.send_signal(signal.SIGINT)  # ...the second does not
        stopped = time.monotonic()
        proc.wait(timeout=30)
        assert time.monotonic() - stopped < 10
        said = stderr.text()
    finally:
        for proc in procs:
            proc.kill()  # a run that did not stop must not outlive the test
        release.set()
        judge.close()
    assert proc.returncode == 130, said
    assert "Interrupted: finishing 3 results in flight; Ctrl-C again to stop now" in said
    assert f"Interrupted: 0 of {len(CASES)} results are saved. " in said
    assert "Traceback" not in said
    assert journaled(project / "run") == {}


def test_a_ctrl_c_held_back_is_delivered_when_the_block_ends() -> None:
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        with ctrl_c_held():
            signal.raise_signal(signal.SIGINT)
            steps.append("journaled")  # not cut short: the result and its count stay together
        steps.append("after")
    assert steps == ["journaled"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Python's handler is back

"""Ctrl-C (a real SIGINT to `localeval run`) with judge calls in flight on a real HTTP server.

The judge (tests.servers.EchoServer on 127.0.0.1) holds every request; the metric, a plugin,
asks it a sampled, unseeded question, which the cache never keeps: only the journal can save
its answer. A first Ctrl-C starts nothing new and waits for the calls in flight, journaling
them, so ``--resume`` asks only the rest; a second one stops at once.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from localeval.inflight import ctrl_c_held
from tests.servers import EchoServer

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


def project(tmp_path: Path, url: str) -> dict[str, str]:
    """The dataset, plugin and config in ``tmp_path``; the environment that keeps the run's files there."""
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"input": "q", "actual_output": a}) + "\n"
                                                  for a in CASES))
    (tmp_path / "sampled.py").write_text(PLUGIN)
    (tmp_path / "eval.toml").write_text(CONFIG.format(url=url))
    return {**os.environ, "LOCALEVAL_HOME": str(tmp_path / "home"), "LOCALEVAL_CACHE_DIR": str(tmp_path / "cache"),
            "COLUMNS": "300"}


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "localeval", "run", *args]


def journaled(run_dir: Path) -> dict[int, Any]:
    """Each journaled result's reason (what the judge said), by case index."""
    lines = (run_dir / "journal.jsonl").read_text().splitlines()[1:]
    return {e["case"]: e["result"]["reason"] for e in map(json.loads, lines)}


def judge_reply(prompt: str) -> str:
    return json.dumps({"said": prompt})


def test_ctrl_c_journals_the_judge_calls_in_flight_and_resume_sends_only_the_rest(tmp_path: Path) -> None:
    procs: list[subprocess.Popen[str]] = []

    def ctrl_c_at_the_fourth(count: int) -> None:
        if count == 4:
            procs[0].send_signal(signal.SIGINT)

    judge = EchoServer(delay=1.0, arrived=ctrl_c_at_the_fourth, say=judge_reply)
    try:
        env = project(tmp_path, judge.url)
        run_dir = tmp_path / "run"
        procs.append(subprocess.Popen(command("-c", str(tmp_path / "eval.toml"), "--run-dir", str(run_dir)),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
        _, stderr = procs[0].communicate(timeout=120)
        assert procs[0].returncode == 130, stderr
        asked = list(judge.prompts)
        kept = journaled(run_dir)
        assert judge.peak == 3
        assert len(asked) >= 4  # three answered, then the fourth was in flight at Ctrl-C at least
        assert sorted(f"Judge: {CASES[i]}" for i in kept) == sorted(asked)  # every call sent is saved
        assert all(reason == f"Judge: {CASES[i]}" for i, reason in kept.items())  # with the judge's answer
        finishing = re.search(r"Interrupted: finishing (\d) results in flight; Ctrl-C again to stop now\n", stderr)
        assert finishing is not None and 1 <= int(finishing[1]) <= 3, stderr  # the fourth, maybe some of the first
        assert f"Interrupted: {len(asked)} of {len(CASES)} results are saved. " in stderr, stderr
        assert "Traceback" not in stderr

        resumed = subprocess.run(command("--resume", str(run_dir)), capture_output=True, text=True, env=env,
                                 timeout=120)
        assert resumed.returncode == 0, resumed.stderr
    finally:
        for proc in procs:
            proc.kill()  # a run that did not stop must not outlive the test
        judge.close()
    assert Counter(judge.prompts) == Counter(f"Judge: {a}" for a in CASES)  # each case asked once over both runs
    report = json.loads((run_dir / "report.json").read_text())
    assert [c["results"][0]["reason"] for c in report["cases"]] == [f"Judge: {a}" for a in CASES]
    assert report["stats"]["resumed"] == len(asked)


def test_a_second_ctrl_c_stops_at_once_without_waiting_for_the_calls_in_flight(tmp_path: Path) -> None:
    judge = EchoServer(delay=60.0, say=judge_reply)  # longer than the test would wait
    procs: list[subprocess.Popen[str]] = []
    try:
        env = project(tmp_path, judge.url)
        run_dir = tmp_path / "run"
        procs.append(subprocess.Popen(command("-c", str(tmp_path / "eval.toml"), "--run-dir", str(run_dir)),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
        proc = procs[0]
        deadline = time.monotonic() + 60
        while len(judge.prompts) < 3:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        time.sleep(1.0)  # the first Ctrl-C waits for the three calls...
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)  # ...the second does not
        stopped = time.monotonic()
        _, stderr = proc.communicate(timeout=30)
        assert time.monotonic() - stopped < 10
    finally:
        for proc in procs:
            proc.kill()  # a run that did not stop must not outlive the test
        judge.close()
    assert proc.returncode == 130, stderr
    assert "Interrupted: finishing 3 results in flight; Ctrl-C again to stop now" in stderr
    assert f"Interrupted: 0 of {len(CASES)} results are saved. " in stderr
    assert "Traceback" not in stderr
    assert journaled(run_dir) == {}


def test_a_ctrl_c_held_back_is_delivered_when_the_block_ends() -> None:
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        with ctrl_c_held():
            signal.raise_signal(signal.SIGINT)
            steps.append("journaled")  # not cut short: the result and its count stay together
        steps.append("after")
    assert steps == ["journaled"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Python's handler is back

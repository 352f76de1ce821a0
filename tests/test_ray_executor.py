"""The Ray executor on a real local Ray runtime (2 CPUs, 127.0.0.1, no dashboard) with the real model.

One runtime serves the module's library tests (Ray takes seconds to start);
the command-line tests start their own, as a user's run does. The fixtures and
what the two Ray test files share: tests/conftest.py and tests/ray_runs.py.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from command_line import Project, command, report_outcomes
from ray_runs import (
    CASES,
    METRICS,
    NO_CACHE,
    TABLES,
    children,
    judge_workers,
    listening_addresses,
    loopback,
    metrics,
    needs_ray,
    outcomes,
    pid_alive,
)

from localeval.backends.llamacpp import LlamaCppOptions
from localeval.cli.exits import EXIT_FAILED, EXIT_INPUT
from localeval.data.dataset import Dataset
from localeval.data.results import RunReport
from localeval.errors import ConfigError
from localeval.run.events import Event, Events, Interrupted, MetricFinished, MetricStarted
from localeval.run.journal import Journal, JournalHeader
from localeval.run.ray_executor import JudgeRecipe, RayExecutor
from localeval.run.runner import RunInterrupted, RunOptions, evaluate
from localeval.run.schedule import Task, groups


def test_groups_are_contiguous_runs_of_the_plan() -> None:
    tasks = [Task(c, 0) for c in range(5)]
    assert groups(tasks, 2) == [[Task(0, 0), Task(1, 0)], [Task(2, 0), Task(3, 0)], [Task(4, 0)]]
    assert groups(tasks, 9) == [tasks]
    with pytest.raises(ValueError):
        groups(tasks, 0)


# -- the command line ---------------------------------------------------------------------

CONFIG = """
[dataset]
path = "cases.jsonl"

[backend]
n_threads = 1

[cache]
enabled = false

[[metrics]]
metric = "geval"
name = "correctness"
evaluation_params = ["input", "actual_output"]
evaluation_steps = ["Check whether the answer is correct."]
include_reason = false

[[metrics]]
metric = "exact_match"
"""


@pytest.fixture
def project(project: Project) -> Project:
    project.write_cases(CASES)
    project.write("eval.toml", CONFIG)
    return project


@needs_ray
@pytest.mark.model
@pytest.mark.ray
def test_a_killed_ray_driver_resumes_to_the_local_report(project: Project) -> None:
    whole = project.localeval("run", "-c", "eval.toml", "--run-dir", "whole", RAY_USAGE_STATS_ENABLED="0")
    assert whole.returncode == EXIT_FAILED, whole.stderr  # exact_match fails on four cases

    killed_dir = project / "killed"
    journal = killed_dir / "journal.jsonl"
    proc = subprocess.Popen(command("run", "-c", "eval.toml", "--run-dir", str(killed_dir), "--executor", "ray",
                                    "--ray-workers", "2"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=project.environ(RAY_USAGE_STATS_ENABLED="0"), cwd=project)
    deadline = time.monotonic() + 240
    while not (journal.is_file() and len(journal.read_text().splitlines()) >= 1 + 3):
        assert proc.poll() is None, "the run finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    runtime = children(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    journaled = len(journal.read_text().splitlines()) - 1
    assert 3 <= journaled < 12

    # The runtime the killed driver started does not outlive it.
    deadline = time.monotonic() + 60
    while any(pid_alive(pid) for pid in runtime) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert runtime and not any(pid_alive(pid) for pid in runtime)

    resumed = project.localeval("run", "--resume", str(killed_dir), "--executor", "ray", "--ray-workers", "2",
                                RAY_USAGE_STATS_ENABLED="0")
    assert resumed.returncode == EXIT_FAILED, resumed.stderr
    assert report_outcomes(killed_dir) == report_outcomes(project / "whole")
    assert re.search(r"^Ray: \d+ results from 1 node \([0-9a-f]{8}: \d+\)$", resumed.stderr, re.MULTILINE), resumed.stderr
    report = json.loads((killed_dir / "report.json").read_text())
    assert report["stats"]["resumed"] >= journaled


def test_without_ray_installed_the_executor_is_a_one_line_error(project: Project) -> None:
    hidden = project.write("no-ray/ray.py", "raise ImportError(\"No module named 'ray'\")\n").parent
    path = os.pathsep.join([str(hidden), os.environ.get("PYTHONPATH", "")])
    result = project.localeval("run", "-c", "eval.toml", "--executor", "ray", "--run-dir", "run", PYTHONPATH=path)
    assert result.returncode == EXIT_INPUT
    assert result.stderr.strip() == "error: --executor ray needs Ray: pip install 'localeval[ray]'"
    assert not (project / "run").exists()  # refused before any work


def test_ray_options_need_the_ray_executor(project: Project) -> None:
    result = project.localeval("run", "-c", "eval.toml", "--ray-address", "auto")
    assert result.returncode == EXIT_INPUT
    assert result.stderr.strip() == "error: --ray-address and --ray-workers need --executor ray"


# -- the library, on one Ray runtime for the module: last, so that no fast-tier test runs while it is up --


@needs_ray
@pytest.mark.model
@pytest.mark.ray
def test_two_ray_workers_report_what_the_local_run_does(ray_runtime: Any, ray_judge: Any,
                                                        ray_local_report: RunReport) -> None:
    seen: list[Event] = []
    listening: list[set[ipaddress.IPv4Address | ipaddress.IPv6Address]] = []

    def listen(event: Event) -> None:
        seen.append(event)
        if isinstance(event, MetricFinished) and not listening:  # while both workers are up
            listening.append(listening_addresses(os.getpid()))

    remote = evaluate(Dataset.from_cases(CASES), metrics(), ray_judge, events=Events(listen),
                      options=RunOptions(executor=RayExecutor(JudgeRecipe(TABLES, NO_CACHE), workers=2)))
    assert outcomes(remote) == outcomes(ray_local_report)  # every score exactly, in the same order
    # Air-gapped: this process and the Ray runtime under it listen on loopback addresses only.
    [addresses] = listening
    assert addresses and all(loopback(a) for a in addresses), addresses
    assert [r.error for c in remote.cases for r in c.results] == [None] * 18
    assert sum(isinstance(e, MetricFinished) for e in seen) == 18
    # The workers' calls are counted although no call went through the driver's judge.
    assert remote.stats.model_calls == ray_local_report.stats.model_calls == 12


@needs_ray
@pytest.mark.model
@pytest.mark.ray
def test_a_worker_killed_mid_run_loses_nothing(ray_runtime: Any, ray_judge: Any, ray_local_report: RunReport) -> None:
    killed: list[int] = []

    def kill_a_worker(event: Event) -> None:
        if isinstance(event, MetricFinished) and event.result.kind == "geval" and not killed:
            busy = judge_workers(os.getpid())
            assert busy, "no Ray worker to kill"
            os.kill(busy[0], signal.SIGKILL)
            killed.append(busy[0])

    remote = evaluate(Dataset.from_cases(CASES), metrics(), ray_judge, events=Events(kill_a_worker),
                      options=RunOptions(executor=RayExecutor(JudgeRecipe(TABLES, NO_CACHE), workers=2)))
    assert killed and not pid_alive(killed[0])
    assert outcomes(remote) == outcomes(ray_local_report)


@needs_ray
@pytest.mark.model
@pytest.mark.ray
def test_workers_whose_judge_differs_from_the_drivers_are_refused(ray_runtime: Any, ray_judge: Any) -> None:
    other = {None: LlamaCppOptions(n_threads=1, n_batch=128)}  # n_batch is part of the fingerprint
    with pytest.raises(ConfigError, match="the default judge of a Ray worker is not the driver.s"):
        evaluate(Dataset.from_cases(CASES[:1]), metrics(), ray_judge,
                 options=RunOptions(executor=RayExecutor(JudgeRecipe(other, NO_CACHE), workers=1)))


@needs_ray
@pytest.mark.model
@pytest.mark.ray
def test_ctrl_c_records_the_tasks_in_flight_then_stops(ray_runtime: Any, ray_judge: Any, tmp_path: Path) -> None:
    seen: list[Event] = []

    def ctrl_c_at_the_first_result(event: Event) -> None:
        seen.append(event)
        if isinstance(event, MetricFinished) and sum(isinstance(e, MetricFinished) for e in seen) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Python raises KeyboardInterrupt on the main thread

    header = JournalHeader(run_id="run1", created_at="2026-11-24T00:00:00+00:00", config={},
                           config_source="<command line>", dataset_sha256="0" * 64, cases=len(CASES),
                           metrics=[m["name"] if "name" in m else m["metric"] for m in METRICS])
    with Journal.create(tmp_path / "journal.jsonl", header) as journal, pytest.raises(RunInterrupted) as stop:
        evaluate(Dataset.from_cases(CASES), metrics(), ray_judge, journal=journal, events=Events(ctrl_c_at_the_first_result),
                 options=RunOptions(executor=RayExecutor(JudgeRecipe(TABLES, NO_CACHE), workers=2)))
    sent = {(e.case_index, e.metric) for e in seen if isinstance(e, MetricStarted)}
    recorded = {(e.case_index, e.result.metric) for e in seen if isinstance(e, MetricFinished)}
    # Two actors, two tasks ahead each: four sent, one back at Ctrl-C, three in flight; nothing sent after.
    assert len(sent) == 4 and recorded == sent
    assert [e.in_flight for e in seen if isinstance(e, Interrupted)] == [3]
    assert (stop.value.finished, stop.value.total) == (4, 18)
    with Journal.open(tmp_path / "journal.jsonl") as reopened:
        assert set(reopened.done) == sent

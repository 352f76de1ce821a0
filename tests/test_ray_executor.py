"""The Ray executor on a real local Ray runtime (2 CPUs, 127.0.0.1, no dashboard) with the real model.

One runtime serves the module's library tests (Ray takes seconds to start);
the command-line tests start their own, as a user's run does.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from run_projects import ANSWERS, command, report_outcomes, write_project

from localeval.backends.options import LlamaCppOptions
from localeval.config import CacheConfig
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.data.results import RunReport
from localeval.errors import ConfigError
from localeval.judge import load_judges
from localeval.metrics import build_metric
from localeval.paths import Paths
from localeval.run.events import Event, Events, Interrupted, MetricFinished, MetricStarted
from localeval.run.journal import Journal, JournalHeader
from localeval.run.ray_executor import JudgeRecipe, RayExecutor, import_ray, local_temp_dir
from localeval.run.runner import RunInterrupted, RunOptions, evaluate
from localeval.run.schedule import Task, groups

#: The test extra installs Ray (CI runs these); without it only the test of that error runs.
needs_ray = pytest.mark.skipif(find_spec("ray") is None, reason="the ray extra is not installed")

CASES = [TestCase(name=f"q{i}", input=q, actual_output=a, expected_output="Paris" if i == 0 else a.upper())
         for i, (q, a) in enumerate(ANSWERS)]
METRICS = [
    {"metric": "geval", "name": "correctness", "evaluation_params": ["input", "actual_output"],
     "evaluation_steps": ["Check whether the answer is correct."], "include_reason": False},
    {"metric": "geval", "name": "brevity", "evaluation_params": ["actual_output"],
     "evaluation_steps": ["Check whether the answer is short."], "include_reason": False},
    {"metric": "exact_match"},
]
TABLES = {None: LlamaCppOptions(n_threads=1)}
NO_CACHE = CacheConfig(enabled=False)


def metrics() -> list[Any]:
    return [build_metric(options.pop("metric"), options, "test") for options in map(dict, METRICS)]


def outcomes(report: RunReport) -> list[list[tuple[str, float | None, bool | None, str | None]]]:
    return [[(r.metric, r.score, r.passed, r.error) for r in case.results] for case in report.cases]


@pytest.fixture(scope="module")
def runtime() -> Iterator[Any]:
    """A local Ray runtime of 2 CPUs on 127.0.0.1, as localeval starts one (its environment first)."""
    ray = import_ray(local=True)
    ray.init(num_cpus=2, _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False,
             _temp_dir=local_temp_dir())
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def judge() -> Iterator[Any]:
    with ExitStack() as stack:
        default, _ = load_judges(TABLES, NO_CACHE, Paths.from_environ(os.environ), os.environ, stack,
                                 Console(quiet=True))
        yield default


@pytest.fixture(scope="module")
def local(judge: Any) -> RunReport:
    return evaluate(Dataset.from_cases(CASES), metrics(), judge)


def test_groups_are_contiguous_runs_of_the_plan() -> None:
    tasks = [Task(c, 0) for c in range(5)]
    assert groups(tasks, 2) == [[Task(0, 0), Task(1, 0)], [Task(2, 0), Task(3, 0)], [Task(4, 0)]]
    assert groups(tasks, 9) == [tasks]
    with pytest.raises(ValueError):
        groups(tasks, 0)


@needs_ray
@pytest.mark.model
def test_two_ray_workers_report_what_the_local_run_does(runtime: Any, judge: Any, local: RunReport) -> None:
    seen: list[Event] = []
    listening: list[set[ipaddress.IPv4Address | ipaddress.IPv6Address]] = []

    def listen(event: Event) -> None:
        seen.append(event)
        if isinstance(event, MetricFinished) and not listening:  # while both workers are up
            listening.append(listening_addresses(os.getpid()))

    remote = evaluate(Dataset.from_cases(CASES), metrics(), judge, events=Events(listen),
                      options=RunOptions(executor=RayExecutor(JudgeRecipe(TABLES, NO_CACHE), workers=2)))
    assert outcomes(remote) == outcomes(local)  # every score exactly, in the same order
    # Air-gapped: this process and the Ray runtime under it listen on loopback addresses only.
    [addresses] = listening
    assert addresses and all(loopback(a) for a in addresses), addresses
    assert [r.error for c in remote.cases for r in c.results] == [None] * 18
    assert sum(isinstance(e, MetricFinished) for e in seen) == 18
    # The workers' calls are counted although no call went through the driver's judge.
    assert remote.stats.model_calls == local.stats.model_calls == 12


@needs_ray
@pytest.mark.model
def test_a_worker_killed_mid_run_loses_nothing(runtime: Any, judge: Any, local: RunReport) -> None:
    killed: list[int] = []

    def kill_a_worker(event: Event) -> None:
        if isinstance(event, MetricFinished) and event.result.kind == "geval" and not killed:
            busy = judge_workers()
            assert busy, "no Ray worker to kill"
            os.kill(busy[0], signal.SIGKILL)
            killed.append(busy[0])

    remote = evaluate(Dataset.from_cases(CASES), metrics(), judge, events=Events(kill_a_worker),
                      options=RunOptions(executor=RayExecutor(JudgeRecipe(TABLES, NO_CACHE), workers=2)))
    assert killed and not pid_alive(killed[0])
    assert outcomes(remote) == outcomes(local)


@needs_ray
@pytest.mark.model
def test_workers_whose_judge_differs_from_the_drivers_are_refused(runtime: Any, judge: Any) -> None:
    other = {None: LlamaCppOptions(n_threads=1, n_batch=128)}  # n_batch is part of the fingerprint
    with pytest.raises(ConfigError, match="the default judge of a Ray worker is not the driver.s"):
        evaluate(Dataset.from_cases(CASES[:1]), metrics(), judge,
                 options=RunOptions(executor=RayExecutor(JudgeRecipe(other, NO_CACHE), workers=1)))


@needs_ray
@pytest.mark.model
def test_ctrl_c_records_the_tasks_in_flight_then_stops(runtime: Any, judge: Any, tmp_path: Path) -> None:
    seen: list[Event] = []

    def ctrl_c_at_the_first_result(event: Event) -> None:
        seen.append(event)
        if isinstance(event, MetricFinished) and sum(isinstance(e, MetricFinished) for e in seen) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Python raises KeyboardInterrupt on the main thread

    header = JournalHeader(run_id="run1", created_at="2026-11-24T00:00:00+00:00", config={},
                           config_source="<command line>", dataset_sha256="0" * 64, cases=len(CASES),
                           metrics=[m["name"] if "name" in m else m["metric"] for m in METRICS])
    with Journal.create(tmp_path / "journal.jsonl", header) as journal, pytest.raises(RunInterrupted) as stop:
        evaluate(Dataset.from_cases(CASES), metrics(), judge, journal=journal, events=Events(ctrl_c_at_the_first_result),
                 options=RunOptions(executor=RayExecutor(JudgeRecipe(TABLES, NO_CACHE), workers=2)))
    sent = {(e.case_index, e.metric) for e in seen if isinstance(e, MetricStarted)}
    recorded = {(e.case_index, e.result.metric) for e in seen if isinstance(e, MetricFinished)}
    # Two actors, two tasks ahead each: four sent, one back at Ctrl-C, three in flight; nothing sent after.
    assert len(sent) == 4 and recorded == sent
    assert [e.in_flight for e in seen if isinstance(e, Interrupted)] == [3]
    assert (stop.value.finished, stop.value.total) == (4, 18)
    with Journal.open(tmp_path / "journal.jsonl") as reopened:
        assert set(reopened.done) == sent


def judge_workers() -> list[int]:
    """The processes of this machine's Ray actors that hold a judge."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(b"ray::JudgeWorker"):
                found.append(int(entry.name))
        except OSError:  # it exited meanwhile
            continue
    return sorted(found)


def listening_addresses(root: int) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The addresses that ``root`` and every process under it listen on (TCP), read from /proc."""
    return {local for state, local, _ in tcp_sockets(root) if state == "0A"}  # 0A: LISTEN


def peer_addresses(root: int) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The addresses that ``root`` and every process under it are connected to (TCP), read from /proc."""
    return {peer for state, _, peer in tcp_sockets(root) if state not in ("0A", "07")}  # 07: CLOSE (unconnected)


def tcp_sockets(root: int) -> list[tuple[str, ipaddress.IPv4Address | ipaddress.IPv6Address,
                                         ipaddress.IPv4Address | ipaddress.IPv6Address]]:
    """(state, local address, remote address) of the TCP sockets of ``root`` and every process under it."""
    sockets = set()
    for pid in descendants(root) | {root}:
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:  # it exited meanwhile
            continue
        sockets |= {link[len("socket:["):-1] for link in links if link.startswith("socket:[")}
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in sockets:
                found.append((fields[3], kernel_address(fields[1].split(":")[0]),
                              kernel_address(fields[2].split(":")[0])))
    return found


def kernel_address(hexadecimal: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as /proc/net/tcp{,6} writes it: 32-bit words in host (little-endian) order."""
    raw = bytes.fromhex(hexadecimal)
    swapped = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(swapped)


def loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1, a dual-stack socket's
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def descendants(root: int) -> set[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def pid_alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


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
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path, CASES, CONFIG)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (the Ray runtime a driver started: GCS, raylet, ...)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


@needs_ray
@pytest.mark.model
def test_a_killed_ray_driver_resumes_to_the_local_report(project: Path) -> None:
    env = {**os.environ, "COLUMNS": "200", "RAY_USAGE_STATS_ENABLED": "0"}
    whole = subprocess.run(command("-c", str(project / "eval.toml"), "--run-dir", str(project / "whole")),
                           capture_output=True, text=True, env=env, timeout=300)
    assert whole.returncode in (0, 1), whole.stderr

    killed_dir = project / "killed"
    journal = killed_dir / "journal.jsonl"
    proc = subprocess.Popen(command("-c", str(project / "eval.toml"), "--run-dir", str(killed_dir),
                                    "--executor", "ray", "--ray-workers", "2"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
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

    resumed = subprocess.run(command("--resume", str(killed_dir), "--executor", "ray", "--ray-workers", "2"),
                             capture_output=True, text=True, env=env, timeout=300)
    assert resumed.returncode in (0, 1), resumed.stderr
    assert report_outcomes(killed_dir) == report_outcomes(project / "whole")
    assert re.search(r"^Ray: \d+ results from 1 node \([0-9a-f]{8}: \d+\)$", resumed.stderr, re.MULTILINE), resumed.stderr
    report = json.loads((killed_dir / "report.json").read_text())
    assert report["stats"]["resumed"] >= journaled


def test_without_ray_installed_the_executor_is_a_one_line_error(project: Path, tmp_path: Path) -> None:
    hidden = tmp_path / "no-ray"
    hidden.mkdir()
    (hidden / "ray.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(command("-c", str(project / "eval.toml"), "--executor", "ray",
                                    "--run-dir", str(project / "run")),
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: --executor ray needs Ray: pip install 'localeval[ray]'"
    assert not (project / "run").exists()  # refused before any work


def test_ray_options_need_the_ray_executor(project: Path) -> None:
    result = subprocess.run(command("-c", str(project / "eval.toml"), "--ray-address", "auto"),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: --ray-address and --ray-workers need --executor ray"

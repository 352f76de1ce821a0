"""What the Ray executor's tests share (test_ray_executor.py, test_ray_multinode.py; their fixtures
are in tests/conftest.py): the cases and metrics of a run, and what /proc says about processes."""

from __future__ import annotations

import ipaddress
import os
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from command_line import ANSWERS

from localeval.backends.llamacpp import LlamaCppOptions
from localeval.config import CacheConfig
from localeval.data.case import TestCase
from localeval.data.results import RunReport
from localeval.metrics import build_metric

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


def judge_workers(root: int) -> list[int]:
    """The processes under ``root`` (this test process: the Ray runtime it started) of Ray actors
    that hold a judge; other Ray runtimes on a busy machine are not counted."""
    found = []
    for pid in descendants(root):
        try:
            if (Path("/proc") / str(pid) / "cmdline").read_bytes().startswith(b"ray::JudgeWorker"):
                found.append(pid)
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

"""The Ray executor on a real two-node Ray cluster on this machine, with the real model.

``ray.cluster_utils.Cluster`` (Ray's own test utility) starts a head node and a
second node, each with its own raylet, object store and workers, both on
127.0.0.1 (1 CPU each, no dashboard, usage statistics off). The run connects by
address, as ``--ray-address`` does. Each test starts its own cluster: one
of them loses a node.
"""

from __future__ import annotations

import faulthandler
import os
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from test_ray_executor import (
    CASES,
    NO_CACHE,
    TABLES,
    judge_workers,
    listening_addresses,
    loopback,
    metrics,
    needs_ray,
    outcomes,
    peer_addresses,
)

from localeval.data.dataset import Dataset
from localeval.data.results import RunReport
from localeval.judge import load_judges
from localeval.paths import Paths
from localeval.run.events import Event, Events, MetricFinished, MetricStarted
from localeval.run.ray_executor import JudgeRecipe, RayExecutor, import_ray, local_temp_dir
from localeval.run.runner import RunOptions, evaluate

#: The GCS declares a node dead after this many failed health checks, one a second (Ray's
#: default: 5 every 3 s after 5 s, about 20 s), so that the node-loss test takes seconds.
FAST_HEALTH_CHECKS = {"health_check_initial_delay_ms": 1000, "health_check_period_ms": 1000,
                      "health_check_timeout_ms": 2000, "health_check_failure_threshold": 3}
#: A run that hangs (its lost node's tasks never coming back) ends the test process with a traceback.
HANG_LIMIT_S = 240


@pytest.fixture
def cluster() -> Iterator[Any]:
    """A head node and a second node of 1 CPU each, on 127.0.0.1, no dashboard."""
    import_ray(local=True)  # localeval's environment first: statistics off, this machine is 127.0.0.1
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False,
            "temp_dir": local_temp_dir()}
    # Cluster writes the head's address to $TMPDIR/ray/ray_current_cluster whatever temp_dir says;
    # under a long TMPDIR (CI's) local_temp_dir() is elsewhere and that folder does not exist.
    os.makedirs(os.path.join(tempfile.gettempdir(), "ray"), exist_ok=True)
    cluster = Cluster(initialize_head=True, head_node_args={**node, "_system_config": FAST_HEALTH_CHECKS})
    try:
        cluster.add_node(**node)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        cluster.shutdown()


@pytest.fixture(scope="module")
def judge() -> Iterator[Any]:
    with ExitStack() as stack:
        default, _ = load_judges(TABLES, NO_CACHE, Paths.from_environ(os.environ), os.environ, stack,
                                 Console(quiet=True))
        yield default


@pytest.fixture(scope="module")
def local(judge: Any) -> RunReport:
    return evaluate(Dataset.from_cases(CASES), metrics(), judge)


def raylet(node: Any) -> int:
    """The pid of a cluster node's raylet (its workers are the raylet's children)."""
    [process] = node.all_processes["raylet"]
    return int(process.process.pid)


def parent(pid: int) -> int:
    return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])


@needs_ray
@pytest.mark.model
def test_a_run_on_two_nodes_reports_what_the_local_run_does(cluster: Any, judge: Any, local: RunReport) -> None:
    [second] = cluster.worker_nodes
    seen: list[Event] = []
    while_running: list[tuple[set[int], set[Any], set[Any]]] = []

    def listen(event: Event) -> None:
        seen.append(event)
        if isinstance(event, MetricFinished) and not while_running:  # both actors are up
            # The cluster's processes were started by this one: all are under it.
            while_running.append(({parent(pid) for pid in judge_workers()}, listening_addresses(os.getpid()),
                                  peer_addresses(os.getpid())))

    executor = RayExecutor(JudgeRecipe(TABLES, NO_CACHE), address=cluster.address)  # as --ray-address
    remote = evaluate(Dataset.from_cases(CASES), metrics(), judge, events=Events(listen),
                      options=RunOptions(executor=executor))
    assert outcomes(remote) == outcomes(local)  # every score exactly, in the same order
    assert sum(isinstance(e, MetricFinished) for e in seen) == 18
    # Two actors (the cluster's 2 CPUs), one under each node's raylet, and both measured tasks.
    [(raylets, listening, peers)] = while_running
    assert raylets == {raylet(cluster.head_node), raylet(second)}
    assert set(executor.served) == {cluster.head_node.node_id, second.node_id}
    assert sum(executor.served.values()) == 18 and all(executor.served.values()) and not executor.lost
    assert executor.summary().startswith("Ray: 18 results from 2 nodes (")
    # Air-gapped: the driver and both nodes listen on, and connect to, loopback addresses only.
    assert listening and all(loopback(a) for a in listening), listening
    assert peers and all(loopback(a) for a in peers), peers


@needs_ray
@pytest.mark.model
def test_a_node_lost_mid_run_loses_nothing(cluster: Any, judge: Any, local: RunReport) -> None:
    [second] = cluster.worker_nodes
    seen: list[Event] = []

    def lose_the_second_node(event: Event) -> None:
        seen.append(event)
        if isinstance(event, MetricFinished) and event.result.kind == "geval" and second in cluster.worker_nodes:
            # Its raylet, object store and workers SIGKILLed at once, as when a machine goes.
            cluster.remove_node(second, allow_graceful=False)

    executor = RayExecutor(JudgeRecipe(TABLES, NO_CACHE), address=cluster.address)
    faulthandler.dump_traceback_later(HANG_LIMIT_S, exit=True)
    try:
        remote = evaluate(Dataset.from_cases(CASES), metrics(), judge, events=Events(lose_the_second_node),
                          options=RunOptions(executor=executor))
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert second not in cluster.worker_nodes and not second.any_processes_alive()
    assert outcomes(remote) == outcomes(local)
    # Every result recorded once; the second node's unfinished tasks were measured on the head node.
    assert sum(isinstance(e, MetricFinished) for e in seen) == 18
    assert executor.lost == {second.node_id}
    assert set(executor.served) <= {cluster.head_node.node_id, second.node_id}
    assert sum(executor.served.values()) == 18 and executor.served[cluster.head_node.node_id] > 9
    sent = [(e.case_index, e.metric) for e in seen if isinstance(e, MetricStarted)]
    assert set(sent) == {(c, m.display_name) for c in range(len(CASES)) for m in metrics()}

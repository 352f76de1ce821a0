"""The Ray executor on a real two-node Ray cluster on this machine, with the real model.

``ray.cluster_utils.Cluster`` (Ray's own test utility) starts a head node and a
second node, each with its own raylet, object store and workers, both on
127.0.0.1 (1 CPU each, no dashboard, usage statistics off). The run connects by
address, as ``--ray-address`` does. Each test starts its own cluster (the ``ray_cluster``
fixture, tests/conftest.py): one of them loses a node.
"""

from __future__ import annotations

import faulthandler
import os
from typing import Any

import pytest
from ray_runs import (
    CASES,
    NO_CACHE,
    TABLES,
    listening_addresses,
    loopback,
    metrics,
    needs_ray,
    outcomes,
    peer_addresses,
)

from localeval.data.dataset import Dataset
from localeval.data.results import RunReport
from localeval.run.events import Event, Events, MetricFinished, MetricStarted
from localeval.run.ray_executor import JudgeRecipe, RayExecutor
from localeval.run.runner import RunOptions, evaluate

#: A run that hangs (its lost node's tasks never coming back) ends the test process with a traceback.
HANG_LIMIT_S = 240


@needs_ray
@pytest.mark.model
@pytest.mark.ray
def test_a_run_on_two_nodes_reports_what_the_local_run_does(ray_cluster: Any, ray_judge: Any,
                                                            ray_local_report: RunReport) -> None:
    [second] = ray_cluster.worker_nodes
    seen: list[Event] = []
    while_running: list[tuple[set[Any], set[Any]]] = []

    def listen(event: Event) -> None:
        seen.append(event)
        if isinstance(event, MetricFinished) and not while_running:  # both actors are up
            # The cluster's processes were started by this one: all are under it.
            while_running.append((listening_addresses(os.getpid()), peer_addresses(os.getpid())))

    executor = RayExecutor(JudgeRecipe(TABLES, NO_CACHE), address=ray_cluster.address)  # as --ray-address
    remote = evaluate(Dataset.from_cases(CASES), metrics(), ray_judge, events=Events(listen),
                      options=RunOptions(executor=executor))
    assert outcomes(remote) == outcomes(ray_local_report)  # every score exactly, in the same order
    assert sum(isinstance(e, MetricFinished) for e in seen) == 18
    # Work ran on both nodes: the node ids Ray reports to the workers that measured the results
    # are the two nodes' (which processes Ray starts under which parent, on a busy machine, is Ray's).
    [(listening, peers)] = while_running
    assert set(executor.served) == {ray_cluster.head_node.node_id, second.node_id}
    assert sum(executor.served.values()) == 18 and all(executor.served.values()) and not executor.lost
    assert executor.summary().startswith("Ray: 18 results from 2 nodes (")
    # Air-gapped: the driver and both nodes listen on, and connect to, loopback addresses only.
    assert listening and all(loopback(a) for a in listening), listening
    assert peers and all(loopback(a) for a in peers), peers


@needs_ray
@pytest.mark.model
@pytest.mark.ray
def test_a_node_lost_mid_run_loses_nothing(ray_cluster: Any, ray_judge: Any, ray_local_report: RunReport) -> None:
    [second] = ray_cluster.worker_nodes
    seen: list[Event] = []

    def lose_the_second_node(event: Event) -> None:
        seen.append(event)
        if isinstance(event, MetricFinished) and event.result.kind == "geval" and second in ray_cluster.worker_nodes:
            # Its raylet, object store and workers SIGKILLed at once, as when a machine goes.
            ray_cluster.remove_node(second, allow_graceful=False)

    executor = RayExecutor(JudgeRecipe(TABLES, NO_CACHE), address=ray_cluster.address)
    faulthandler.dump_traceback_later(HANG_LIMIT_S, exit=True)
    try:
        remote = evaluate(Dataset.from_cases(CASES), metrics(), ray_judge, events=Events(lose_the_second_node),
                          options=RunOptions(executor=executor))
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert second not in ray_cluster.worker_nodes and not second.any_processes_alive()
    assert outcomes(remote) == outcomes(ray_local_report)
    # Every result recorded once; the second node's unfinished tasks were measured on the head node.
    assert sum(isinstance(e, MetricFinished) for e in seen) == 18
    assert executor.lost == {second.node_id}
    assert set(executor.served) <= {ray_cluster.head_node.node_id, second.node_id}
    assert sum(executor.served.values()) == 18 and executor.served[ray_cluster.head_node.node_id] > 9
    sent = [(e.case_index, e.metric) for e in seen if isinstance(e, MetricStarted)]
    assert set(sent) == {(c, m.display_name) for c in range(len(CASES)) for m in metrics()}

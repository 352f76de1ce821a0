"""Measuring a run's tasks on a Ray cluster: ``localeval run --executor ray``.

Needs the extra: ``pip install 'localeval[ray]'``. Ray is imported when a run
uses this executor, never at import (``tests/test_import.py``).

How a run goes (docs/scale.md has the commands and the measurements):

- Each Ray **actor** (:class:`JudgeWorker`) loads its own judges from the run's
  judge tables (:class:`JudgeRecipe`: the same config the driver loaded its
  judges from; the llama.cpp model is read from the worker node's model folder,
  an HTTP backend's server is asked from there) and its own cache, in the
  node's cache folder. Before any task the driver checks that every actor's
  judges have the driver's fingerprints (same model file, same settings).
- The cases and the prepared metrics go to the object store once; a task is two
  numbers (case, metric) and its result, a :class:`MetricFinished`, comes back.
- The planned tasks are cut into contiguous **groups** of the prefix order
  (:func:`localeval.run.schedule.groups`); a group goes whole to one actor, whose
  calls then share their prompt prefixes as in a local run. An actor takes its
  next group when it has finished sending the last one: the balance comes from
  the actors, the driver only keeps each one a few tasks ahead.
- Results stream back with ``ray.wait``; only the driver writes the journal and
  emits events, so ``--resume`` works as with the local executor.
- Ctrl-C (on the driver; Ray's own processes block SIGINT) sends nothing new and
  waits for the tasks in flight, recording each; a second Ctrl-C records the
  results already back and stops, and the actors are killed with the tasks they
  were running (``--resume`` computes those).
- A worker that dies is restarted and its unfinished tasks retried by Ray
  (``max_restarts``, ``max_task_retries``); finished results are already on the
  driver and in the journal.
- A node that is lost takes its actors with it, and Ray would restart them
  elsewhere only where a CPU is free: in a cluster the actors fill, never, and
  their tasks would wait for ever. So the driver looks at the nodes every
  second (``ray.nodes()``), kills the actors of a dead node for good and sends
  their unfinished tasks to the other actors.

Air-gapped: Ray's usage statistics are off (``RAY_USAGE_STATS_ENABLED=0`` unless
the environment sets it); a local runtime that this module starts listens on
127.0.0.1 only (:func:`import_ray`) and starts no dashboard.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import time
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from rich.console import Console

from localeval.backends.base import Fingerprint, JudgeUsage
from localeval.backends.options import BackendOptions
from localeval.config import CacheConfig
from localeval.data.case import Case
from localeval.errors import ConfigError, LocalevalError
from localeval.inflight import ctrl_c_held
from localeval.judge import load_judges
from localeval.paths import Paths
from localeval.plugins import load_plugins
from localeval.run.events import Events, Interrupted, MetricFinished, MetricStarted
from localeval.run.execution import Record, Work
from localeval.run.panel import JudgePanel
from localeval.run.schedule import Task, group_size, groups

LOOPBACK = ("127.0.0.1", "::1")


class ExecutorError(LocalevalError):
    """The executor could not go on (Ray missing, a worker that cannot start or keeps dying)."""


@dataclass(frozen=True)
class JudgeRecipe:
    """How a worker loads the same judges as the driver: the run's judge tables, its cache
    settings, and the plugins its metrics and backends come from."""

    tables: Mapping[str | None, BackendOptions]
    cache: CacheConfig
    plugins: tuple[str, ...] = ()
    plugin_base: Path = field(default_factory=Path.cwd)  #: where relative plugin files are

    def cpus(self) -> int:
        """CPUs one worker uses: the most threads a judge table asks (1 for HTTP judges)."""
        return max((getattr(table, "n_threads", 1) or 1 for table in self.tables.values()), default=1)


class JudgeWorker:
    """A Ray actor's state: its own judges, the cases and the prepared metrics (made remote at run time)."""

    def __init__(self, plugins: tuple[str, ...], plugin_base: Path, shared: list[Any]) -> None:
        # ``shared``: the object store's references to the cases and the pickled metrics and
        # recipe, in a list so that Ray passes the references (the driver keeps them alive for restarts).
        import ray

        cases: list[Case]
        cases, pickled = ray.get(shared)
        # The metrics and the recipe come pickled so that their plugin modules are imported first:
        # a metric's class, or the options model of a backend kind that a plugin file registers.
        load_plugins(plugins, plugin_base, "plugins")
        prepared: list[Any]
        recipe: JudgeRecipe
        prepared, recipe = pickle.loads(pickled)  # noqa: S301 -- the driver's own objects, through Ray
        self._stack = ExitStack()  # open for the actor's life: ray.kill ends the process, and the judges with it
        judge, judges = load_judges(recipe.tables, recipe.cache, Paths.from_environ(os.environ), os.environ,
                                    self._stack, Console(stderr=True, quiet=True))
        self._work = Work(cases, prepared, JudgePanel.of(prepared, judge, judges), Events())

    def fingerprints(self) -> dict[str | None, Fingerprint]:
        """The fingerprint of each of this worker's judges, by name (None: the default judge)."""
        return {name: judge.fingerprint for name, judge in self._work.panel.judges.items()}

    def node(self) -> str:
        """The Ray id of the node this worker runs on."""
        import ray

        return str(ray.get_runtime_context().get_node_id())

    def measure(self, task: Task) -> tuple[str, MetricFinished]:
        """The result of ``task``, and the node that measured it (a restarted worker may have moved)."""
        return self.node(), self._work.measure(task)


@dataclass(frozen=True)
class RayExecutor:
    """Measures tasks on Ray actors; see the module's docstring.

    ``address``: a running cluster (``ray://host:10001``, ``host:6379``, ``auto``);
    None starts a local runtime on 127.0.0.1 for the run. ``workers``: actors
    (None: as many as the cluster's CPUs hold at :meth:`JudgeRecipe.cpus` each).
    """

    recipe: JudgeRecipe
    address: str | None = None
    workers: int | None = None
    max_restarts: int = 3  #: per actor; its unfinished tasks are retried as often
    #: Results per node id in the last run, and the nodes it lost (see :meth:`summary`).
    served: Counter[str] = field(default_factory=Counter, compare=False, repr=False)
    lost: set[str] = field(default_factory=set, compare=False, repr=False)

    def summary(self) -> str:
        """One line on the last run: its results per node (ids shortened), and the nodes it lost."""
        counts = ", ".join(f"{node[:8]}: {count}" for node, count in self.served.most_common())
        nodes = f"{len(self.served)} node{'s' if len(self.served) != 1 else ''}"
        line = f"Ray: {sum(self.served.values())} results from {nodes} ({counts})"
        if self.lost:
            line += (f"; lost mid-run: {', '.join(sorted(n[:8] for n in self.lost))} "
                     "(unfinished tasks went to the other nodes)")
        return line

    def execute(self, tasks: Sequence[Task], work: Work, record: Record) -> JudgeUsage:
        ray = import_ray(local=self.address is None)
        connected = connect(ray, self.address)
        actors: list[Any] = []
        try:
            parallel = max((j.capabilities.parallel_requests for j in work.panel.judges.values()), default=1)
            # Held until the run ends: a restarted actor reads them again.
            shared = [ray.put(list(work.cases)), ray.put(pickle.dumps((list(work.metrics), self.recipe)))]
            actors = self._start(ray, work, parallel, shared)
            size = group_size(len(tasks), len(actors))
            self.served.clear()
            self.lost.clear()
            stream = _Stream(ray, actors, deque(groups(tasks, size)), 2 * parallel, work)
            try:
                return stream.run(record)
            finally:
                self.served.update(stream.served)
                self.lost.update(stream.nodes[index] for index in stream.lost)
        finally:
            for actor in actors:
                ray.kill(actor)
            if connected:
                ray.shutdown()

    def _start(self, ray: ModuleType, work: Work, parallel: int, shared: list[Any]) -> list[Any]:
        """The actors (each serving ``parallel`` calls at once), their judges loaded and checked
        against the driver's."""
        cpus = self.recipe.cpus()
        count = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1) // cpus))
        remote = ray.remote(num_cpus=cpus, max_restarts=self.max_restarts, max_task_retries=self.max_restarts,
                            max_concurrency=parallel)(JudgeWorker)
        actors = [remote.remote(self.recipe.plugins, self.recipe.plugin_base, shared) for _ in range(count)]
        expected = {name: judge.fingerprint for name, judge in work.panel.judges.items()}
        try:
            found = ray.get([actor.fingerprints.remote() for actor in actors])
        except ray.exceptions.RayError as err:
            raise ExecutorError(f"a Ray worker could not load its judges: {_cause(err)}") from err
        for fingerprints in found:
            if fingerprints != expected:
                raise ConfigError(_mismatch(expected, fingerprints))
        return actors


#: Seconds between two looks at the cluster's nodes (``ray.nodes()``: one call to Ray's GCS).
NODE_CHECK_PERIOD = 1.0


class _Stream:
    """Keeps each actor a few tasks ahead, group by group, and records results as they come back."""

    def __init__(self, ray: ModuleType, actors: list[Any], pending: deque[list[Task]], ahead: int,
                 work: Work) -> None:
        self.ray, self.actors, self.pending, self.ahead, self.work = ray, actors, pending, ahead, work
        self.queues: list[deque[Task]] = [deque() for _ in actors]  # the rest of each actor's group
        self.in_flight = [0] * len(actors)
        self.running: dict[Any, tuple[int, Task]] = {}  # ObjectRef -> (actor index, task)
        self.stopped = False
        self.used = JudgeUsage()  #: what the results recorded so far cost on the actors
        self.nodes: list[str] = ray.get([actor.node.remote() for actor in actors])  #: each actor's node id
        self.lost: set[int] = set()  #: actors whose node died: killed, their tasks sent to the others
        self.served: Counter[str] = Counter()  #: results recorded, per node id
        self.checked = time.monotonic()

    def run(self, record: Record) -> JudgeUsage:
        """Record every result as it comes back. On Ctrl-C nothing new is sent and the tasks in
        flight are waited for and recorded; a second Ctrl-C records those already back and stops."""
        for index in range(len(self.actors)):
            self._feed(index)
        try:
            while self.running:
                for ref in self._wait():
                    self._feed(self._take(ref, record))
        except KeyboardInterrupt:
            self._drain(record)
            raise
        return self.used

    def _wait(self) -> list[Any]:
        """The next result back (or none for a while), the nodes looked at every second."""
        back, _ = self.ray.wait(list(self.running), num_returns=1, timeout=NODE_CHECK_PERIOD)
        if time.monotonic() - self.checked >= NODE_CHECK_PERIOD:
            self._check_nodes()
        return list(back)

    def _check_nodes(self) -> None:
        """Give up the actors of a dead node: kill them for good (Ray would wait for a free CPU to
        restart them) and put their unsent tasks first in line; those in flight fail and follow."""
        self.checked = time.monotonic()
        # An actor that Ray restarted on another node before this look is given up too (its node is
        # known from its results): its tasks are then measured by the others, none is lost.
        alive = {node["NodeID"] for node in self.ray.nodes() if node["Alive"]}
        for index, node in enumerate(self.nodes):
            if index not in self.lost and node not in alive:
                self.lost.add(index)
                self.ray.kill(self.actors[index], no_restart=True)
                if self.queues[index]:
                    self.pending.appendleft(list(self.queues[index]))
                    self.queues[index].clear()
        if len(self.lost) == len(self.actors):
            raise ExecutorError("every node of the run's Ray workers was lost")

    def _drain(self, record: Record) -> None:
        """After a Ctrl-C: send nothing more, and record the tasks in flight as they come back; a
        second Ctrl-C records those already back and raises (the caller kills the actors)."""
        self.stopped = True
        self.work.events.emit(Interrupted(len(self.running)))
        try:
            while self.running:
                for ref in self._wait():
                    self._take(ref, record, drained=True)
        except KeyboardInterrupt:
            if self.running:
                back, _ = self.ray.wait(list(self.running), num_returns=len(self.running), timeout=0)
                for ref in back:
                    self._take(ref, record, drained=True)
            raise

    def _take(self, ref: Any, record: Record, drained: bool = False) -> int:
        """Record the result of ``ref``, which is back; the index of the actor that sent it.

        ``drained``: the run is stopping after a Ctrl-C; a task that failed is then left to --resume.
        A task of an actor whose node was lost goes back in line.
        """
        with ctrl_c_held():  # journaled and counted together, or not at all
            index, task = self.running.pop(ref)
            self.in_flight[index] -= 1
            try:
                node, finished = self.ray.get(ref)
            except self.ray.exceptions.RayError as err:
                if drained:
                    return index
                if index not in self.lost:
                    self._check_nodes()  # the error may be the first news of a lost node
                if index not in self.lost:
                    raise ExecutorError(f"a Ray worker failed beyond its retries: {_cause(err)}") from err
                self.pending.appendleft([task])
                return index
            self.nodes[index] = node  # a restarted actor may run elsewhere
            self.served[node] += 1
            self.used += finished.result.usage or JudgeUsage()
            self.stopped = record(finished) or self.stopped
        return index

    def _feed(self, index: int) -> None:
        """Send actor ``index`` tasks until it has ``ahead`` in flight: its group's, then the next group's.
        For a lost actor, the others are fed (the tasks it gave back may be all that is left)."""
        if index in self.lost:
            for other in range(len(self.actors)):
                if other not in self.lost:
                    self._feed(other)
            return
        queue = self.queues[index]
        while not self.stopped and self.in_flight[index] < self.ahead:
            if not queue:
                if not self.pending:
                    return
                queue.extend(self.pending.popleft())
            task = queue.popleft()
            with ctrl_c_held():  # a task sent is a task waited for
                self.running[self.actors[index].measure.remote(task)] = (index, task)
                self.in_flight[index] += 1
            self.work.events.emit(MetricStarted(task.case, self.work.metrics[task.metric].display_name))


def import_ray(local: bool) -> ModuleType:
    """The ray module, its usage statistics off; a one-line error naming the extra when it is missing.

    ``local``: for a runtime started here, whose every server must listen on
    127.0.0.1 only. Ray binds its servers to the node's address, which on Linux is
    the machine's network address even when asked for 127.0.0.1, unless
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (a single-machine node: loopback
    only); Ray reads that when it is imported, so it is set first.
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # read by ray.init and what it starts
    if local:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError as err:
        raise ExecutorError("--executor ray needs Ray: pip install 'localeval[ray]'") from err
    return ray


def connect(ray: ModuleType, address: str | None) -> bool:
    """Connect to the cluster at ``address``, or start a local runtime on 127.0.0.1 (None);
    False when this process was already connected (the caller's runtime: left alone)."""
    if ray.is_initialized():
        return False
    if address is not None:
        ray.init(address=address, log_to_driver=False)
        return True
    node = ray.util.get_node_ip_address()
    if node not in LOOPBACK:  # ray was imported before import_ray could make it single-machine
        raise ExecutorError(f"a local Ray runtime would listen on {node}, not 127.0.0.1: set "
                            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 before ray is imported, or give --ray-address")
    ray.init(address="local", _node_ip_address=node, include_dashboard=False, log_to_driver=False,
             _temp_dir=local_temp_dir())
    return True


#: A Unix socket's path may not exceed 107 bytes, and a local runtime's sockets lie at
#: ``<temp dir>/session_<date>_<time>_<pid>/sockets/plasma_store`` (about 70 bytes after the temp dir).
_MAX_TEMP_DIR = 36


def local_temp_dir() -> str:
    """Where a local Ray runtime keeps its sessions: Ray's default (``$TMPDIR/ray``) when its socket
    paths fit, else a folder of this user's in /tmp (a long TMPDIR, as CI machines set, would make
    Ray fail to start with 'AF_UNIX path length cannot exceed 107 bytes')."""
    default = os.path.join(tempfile.gettempdir(), "ray")
    return default if len(default) <= _MAX_TEMP_DIR else f"/tmp/ray-{os.getuid()}"  # noqa: S108 -- short on purpose


def _cause(err: Exception) -> str:
    """The first line of what went wrong on the worker (Ray's message wraps it in a traceback)."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}".splitlines()[0]
    lines = [line for line in str(err).splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__


def _mismatch(expected: dict[str | None, Fingerprint], found: dict[str | None, Fingerprint]) -> str:
    for name, fingerprint in expected.items():
        if found.get(name) != fingerprint:
            which = "the default judge" if name is None else f"judge {name!r}"
            return (f"{which} of a Ray worker is not the driver's ({found.get(name)} != {fingerprint}): "
                    "every node needs the same model file and settings")
    return "a Ray worker has other judges than the driver"

"""Shared fixtures and the two tiers of the tests.

The tiers (tests/tiers.py): a test that loads a model, starts a server process, a Ray runtime or
Chromium carries the marker that says so (model, server, ray, browser; pyproject.toml declares
them), and :func:`pytest_collection_modifyitems` marks it ``slow`` too: ``-m "not slow"`` is the
fast tier, ``-m slow`` the other. Each test runs confined to its markers (:func:`tiers.confined`),
and a test that uses a fixture of :data:`FIXTURE_MARKERS` without the markers it needs fails
before the fixture is made.

The real-model fixtures need the models present (``localeval models pull``; .ci/run does it). A
missing model is an error, not a skip: the real-model tests are the evidence that the backend works.
"""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import tiers
from command_line import Project
from ray_runs import CASES, NO_CACHE, TABLES, metrics
from rich.console import Console
from servers import FAST_RETRIES, KEY, ServerProcess

from localeval.backends.catalog import ModelCatalog, ModelSpec
from localeval.data.dataset import Dataset
from localeval.data.results import RunReport
from localeval.judge import load_judges
from localeval.paths import Paths
from localeval.run.ray_executor import import_ray, local_temp_dir
from localeval.run.runner import evaluate

#: The fixtures that load a model or start a server or a Ray runtime, and the markers a test that
#: uses one must carry.
FIXTURE_MARKERS = {
    "default_model": {"model"},
    "llama_backend": {"model"},
    "shipped_backend": {"model"},
    "llama_server": {"model", "server"},
    "openai_backend": {"model", "server"},
    "standin": {"model", "server"},
    "ollama_backend": {"model", "server"},
    "ray_judge": {"model"},
    "ray_local_report": {"model"},
    "ray_runtime": {"ray"},
    "ray_cluster": {"ray"},
}


def markers_of(item: pytest.Item) -> frozenset[str]:
    """The tier markers ``item`` carries."""
    return frozenset(marker for marker in tiers.SLOW_MARKERS if item.get_closest_marker(marker) is not None)


def pytest_configure(config: pytest.Config) -> None:
    tiers.install()


@pytest.hookimpl(tryfirst=True)  # before -m selects: the slow marker must be there
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of the slow tier is marked ``slow``."""
    for item in items:
        if markers_of(item):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """A test's set-up, confined to its markers (tests/tiers.py). A test that uses a fixture of
    :data:`FIXTURE_MARKERS` without its markers fails first, before the fixture loads anything (a
    session's fixture may be loaded already: no import would show it)."""
    have = markers_of(item)
    missing = {f"{name}: {', '.join(sorted(FIXTURE_MARKERS[name] - have))}"
               for name in getattr(item, "fixturenames", ()) if FIXTURE_MARKERS.get(name, set()) - have}
    if missing:
        pytest.fail(f"the test uses fixtures that need markers it lacks ({'; '.join(sorted(missing))})",
                    pytrace=False)
    with tiers.confined(have):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test's call, confined to its markers."""
    with tiers.confined(markers_of(item)):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """A test's tear-down is not confined: the fixtures of a module or a session that earlier,
    marked tests used are closed there. After it, the modules the test had hidden are back."""
    try:
        return (yield)
    finally:
        tiers.put_back()


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """An empty project folder; ``project.localeval(...)`` runs the command there
    (tests/command_line.py). A test file that needs files in it extends this fixture."""
    return Project(tmp_path)


@pytest.fixture(scope="session", autouse=True)
def runs_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runs started by tests (the CLI's, in subprocesses too) keep their journals out of $HOME, and
    read no judge check but the tests' own: a check made on this machine would change what runs say."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCALEVAL_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))
        patch.setenv("LOCALEVAL_CHECKS_DIR", str(tmp_path_factory.mktemp("judge-checks")))
        yield


@pytest.fixture(scope="session", autouse=True)
def smollm2_where_no_model_is_named() -> Iterator[None]:
    """The tests check mechanics (valid JSON, distributions, arithmetic, reports), not verdicts: where a
    config or command names no judge model, they take SmolLM2-135M, several times faster than the default
    judge (Qwen2.5-Coder-1.5B) and at chance, through the variable a user would set (LOCALEVAL_MODEL).
    A test of the default itself unsets it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCALEVAL_MODEL", "smollm2-135m-instruct")
        yield


@pytest.fixture(scope="session", autouse=True)
def ctrl_c_raises_keyboard_interrupt() -> Iterator[None]:
    """Ctrl-C is Python's KeyboardInterrupt here, however pytest was started.

    The Ctrl-C tests send a real SIGINT, to this process or to a ``localeval run`` it starts. A
    process started in the background by a shell without job control (``cmd &`` in a script) has
    SIGINT ignored, and Python, and every process it starts, then keeps ignoring it: the runs
    those tests interrupt would finish instead (as they should where Ctrl-C is ignored). Python's
    handler here also gives the children the default action back, and so their own handler.
    """
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if previous is not None:  # None: not set from Python, and so not restorable from it
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session")
def default_model() -> tuple[ModelSpec, Path]:
    """The judge model where none is named: SmolLM2, as LOCALEVAL_MODEL says here (see above)."""
    catalog = ModelCatalog.from_environ(Paths.from_environ(os.environ).home, os.environ)
    return catalog.resolve(None)


@pytest.fixture(scope="session")
def llama_backend(default_model: tuple[ModelSpec, Path]) -> Iterator[object]:
    from localeval.backends.llamacpp import LlamaCppBackend

    spec, path = default_model
    backend = LlamaCppBackend(path, spec)
    yield backend
    backend.close()


@pytest.fixture(scope="session", params=["smollm2-135m-instruct", "gemma-3-270m"])
def shipped_backend(request: pytest.FixtureRequest) -> Iterator[object]:
    """Each shipped model in turn: their tokenizers differ (49k vs 262k vocab, chat vs plain)."""
    from localeval.backends.llamacpp import LlamaCppBackend

    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve(request.param)
    backend = LlamaCppBackend(path, spec)
    yield backend
    backend.close()


# -- servers on 127.0.0.1, shared by the HTTP backend test files; always stopped -----------


@pytest.fixture(scope="session")
def llama_server(default_model, tmp_path_factory) -> Iterator[ServerProcess]:
    """llama-cpp-python's own server with the default model, demanding the API key ``KEY``."""
    log = tmp_path_factory.mktemp("server") / "log.txt"
    server = ServerProcess.llama_cpp_python(default_model[1], log, api_key=KEY)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def openai_backend(llama_server) -> Iterator[object]:
    """The ``llama-cpp-python`` preset (completion prefill, ChatML) on ``llama_server``."""
    from localeval.backends import make_backend

    backend = make_backend("llama-cpp-python", base_url=llama_server.url, api_key=KEY, **FAST_RETRIES)
    yield backend
    backend.close()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def standin(default_model) -> Iterator[object]:
    """The Ollama stand-in (tests/ollama_standin.py) on a loopback port."""
    from ollama_standin import OllamaStandIn  # imports llama_cpp: only when a test needs it

    server = OllamaStandIn(default_model[1])
    server.serve()
    yield server
    server.close()


@pytest.fixture(scope="session")
def ollama_backend(standin) -> Iterator[object]:
    """The Ollama backend on the stand-in."""
    from localeval.backends.ollama import OllamaBackend

    backend = OllamaBackend("smollm2:135m", host=standin.url, **FAST_RETRIES)
    yield backend
    backend.close()


# -- the Ray executor's tests (test_ray_executor.py, test_ray_multinode.py) ---------------------


@pytest.fixture(scope="session")
def ray_judge() -> Iterator[Any]:
    """The default model as the driver's judge (1 thread, no cache), as the Ray workers load it."""
    with ExitStack() as stack:
        default, _ = load_judges(TABLES, NO_CACHE, Paths.from_environ(os.environ), os.environ, stack,
                                 Console(quiet=True))
        yield default


@pytest.fixture(scope="session")
def ray_local_report(ray_judge: Any) -> RunReport:
    """The run of ray_runs.CASES in this process: what every Ray run must report."""
    return evaluate(Dataset.from_cases(CASES), metrics(), ray_judge)


@pytest.fixture(scope="module")
def ray_runtime() -> Iterator[Any]:
    """A local Ray runtime of 2 CPUs on 127.0.0.1, as localeval starts one (its environment first);
    one per test module (Ray takes seconds to start)."""
    ray = import_ray(local=True)
    ray.init(num_cpus=2, _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False,
             _temp_dir=local_temp_dir())
    yield ray
    ray.shutdown()


#: The GCS declares a node dead after this many failed health checks, one a second (Ray's
#: default: 5 every 3 s after 5 s, about 20 s), so that a node-loss test takes seconds.
FAST_HEALTH_CHECKS = {"health_check_initial_delay_ms": 1000, "health_check_period_ms": 1000,
                      "health_check_timeout_ms": 2000, "health_check_failure_threshold": 3}


@pytest.fixture
def ray_cluster() -> Iterator[Any]:
    """A two-node Ray cluster on this machine (``ray.cluster_utils.Cluster``, Ray's own test
    utility): a head node and a second node of 1 CPU each, on 127.0.0.1, no dashboard; one per
    test (a test may lose a node)."""
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

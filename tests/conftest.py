"""Shared fixtures: the real default model, loaded once per test session.

The model must be present (``localeval models pull``; .ci/run does it). A missing
model is an error, not a skip: the real-model tests are the evidence that the
backend works.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import FAST_RETRIES, KEY, ServerProcess

from localeval.backends.catalog import ModelCatalog, ModelSpec
from localeval.paths import Paths


@pytest.fixture(scope="session", autouse=True)
def runs_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runs started by tests (the CLI's, in subprocesses too) keep their journals out of $HOME."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCALEVAL_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))
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
    catalog = ModelCatalog(Paths.from_environ(os.environ).home)
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

"""Shared fixtures: the real default model, loaded once per test session.

The model must be present (``localeval models pull``; .ci/run does it). A missing
model is an error, not a skip: the real-model tests are the evidence that the
backend works.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from localeval.catalog import ModelCatalog, ModelSpec
from localeval.paths import Paths


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

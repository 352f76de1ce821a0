"""The two tiers of the tests, and the guard that keeps the fast one fast.

A test that loads a model, starts a server process, a Ray runtime or a browser carries the
marker that says so (declared in pyproject.toml); tests/conftest.py marks each such test
``slow`` as well. While a test runs, :func:`confined` holds it to its markers:

* without ``model``, ``import llama_cpp`` fails in this process, and the CLI runs in a
  subprocess through tests/guarded_cli.py, which refuses it there too;
* without ``ray``, ``import ray`` fails likewise, here and in the CLI's subprocess;
* without ``server`` (and ``model``), a server process (tests/servers.py) or the Ollama stand-in
  refuses to start; without ``browser``, Chromium refuses to run.

So a fast-tier test that would load a model fails at once, with a message naming the marker.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import pytest
from guarded_cli import Refusal

#: The markers of the slow tier (pyproject.toml declares them, with what each one means).
SLOW_MARKERS = ("model", "server", "ray", "browser")
#: The packages a test may import only with the marker: what they are imported for is loading a
#: model (llama-cpp-python) or starting a Ray runtime.
GUARDED_IMPORTS = {"llama_cpp": "model", "ray": "ray"}

#: The markers of the test that is running now (all of them outside a test: no guard).
current: frozenset[str] = frozenset(SLOW_MARKERS)
#: The one finder that refuses the guarded imports, first on ``sys.meta_path`` for the whole
#: session (:func:`install`); :func:`confined` sets what it refuses. One object, always there:
#: pytester's in-process runs save and restore ``sys.meta_path`` around a test.
REFUSAL = Refusal({})
#: Every guarded module :func:`confined` has hidden from a test, to put back after each test's
#: tear-down (:func:`put_back`): pytester also restores ``sys.modules`` as it was at its set-up.
_hidden: dict[str, ModuleType] = {}


def install() -> None:
    """Put :data:`REFUSAL` first on ``sys.meta_path`` (tests/conftest.py, as the session starts)."""
    if REFUSAL not in sys.meta_path:
        sys.meta_path.insert(0, REFUSAL)


def blocked_imports(markers: frozenset[str]) -> dict[str, str]:
    """The guarded packages a test with ``markers`` may not import, with the marker each needs."""
    return {name: marker for name, marker in GUARDED_IMPORTS.items() if marker not in markers}


@contextmanager
def confined(markers: frozenset[str]) -> Iterator[None]:
    """Hold the code run inside to what ``markers`` allow (see the module's docstring)."""
    global current
    blocked = blocked_imports(markers)
    # An earlier, marked test may have imported them: hidden for this test, put back after it.
    hidden = {name: module for name, module in sys.modules.items() if name.partition(".")[0] in blocked}
    _hidden.update(hidden)
    for name in hidden:
        del sys.modules[name]
    previous = current, REFUSAL.blocked
    current, REFUSAL.blocked = markers, blocked
    try:
        yield
    finally:
        current, REFUSAL.blocked = previous
        sys.modules.update(hidden)


def put_back() -> None:
    """The guarded modules a test had hidden back in ``sys.modules``, if something took them out."""
    for name, module in _hidden.items():
        sys.modules.setdefault(name, module)


def require(*markers: str, what: str) -> None:
    """Fail the running test unless it carries every one of ``markers``: it is about to do ``what``."""
    missing = [marker for marker in markers if marker not in current]
    if missing:
        pytest.fail(f"{what} needs the marker(s) {', '.join(missing)} on the test (tests/tiers.py)")

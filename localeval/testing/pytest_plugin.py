"""pytest integration: the ``localeval_judge`` fixture, the ``localeval`` marker, and their options.

Registered through the ``pytest11`` entry point, so pytest loads it in every
session where localeval is installed. At import and at start it only declares
options, ini keys and the marker: the judge is loaded the first time a test asks
for ``localeval_judge``, once per session, and closed when the session ends.

Tests that use the fixture get the ``localeval`` marker automatically, so
``-m "not localeval"`` runs everything that needs no model, and ``-m localeval``
only the judged tests. ``--localeval-skip`` skips the judged tests instead.

Settings, highest first: command-line options, ini keys (``localeval_config``,
``localeval_model``, ``localeval_backend``, ``localeval_base_url``,
``localeval_cache``), then the ``[backend]`` and ``[cache]`` sections of the
config file, then the defaults (the default model, in-process, behind the cache).
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from localeval.backends.base import Backend
    from localeval.config import RunConfig

#: The marker of tests judged by a local model.
MARKER = "localeval"
#: The session fixture that gives the judge.
FIXTURE = "localeval_judge"

_MARKER_HELP = (
    f"{MARKER}: the test is judged by a local model (select with -m {MARKER}, "
    f"leave out with -m 'not {MARKER}'); tests using {FIXTURE} get it automatically"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """The options and ini keys; declaring them reads nothing."""
    group = parser.getgroup("localeval", "localeval: tests judged by local models")
    group.addoption(
        "--localeval-config", metavar="PATH",
        help="A localeval TOML config; its [backend] and [cache] sections set up the judge.",
    )
    group.addoption("--localeval-model", metavar="NAME", help="Judge model: a name, a .gguf path, or a server's model.")
    group.addoption("--localeval-backend", metavar="KIND", help="llama.cpp (default), ollama, openai-compatible, ...")
    group.addoption("--localeval-base-url", metavar="URL", help="The judge server's URL, for HTTP backends.")
    group.addoption(
        "--no-localeval-cache", action="store_true", default=False,
        help="Neither read nor write localeval's cache of judge calls.",
    )
    group.addoption(
        "--localeval-skip", action="store_true", default=False,
        help=f"Skip the tests marked {MARKER} (those using {FIXTURE} included).",
    )
    parser.addini("localeval_config", "A localeval TOML config, relative to the ini file.", default="")
    parser.addini("localeval_model", "Judge model: a name, a .gguf path (relative to the ini file)...", default="")
    parser.addini("localeval_backend", "Judge backend kind.", default="")
    parser.addini("localeval_base_url", "The judge server's URL.", default="")
    parser.addini("localeval_cache", "Use localeval's cache of judge calls.", type="bool", default=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)


@pytest.hookimpl(tryfirst=True)  # before -m deselects, so it sees the markers added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that use the judge; skip the marked ones under ``--localeval-skip``."""
    skip = config.getoption("localeval_skip")
    for item in items:
        if FIXTURE in getattr(item, "fixturenames", ()) and item.get_closest_marker(MARKER) is None:
            item.add_marker(MARKER)
        if skip and item.get_closest_marker(MARKER) is not None:
            item.add_marker(pytest.mark.skip(reason=f"--localeval-skip: {MARKER} tests are skipped"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How far to trust each judge the session's assertions asked: its check, or that it has none."""
    assertions = sys.modules.get("localeval.testing.assertions")
    if assertions is None:  # nothing was judged through localeval.testing: nothing to say, nothing imported
        return
    from localeval.backends.base import Fingerprint
    from localeval.metaeval.check import CheckStore
    from localeval.metaeval.trust import DEFAULT_JUDGE, assess
    from localeval.paths import Paths
    from localeval.reports.trust import trust_lines

    store = CheckStore(Paths.from_environ(os.environ).judge_checks)
    lines = []
    for fingerprint, metrics in assertions.judged():
        judge = Fingerprint.model_validate_json(fingerprint)
        lines += trust_lines(assess([m.model_copy(update={"judge_name": None}) for m in metrics],
                                    {DEFAULT_JUDGE: judge}, store))
    if lines:
        terminalreporter.section("localeval: how far to trust the judges")
        for level, text in lines:
            terminalreporter.write_line(text, red=level == "alarm", yellow=level == "warn", green=level == "ok")


@pytest.fixture(scope="session")
def localeval_judge(pytestconfig: pytest.Config) -> Iterator[Backend]:
    """The configured judge, loaded on first use, shared by the session, closed at its end.

    A judge that cannot be loaded (no model, bad option, server down) fails
    every test that uses it with one line saying why; it is tried once.
    """
    with ExitStack() as stack:
        yield _load(pytestconfig, stack)


def _load(config: pytest.Config, stack: ExitStack) -> Backend:
    from rich.console import Console

    from localeval.errors import LocalevalError
    from localeval.judge import load_judge
    from localeval.paths import Paths

    try:
        settings = judge_settings(config)
        quiet = Console(file=io.StringIO())  # no spinner between pytest's lines
        paths = Paths.from_environ(os.environ)
        return load_judge(settings.backend, settings.cache, paths, os.environ, stack, quiet)
    except LocalevalError as error:
        problem = f"{FIXTURE}: {error}"
    pytest.fail(problem, pytrace=False)  # outside the except: one line, without the chain


def judge_settings(config: pytest.Config) -> RunConfig:
    """The run configuration the options and ini keys give (its backend and cache are what count).

    Errors are :class:`localeval.errors.ConfigError` naming the option or the file.
    """
    from localeval.cli.settings import settings_from_cli

    here = config.invocation_params.dir
    ini_dir = config.inipath.parent if config.inipath else config.rootpath
    config_file = _option(config, "config")
    model = _option(config, "model")
    return settings_from_cli(
        dataset=None, metrics=None, threads=None, fields=None, list_delimiter=None, report=None,
        cache_dir=None,
        config=_relative(config_file[0], here if config_file[1] else ini_dir) if config_file[0] else None,
        model=_model(model[0], here if model[1] else ini_dir) if model[0] else None,
        backend=_option(config, "backend")[0],
        base_url=_option(config, "base_url")[0],
        no_cache=config.getoption("no_localeval_cache") or not config.getini("localeval_cache"),
    )


def _option(config: pytest.Config, name: str) -> tuple[str | None, bool]:
    """An option's value from the command line, else the ini file; and whether it came from the command line."""
    value = config.getoption(f"localeval_{name}")
    if value:
        return str(value), True
    ini = config.getini(f"localeval_{name}")
    return (str(ini), False) if ini else (None, False)


def _relative(path: str, base: Path) -> Path:
    return base / Path(path).expanduser()  # an absolute path stays as it is


def _model(model: str, base: Path) -> str:
    """A model given as a path is relative to where it was given; a name is a name."""
    if model.endswith(".gguf") or "/" in model:
        return str(_relative(model, base))
    return model

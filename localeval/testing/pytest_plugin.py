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

What the tests judged is kept while they run: each assertion tells its judgement
(:mod:`localeval.testing.recording`), which becomes JUnit properties of the test
(``localeval.<metric>.score`` …, in ``--junitxml``), a row of the summary table at
the end, and, with ``--localeval-report DIR`` (ini ``localeval_report``), a localeval
report written to DIR. When every collected test was deselected, one line says by what.
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Generator, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from localeval.testing.recording import Judgement, listening

if TYPE_CHECKING:
    from localeval.backends.base import Backend
    from localeval.config import RunConfig
    from localeval.data.results import JudgeTrust
    from localeval.testing.collected import JudgedCase

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
    group.addoption(
        "--localeval-report", metavar="DIR",
        help="Write the session's localeval report to DIR: report.json, report.html and a run folder's other files.",
    )
    parser.addini("localeval_config", "A localeval TOML config, relative to the ini file.", default="")
    parser.addini("localeval_model", "Judge model: a name, a .gguf path (relative to the ini file)...", default="")
    parser.addini("localeval_backend", "Judge backend kind.", default="")
    parser.addini("localeval_base_url", "The judge server's URL.", default="")
    parser.addini("localeval_cache", "Use localeval's cache of judge calls.", type="bool", default=True)
    parser.addini("localeval_report", "Write the session's localeval report to this folder (relative to the ini file).",
                  default="")


@dataclass
class _Session:
    """What the plugin keeps over a session: the judged cases, the deselected tests, the report's fate."""

    created_at: str
    report_dir: Path | None
    judged: list[JudgedCase] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    deselected: int = 0
    deselected_marked: int = 0
    written: list[Path] = field(default_factory=list)
    report_problem: str | None = None
    trust: dict[str, JudgeTrust] | None = None


_SESSION = pytest.StashKey[_Session]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)
    config.stash[_SESSION] = _Session(datetime.now(UTC).isoformat(timespec="seconds"), report_dir(config))


def report_dir(config: pytest.Config) -> Path | None:
    """The folder ``--localeval-report`` (else ini ``localeval_report``) names; a file there is a usage error."""
    value, given_here = _option(config, "report")
    if not value:
        return None
    path = _relative(value, config.invocation_params.dir if given_here else _ini_dir(config))
    if path.exists() and not path.is_dir():
        where = "--localeval-report" if given_here else "ini localeval_report"
        raise pytest.UsageError(f"{where}: {path} is a file, not a folder")
    return path


@pytest.hookimpl(tryfirst=True)  # before -m deselects, so it sees the markers added here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that use the judge; skip the marked ones under ``--localeval-skip``."""
    skip = config.getoption("localeval_skip")
    for item in items:
        if FIXTURE in getattr(item, "fixturenames", ()) and item.get_closest_marker(MARKER) is None:
            item.add_marker(MARKER)
        if skip and item.get_closest_marker(MARKER) is not None:
            item.add_marker(pytest.mark.skip(reason=f"--localeval-skip: {MARKER} tests are skipped"))


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Count the deselected tests, and those of them marked ``localeval``, for the line about an empty selection."""
    if not items:
        return
    session = items[0].config.stash[_SESSION]
    session.deselected += len(items)
    session.deselected_marked += sum(1 for item in items if item.get_closest_marker(MARKER) is not None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Listen to the assertions while the test runs (set-up and tear-down included)."""
    with listening(_TestListener(item, item.config.stash[_SESSION])):
        return (yield)


class _TestListener:
    """Takes one test's judgements: its JUnit properties, and the session's record."""

    def __init__(self, item: pytest.Item, session: _Session) -> None:
        self.item = item
        self.session = session
        self.taken: set[str] = set()  # metric keys this test's properties already use

    def __call__(self, judgement: Judgement) -> None:
        from localeval.testing.collected import JudgedCase, junit_properties

        path, line, _ = self.item.location
        judged = JudgedCase(self.item.nodeid, f"{path}:{(line or 0) + 1}", self.item.name, judgement)
        with self.session.lock:  # a test may assert from several threads
            self.item.user_properties.extend(junit_properties(judgement, self.taken))
            self.session.judged.append(judged)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the session's report where ``--localeval-report`` says (before the terminal summary, which tells it)."""
    state = session.config.stash.get(_SESSION, None)
    if state is None or state.report_dir is None or hasattr(session.config, "workerinput"):
        return  # an xdist worker writes no report, as it writes no JUnit XML: it would overwrite the others'
    from localeval.errors import InputError
    from localeval.reports.formats import write_reports
    from localeval.testing.session_report import run_report

    try:
        report = run_report(state.judged, list(_trust(state).values()), state.created_at)
        state.written = write_reports(report, state.report_dir)
    except InputError as error:
        state.report_problem = f"--localeval-report: {error}"
        if session.exitstatus == pytest.ExitCode.OK:  # the report asked for is missing: not a success
            session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    """The judged metrics' table, how far to trust their judges, where the report went; or why nothing ran."""
    state = config.stash.get(_SESSION, None)
    if state is None:
        return
    if state.judged:
        _write_table(terminalreporter, state)
    if state.written:
        terminalreporter.write_line(f"localeval: report written to {state.written[0].parent}")
    if state.report_problem:
        terminalreporter.write_line(state.report_problem, red=True)
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        line = _nothing_selected(config, state)
        if line:
            terminalreporter.write_line(line, yellow=True)


def _write_table(terminal: pytest.TerminalReporter, state: _Session) -> None:
    from localeval.reports.trust import trust_lines
    from localeval.testing.summary import rows, table_lines

    trust = _trust(state)
    terminal.ensure_newline()  # after the progress dots: else the first line under the header is blank
    terminal.section("localeval: judged metrics")
    for number, line in enumerate(table_lines(rows(state.judged, trust))):
        terminal.write_line(line, bold=number == 0)
    lines = trust_lines(list(trust.values()))
    if lines:
        terminal.section("localeval: how far to trust the judges")
        for level, text in lines:
            terminal.write_line(text, red=level == "alarm", yellow=level == "warn", green=level == "ok")


def _trust(state: _Session) -> dict[str, JudgeTrust]:
    """Each model judge's stored check on what the session asked it, read once."""
    if state.trust is None:
        from localeval.metaeval.check import CheckStore
        from localeval.paths import Paths
        from localeval.testing.session_report import judge_trust

        state.trust = judge_trust(state.judged, CheckStore(Paths.from_environ(os.environ).judge_checks))
    return state.trust


def _nothing_selected(config: pytest.Config, state: _Session) -> str | None:
    """One line when every collected test was deselected and localeval's tests or marker were among the reasons."""
    markexpr = config.option.markexpr or ""
    if not state.deselected or not (state.deselected_marked or MARKER in markexpr):
        return None
    by = [f"-m {markexpr!r}"] if markexpr else []
    by += [f"-k {config.option.keyword!r}"] if config.option.keyword else []
    by += ["--deselect"] if config.getoption("deselect", None) else []
    count = "the one collected test was" if state.deselected == 1 else f"all {state.deselected} collected tests were"
    return (f"localeval: {count} deselected by {', '.join(by) or 'a plugin'} ({state.deselected_marked} marked "
            f"{MARKER}): none ran, so pytest exits 5")


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
    ini_dir = _ini_dir(config)
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


def _ini_dir(config: pytest.Config) -> Path:
    return config.inipath.parent if config.inipath else config.rootpath


def _relative(path: str, base: Path) -> Path:
    return base / Path(path).expanduser()  # an absolute path stays as it is


def _model(model: str, base: Path) -> str:
    """A model given as a path is relative to where it was given; a name is a name."""
    if model.endswith(".gguf") or "/" in model:
        return str(_relative(model, base))
    return model

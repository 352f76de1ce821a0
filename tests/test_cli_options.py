"""Each command-line option spelled once: a flag several commands take is one declaration, every
option says what it does, and what ``--resume`` takes is one list (``cli/options.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.text import Text

from localeval.cli import options
from localeval.cli.app import app
from localeval.cli.options import RESUME_TAKES, resume_changes
from localeval.cli.settings import CommandLine
from localeval.config import RunConfig
from localeval.errors import ConfigError

#: Flags that mean something else in each command that has them, and so are declared apart.
APART = {
    "--report": "run/arena: a copy of the run's JSON report; meta-eval: the correlations; check-judge: the check",
    "--html": "run/arena: also the HTML report; report: only the HTML report",
    "--junit": "run: also JUnit XML; report: only JUnit XML",
    "--csv": "run: also the results as CSV; report: only the CSV",
    "--out": "a file of goldens, of cases, of meta-eval items, or report's folder",
    "--metric": "run: metrics to run (repeatable); meta-eval: the one metric checked",
    "--json": "runs list: print the listing as JSON (a flag); compare: also write the comparison as JSON to a file",
    "--name": "run/arena: the run's name; runs list: only runs whose name holds the text",
    "--tag": "run/arena: a tag of the run; runs list: only runs with the tag",
    "--limit": "meta-eval: the first N records; runs list: the N newest runs",
}


def commands() -> Iterator[tuple[str, Any]]:
    """Every command of the app (sub-commands included), by its full name."""

    def walk(command: Any, path: str) -> Iterator[tuple[str, Any]]:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                yield from walk(sub, f"{path} {name}".strip())
        else:
            yield path, command

    yield from walk(typer.main.get_command(app), "")


def declarations() -> dict[str, dict[str, tuple[Any, ...]]]:
    """Each long flag → each command that takes it → how it is declared there (its flags and help)."""
    found: dict[str, dict[str, tuple[Any, ...]]] = {}
    for name, command in commands():
        for param in command.params:
            longs = [opt for opt in param.opts if opt.startswith("--")]
            if param.param_type_name == "option" and longs and longs[0] != "--help":
                found.setdefault(longs[0], {})[name] = (tuple(param.opts), tuple(param.secondary_opts), param.help)
    return found


def test_a_flag_several_commands_take_is_declared_once() -> None:
    shared = {flag: by_command for flag, by_command in declarations().items() if len(by_command) > 1}
    assert {"--no-cache", "--cache-dir", "--config", "--model", "--backend", "--threads", "--resume"} <= set(shared)
    differing = {flag: by_command for flag, by_command in shared.items()
                 if flag not in APART and len(set(by_command.values())) > 1}
    assert differing == {}


def test_every_option_and_argument_says_what_it_does_as_written() -> None:
    """Help text is rich markup: an unescaped [backend] would vanish from the screen."""
    missing, garbled = [], []
    for name, command in commands():
        texts = {"the command": command.help or "", **{param.name: param.help or "" for param in command.params}}
        for what, text in texts.items():
            if not text.strip():
                missing.append(f"{name}: {what}")
            elif Text.from_markup(text).plain != text.replace("\\[", "["):
                garbled.append(f"{name}: {what}")
    assert (missing, garbled) == ([], [])


def test_the_cache_options_are_every_commands_that_uses_the_cache() -> None:
    found = declarations()
    users = {"run", "arena", "synthesize", "generate", "meta-eval", "check-judge"}
    assert set(found["--no-cache"]) == users
    assert set(found["--cache-dir"]) == users | {"cache info", "cache clear"}


# --- what --resume takes: one list ---------------------------------------------------------


def test_every_option_resume_takes_is_an_option_of_run_and_said_in_its_help() -> None:
    run = dict(commands())["run"]
    params = {param.name: param for param in run.params}
    assert set(RESUME_TAKES) <= set(params)
    resume_help = params["resume"].help
    flags = [next(opt for opt in params[name].opts if opt.startswith("--")) for name in RESUME_TAKES]
    assert all(flag in resume_help for flag in flags)


def test_a_resume_puts_on_top_exactly_the_options_the_list_names() -> None:
    given = {"threads": 3, "no_cache": True, "model": "other", "list_delimiter": ";", "order": "input"}
    changes = CommandLine.given(given, RESUME_TAKES)
    assert changes == CommandLine(threads=3, no_cache=True)  # order is not a setting; model is not resumable
    resumed = changes.apply(RunConfig())
    assert (resumed.backend.n_threads, resumed.cache.enabled) == (3, False)  # type: ignore[attr-defined]
    assert resumed.backend.model is None  # type: ignore[attr-defined]
    assert resumed.dataset.list_delimiter == RunConfig().dataset.list_delimiter


def resumed(*args: str) -> CommandLine:
    """What ``localeval run --resume RUN *args`` puts on top of the run's settings, as the command works it out."""
    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    with command.make_context("run", ["--resume", "RUN", *args]) as context:
        return resume_changes(context)


def test_a_resume_refuses_every_other_option_by_its_flag() -> None:
    assert resumed("--threads", "2", "--report", "r.json") == CommandLine(threads=2, report=Path("r.json"))
    with pytest.raises(ConfigError) as refused:
        resumed("--threads", "2", "--list-delimiter", ";", "--model", "m", "--map", "q=input")
    assert str(refused.value) == "--resume runs with the run's own settings; drop --model, --map, --list-delimiter"


def test_adding_a_name_to_the_list_is_all_a_resume_needs_to_take_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    """--list-delimiter, say: refused today; with its name in the list, taken and put on top."""
    monkeypatch.setattr(options, "RESUME_TAKES", (*RESUME_TAKES, "list_delimiter"))
    changes = resumed("--list-delimiter", ";")
    assert changes == CommandLine(list_delimiter=";")
    assert changes.apply(RunConfig()).dataset.list_delimiter == ";"

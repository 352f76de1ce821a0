"""The ``localeval`` command: thin glue between options, config files and the library.

This module makes the typer app and lists its commands; each lives in a module
of its concern: :mod:`~localeval.cli.run_commands` (run, report, compare, arena),
:mod:`~localeval.cli.data_commands` (synthesize, generate, meta-eval),
:mod:`~localeval.cli.manage_commands` (backends, models, cache),
:mod:`~localeval.cli.runs_commands` (runs). Exit codes:
:mod:`~localeval.cli.exits`.
"""

from __future__ import annotations

import errno
import sys
from typing import Annotated

import typer

from localeval.cli import (
    completion,
    data_commands,
    judge_commands,
    manage_commands,
    metrics_command,
    run_commands,
    runs_commands,
    view,
)
from localeval.cli.exits import EXIT_INPUT, EXIT_PIPE_CLOSED, EXIT_UNEXPECTED, output_to_pipe, unexpected
from localeval.cli.options import ReadableHelp, say, stderr
from localeval.errors import LocalevalError
from localeval.reports.terminal import print_line, printable

# ReadableHelp: every command's help as written (flags without a type, repeatable options saying
# so), and an unknown command as one line with what it may have meant. Completion: docs/getting-started.md.
app = typer.Typer(no_args_is_help=True, cls=ReadableHelp, help="Evaluate LLM outputs with local judge models.")
models_app = typer.Typer(no_args_is_help=True, cls=ReadableHelp, help="Known models: list, pull, register.")
cache_app = typer.Typer(no_args_is_help=True, cls=ReadableHelp, help="The cache of judge calls.")
app.add_typer(models_app, name="models")
app.add_typer(cache_app, name="cache")
backends_app = typer.Typer(no_args_is_help=True, cls=ReadableHelp, help="Judge backends: what they support.")
app.add_typer(backends_app, name="backends")
runs_app = typer.Typer(cls=ReadableHelp, help="The runs in the runs folder: `localeval runs` (or `runs list`) lists them, newest first; `runs remove` and `runs prune` delete them.")
app.add_typer(runs_app, name="runs")


def versions() -> list[str]:
    """``localeval X.Y.Z``, and llama-cpp-python's version where it is installed: read from the
    installed packages' metadata, so nothing is imported and no model is loaded."""
    from importlib.metadata import PackageNotFoundError, version

    lines = [f"localeval {version('localeval')}"]
    try:
        lines.append(f"llama-cpp-python {version('llama-cpp-python')}")
    except PackageNotFoundError:
        pass
    return lines


def _show_version(shown: bool) -> None:
    if shown:
        for line in versions():
            say(line)
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_show_version, help="Show the versions of localeval and llama-cpp-python.",
    )] = False,
) -> None:
    """Evaluate LLM outputs with local judge models."""


#: What a system says when it refuses a file (a full disk, a read-only one, no permission): the
#: user's to fix, so one line with exit code 2; any other OSError is unexpected.
REFUSALS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


def main() -> None:
    """Entry point: every failure is one line on stderr and its exit code (:mod:`~localeval.cli.exits`).

    An expected error (bad input, a system that refuses a file) is exit code 2; any other
    exception is a bug: exit code 4, its traceback saved to a file the line names, so that
    CI never reads a crash as exit code 1, "a metric failed".
    """
    try:
        if not completion.answer(sys.argv[1:]):
            app()
    except Exception as error:  # noqa: BLE001 -- every failure ends here, as one line
        if isinstance(error, BrokenPipeError) and output_to_pipe():  # `localeval … | head` read its fill
            sys.exit(EXIT_PIPE_CLOSED)
        code, line = explained(error)
        print_line(stderr(), f"[bold red]error:[/] {printable(line)}")  # case text in a message acts on no terminal
        sys.exit(code)


def explained(error: Exception) -> tuple[int, str]:
    """The exit code and the one line that say what went wrong."""
    if isinstance(error, LocalevalError):
        return EXIT_INPUT, str(error)
    if isinstance(error, OSError) and error.errno in REFUSALS:
        return EXIT_INPUT, f"{error.filename}: {error.strerror}" if error.filename else str(error.strerror)
    return EXIT_UNEXPECTED, unexpected(error)


app.command()(run_commands.run)
app.command()(data_commands.synthesize)
app.command()(data_commands.generate)
app.command()(run_commands.report)
app.command()(run_commands.compare)
app.command()(run_commands.arena)
app.command("meta-eval")(data_commands.meta_eval)
app.command("check-judge")(judge_commands.check_judge)
app.command()(metrics_command.metrics)
app.command()(view.view)
backends_app.command("check")(manage_commands.backends_check)
backends_app.command("list")(manage_commands.backends_list)
models_app.command("list")(manage_commands.models_list)
models_app.command("pull")(manage_commands.models_pull)
models_app.command("add")(manage_commands.models_add)
models_app.command("remove")(manage_commands.models_remove)
cache_app.command("info")(manage_commands.cache_info)
cache_app.command("clear")(manage_commands.cache_clear)
runs_app.callback(invoke_without_command=True)(runs_commands.runs)
runs_app.command("list")(runs_commands.runs_list)
runs_app.command("remove")(runs_commands.runs_remove)
runs_app.command("prune")(runs_commands.runs_prune)

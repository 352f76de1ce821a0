"""The ``localeval`` command: thin glue between options, config files and the library.

This module makes the typer app and lists its commands; each lives in a module
of its concern: :mod:`~localeval.cli.run_commands` (run, report, compare, arena),
:mod:`~localeval.cli.data_commands` (synthesize, generate, meta-eval),
:mod:`~localeval.cli.manage_commands` (backends, models, cache). Exit codes:
:mod:`~localeval.cli.exits`.
"""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from localeval.cli import data_commands, judge_commands, manage_commands, run_commands
from localeval.cli.exits import EXIT_INPUT
from localeval.cli.options import stderr
from localeval.errors import LocalevalError

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Evaluate LLM outputs with local judge models.")
models_app = typer.Typer(no_args_is_help=True, help="Known models: list, pull, register.")
cache_app = typer.Typer(no_args_is_help=True, help="The cache of judge calls.")
app.add_typer(models_app, name="models")
app.add_typer(cache_app, name="cache")
backends_app = typer.Typer(no_args_is_help=True, help="Judge backends: what they support.")
app.add_typer(backends_app, name="backends")


def main() -> None:
    """Entry point: every expected error is one line on stderr and exit code 2."""
    try:
        app()
    except LocalevalError as error:
        stderr().print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
        sys.exit(EXIT_INPUT)


app.command()(run_commands.run)
app.command()(data_commands.synthesize)
app.command()(data_commands.generate)
app.command()(run_commands.report)
app.command()(run_commands.compare)
app.command()(run_commands.arena)
app.command("meta-eval")(data_commands.meta_eval)
app.command("check-judge")(judge_commands.check_judge)
backends_app.command("check")(manage_commands.backends_check)
backends_app.command("list")(manage_commands.backends_list)
models_app.command("list")(manage_commands.models_list)
models_app.command("pull")(manage_commands.models_pull)
models_app.command("add")(manage_commands.models_add)
models_app.command("remove")(manage_commands.models_remove)
cache_app.command("info")(manage_commands.cache_info)
cache_app.command("clear")(manage_commands.cache_clear)

"""The ``localeval`` command: thin glue between options, config files and the library.

This module makes the typer app and lists its commands; each lives in a module
of its concern: :mod:`~localeval.cli.run_commands` (run, report, compare),
:mod:`~localeval.cli.data_commands` (synthesize, generate, meta-eval),
:mod:`~localeval.cli.manage_commands` (backends, models, cache). Exit codes:
:mod:`~localeval.cli.exits`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from localeval.cli import data_commands, manage_commands, run_commands
from localeval.cli.exits import EXIT_INPUT
from localeval.cli.options import (
    BackendOption,
    BaseUrlOption,
    ModelOption,
    ThreadsOption,
    stderr,
    stdout,
    user_paths,
)
from localeval.errors import ConfigError, LocalevalError

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


@app.command()
def arena(
    run_a: Annotated[str, typer.Argument(help="One run: id, folder or report.json.")],
    config: Annotated[Path, typer.Option("--config", "-c", help="A TOML config: the judge, and arena metrics only.")],
    run_b: Annotated[str | None, typer.Argument(
        help="The other run, of the same inputs; without it, RUN_A's [[targets]] are compared.")] = None,
    names: Annotated[str | None, typer.Option(help="NAME_A,NAME_B for the two runs' outputs (default: the run ids).")] = None,
    model: ModelOption = None,
    backend: BackendOption = None,
    base_url: BaseUrlOption = None,
    threads: ThreadsOption = None,
    report: Annotated[Path | None, typer.Option(help="Also write the JSON report here.")] = None,
    html: Annotated[Path | None, typer.Option(help="Also write the HTML report here.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")] = False,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default: ~/.cache/localeval).")] = None,
    run_dir: Annotated[Path | None, typer.Option(help="Keep the journal and reports here.")] = None,
) -> None:
    """Judge two runs of the same inputs against each other, or one run's targets: each output pair in both orders, ranked.

    Exit codes as `run`'s: 0 the first contestant's outputs were preferred (every arena metric
    passed), 1 not, 3 some comparison errored, 2 bad usage or input (different datasets).
    """
    from localeval.cli import session

    pair = None
    if names is not None:
        parts = [n.strip() for n in names.split(",")]
        if len(parts) != 2 or not all(parts):
            raise ConfigError(f"--names takes NAME_A,NAME_B, got {names!r}")
        pair = (parts[0], parts[1])
    settings = session.settings_from_cli(
        dataset=None, config=config, metrics=None, model=model, threads=threads, fields=None, list_delimiter=None,
        report=report, no_cache=no_cache, cache_dir=cache_dir, backend=backend, base_url=base_url, html=html,
    )
    flags = session.RunFlags(run_dir=run_dir)
    raise typer.Exit(session.arena(settings, run_a, run_b, pair, user_paths(), stdout(), stderr(), os.environ, flags))


app.command("meta-eval")(data_commands.meta_eval)
backends_app.command("check")(manage_commands.backends_check)
backends_app.command("list")(manage_commands.backends_list)
models_app.command("list")(manage_commands.models_list)
models_app.command("pull")(manage_commands.models_pull)
models_app.command("add")(manage_commands.models_add)
models_app.command("remove")(manage_commands.models_remove)
cache_app.command("info")(manage_commands.cache_info)
cache_app.command("clear")(manage_commands.cache_clear)

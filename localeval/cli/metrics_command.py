"""``localeval metrics``: every metric a run can name, from the registry, plugins' included."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from localeval.cli.options import ConfigOption, stdout


def metrics(
    config: ConfigOption = None,
    plugin: Annotated[list[str] | None, typer.Option(help="Your metrics: a .py file or a module; repeatable.")] = None,
) -> None:
    """List every metric a run can name, and what it needs (docs/metrics.md: how each scores).

    For each: the case fields it reads with its default options, whether it asks a judge, its
    default threshold, and which way a better score goes. Your metrics are listed too: those of
    the config file's plugins (--config) and of --plugin.
    """
    from localeval.config import RunConfig
    from localeval.metrics.registry import metric_kinds
    from localeval.plugins import load_plugins
    from localeval.reports.terminal import print_table

    load_plugins([str(Path(p).resolve()) if p.endswith(".py") else p for p in plugin or ()], Path.cwd(),
                 "command line: --plugin")
    if config is not None:
        RunConfig.load(config)  # imports the config's plugins
    table = Table()
    for column in ("metric", "reads", "judge", "threshold", "better"):
        table.add_column(column)
    for kind in metric_kinds():
        reads = "its options say" if kind.reads is None else ", ".join(kind.reads)
        judge = "its options say" if kind.needs_judge is None else "yes" if kind.needs_judge else "no"
        table.add_row(escape(kind.name), reads, judge, f"{kind.threshold:g}",
                      "lower" if kind.lower_is_better else "higher")
    print_table(stdout(), table)

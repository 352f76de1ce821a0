"""What the commands share: the options several take, the two consoles, the user's paths."""

from __future__ import annotations

import functools
import os
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from localeval.errors import ConfigError
from localeval.paths import Paths


@functools.cache
def _consoles() -> tuple[Console, Console]:
    # Made on first use: a Console reads TERM, COLUMNS, NO_COLOR... from the environment.
    return Console(), Console(stderr=True)


def stdout() -> Console:
    """The console of results: what scripts read."""
    return _consoles()[0]


def stderr() -> Console:
    """The console of progress, warnings and errors."""
    return _consoles()[1]


def say(text: str) -> None:
    """One line of plain text on stdout (a path in it is not markup), never wrapped: scripts read it."""
    from localeval.reports.terminal import print_line

    print_line(stdout(), escape(text))


def user_paths() -> Paths:
    """Where models, the cache and runs live, from the environment."""
    return Paths.from_environ(os.environ)


BackendOption = Annotated[
    str | None,
    typer.Option(
        "--backend",
        help="llama.cpp (default), ollama, openai-compatible, lmstudio, vllm, llama-server, ... "
        "(all: `localeval backends list`). Another kind than the config's leaves its [backend] table out.",
    ),
]
BaseUrlOption = Annotated[list[str] | None, typer.Option(
    help="The server's URL, for HTTP backends; repeat it or separate URLs by commas for a fleet."
)]
ThreadsOption = Annotated[int | None, typer.Option(help="CPU threads for the judge (llama.cpp).")]
ModelOption = Annotated[
    str | None, typer.Option(help="Judge model: a name from `models list`, a .gguf path, or a server's model.")
]


#: The options ``--resume`` takes beside the run, by parameter name: where the reports' copies go,
#: the cache, the judge's CPU threads, how the remaining results are scheduled and where they run.
#: None of them changes a score (the cache key and the fingerprint leave threads out; results are
#: reported in input order whatever the order they ran in). Any other option, e.g. one that changes
#: how the dataset is read or which judge answers (even ``--base-url``: the journal does not record
#: which model answered the results it holds, and a server's URL is part of its judge's identity),
#: is refused by :func:`refuse_on_resume`.
RESUME_TAKES = frozenset({
    "resume", "threads", "report", "html", "junit", "no_cache", "cache_dir",
    "fail_fast", "order", "executor", "ray_address", "ray_workers",
})


def refuse_on_resume(context: typer.Context) -> None:
    """Refuse, as one line naming them, the options and arguments given to a ``--resume`` that
    :data:`RESUME_TAKES` does not list: the run keeps its own settings, so they would be dropped.

    Read from the command's parameters as given, so a new option is refused until it is
    listed there: one rule for every command that resumes (``run``, ``arena``).
    """
    given = []
    for param in context.command.params:
        source = context.get_parameter_source(param.name or "")
        if param.name in RESUME_TAKES or source is None or source.name in ("DEFAULT", "DEFAULT_MAP"):
            continue
        long = [opt for opt in param.opts if opt.startswith("--")] if param.param_type_name == "option" else []
        given.append(long[0] if long else (param.name or "").upper())  # --map, or an argument: DATASET
    if given:
        raise ConfigError(f"--resume runs with the run's own settings; drop {', '.join(given)}")

"""What the commands share: the options several take, the two consoles, the user's paths."""

from __future__ import annotations

import functools
import os
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

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

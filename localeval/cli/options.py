"""What the commands share: the options several take, the two consoles, the user's paths.

An option more than one command takes is declared here once, as a typer ``Annotated``
alias (``no_cache: NoCacheOption = False``), so its flag and help read the same in every
command; what ``--resume`` takes is the one list :data:`RESUME_TAKES`.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.core
from rich.console import Console
from rich.markup import escape

from localeval.errors import ConfigError, unknown_name
from localeval.paths import Paths

if TYPE_CHECKING:
    from localeval.cli.settings import CommandLine


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """The reader went away (``localeval metrics | head``): exit as cli/exits.py says, not 1 ("a metric
        failed"), rich's own choice."""
        from localeval.cli.exits import EXIT_PIPE_CLOSED, output_to_pipe

        self.quiet = True
        output_to_pipe()  # standard output to the null device: Python's flush at exit says nothing
        raise SystemExit(EXIT_PIPE_CLOSED)


@functools.cache
def _consoles() -> tuple[Console, Console]:
    # Made on first use: a Console reads TERM, COLUMNS, NO_COLOR... from the environment.
    return _Console(), _Console(stderr=True)


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


class ReadableHelp(typer.core.TyperGroup):
    """A command group whose help reads as written, and which names an unknown command in one line.

    Every ``typer.Typer`` of the app is made with it (``cls=ReadableHelp``), so the rules below hold
    for every command, the ones to come included, without a word in any command's declaration:

    - a command's description is its docstring's paragraphs, each reflowed to the terminal's
      width (typer keeps the docstring's line breaks inside a paragraph: a sentence broken where
      the source wrapped it, then again where the terminal does); a line starting with "- " stays;
    - an option's value is named as the user types it (``TEXT``, ``PATH``, ``INTEGER``, ``a|b``), a
      flag shows none, and a repeatable option says so (``TEXT...``): typer ≥ 0.2x shows the Python
      annotation instead (``<bool>``, ``<list[str]>``, ``<path>``);
    - ``localeval rn``: ``error: unknown command 'rn' (did you mean 'run'?; known: ...)``, exit code 2.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in [self, *self.commands.values()]:  # typer builds a group's commands before it
            _readable(command)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _readable(self)  # the options typer adds to a group once it is built (--install-completion)
        super().format_help(ctx, formatter)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else ""
        if name and not name.startswith("-") and not ctx.resilient_parsing and self.get_command(ctx, name) is None:
            from localeval.cli.exits import EXIT_INPUT
            from localeval.reports.terminal import print_line

            print_line(stderr(), f"[bold red]error:[/] {escape(unknown_name('command', name, self.commands))}")
            ctx.exit(EXIT_INPUT)
        return super().resolve_command(ctx, args)


#: The Python types typer names in help (``<int>``), as a command line names them (click's words).
_VALUE_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "path": "PATH", "file": "FILE",
                "directory": "DIRECTORY", "int range": "INTEGER", "float range": "FLOAT"}


def _readable(command: Any) -> None:
    """``command``'s description reflowed by paragraph and its options' values named (:class:`ReadableHelp`)."""
    if command.help:
        command.help = _reflowed(command.help)
    context = typer.Context(command)
    for param in command.get_params(context):  # the --help option too: made here, and kept by the command
        label = _value_name(param, context)
        if label is None:
            continue
        if isinstance(param, typer.core.TyperOption):
            if param.metavar is None:
                param.metavar = label
        else:  # an argument's metavar is its name, "documents..." if it takes several; its type has a column
            label = label.removesuffix("...")
            setattr(param, "display_type_rich", lambda ctx, label=label: label)  # noqa: B010 -- typer has no setting


def _value_name(param: Any, context: typer.Context) -> str | None:
    """How help names ``param``'s value: '' for a flag, ``TEXT...`` for a repeatable option; None
    where typer names it itself (a typer on click: TEXT, PATH, and no type for a flag)."""
    if getattr(param, "is_flag", False):
        return ""
    display_type = getattr(param, "display_type", None)
    if display_type is None:
        return None
    shown = str(display_type(context)).removeprefix("<").removesuffix(">")
    listed = re.fullmatch(r"list\[(.*)\]", shown)
    name = listed.group(1) if listed else shown
    name = _VALUE_NAMES.get(name, name if "|" in name else name.upper())
    return f"{name}..." if listed or getattr(param, "multiple", False) else name


def _reflowed(text: str) -> str:
    """``text``'s paragraphs with their lines joined (a line starting with "- " kept): the terminal wraps them."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        paragraph if paragraph.startswith("\b") else re.sub(r"\n(?!- )", " ", paragraph) for paragraph in paragraphs
    )


def user_paths() -> Paths:
    """Where models, the cache and runs live, from the environment."""
    return Paths.from_environ(os.environ)


ConfigOption = Annotated[Path | None, typer.Option(
    "--config", "-c", help="A TOML config file (docs/configuration.md); the command's description says what it reads.",
)]
BackendOption = Annotated[
    str | None,
    typer.Option(
        "--backend",
        help="llama.cpp (default), ollama, openai-compatible, lmstudio, vllm, llama-server, ... "
        "(all: `localeval backends list`). Another kind than the config's leaves its \\[backend] table out.",
    ),
]
BaseUrlOption = Annotated[list[str] | None, typer.Option(
    help="The server's URL, for HTTP backends; repeat it or separate URLs by commas for a fleet."
)]
ThreadsOption = Annotated[int | None, typer.Option(help="CPU threads for the judge (llama.cpp).")]
ModelOption = Annotated[
    str | None, typer.Option(help="Judge model: a name from `models list`, a .gguf path, or a server's model.")
]
NoCacheOption = Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")]
CacheDirOption = Annotated[Path | None, typer.Option(help="Cache folder (default: ~/.cache/localeval).")]
ReportOption = Annotated[Path | None, typer.Option(help="Also write the JSON report here.")]
HtmlOption = Annotated[Path | None, typer.Option(help="Also write the HTML report here.")]
KeepErrorsOption = Annotated[bool, typer.Option(
    "--keep-errors", help="With --resume: keep the results that errored (by default they are judged again).",
)]
RunDirOption = Annotated[Path | None, typer.Option(
    help="Keep the journal and reports here (default: ~/.local/share/localeval/runs/ID)."
)]
NameOption = Annotated[str | None, typer.Option(
    "--name", help="The run's name, shown by `localeval runs` and in its report (default: the config's name).",
)]
TagOption = Annotated[list[str] | None, typer.Option(
    "--tag", help="A tag to find the run by (`localeval runs --tag`), beside the config's tags; repeatable.",
)]


#: The options ``--resume`` takes beside the run, by parameter name: where the reports' copies go,
#: the cache, the judge's CPU threads, how the remaining results are scheduled and where they run, and
#: the gates (read after the scores; each on top of the run's gate of its metric).
#: None of them changes a score (the cache key and the fingerprint leave threads out; results are
#: reported in input order whatever the order they ran in). Any other option, e.g. one that changes
#: how the dataset is read or which judge answers (even ``--base-url``: the journal does not record
#: which model answered the results it holds, and a server's URL is part of its judge's identity),
#: is refused by :func:`refuse_on_resume`. The one list: a command refuses the others from it and puts
#: these on top of the run's own settings (:func:`resume_changes`), and ``--resume``'s help says them; an
#: option a run takes becomes one a resume takes by its name here.
RESUME_TAKES = (
    "threads", "report", "html", "junit", "csv", "no_cache", "cache_dir",
    "fail_fast", "order", "executor", "ray_address", "ray_workers", "keep_errors",
    "min_pass_rate", "min_mean",
)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


ResumeOption = Annotated[str | None, typer.Option(
    help="Finish an interrupted run (or arena): its id or directory, with its own settings. Beside it, only "
    f"{', '.join(_flag(name) for name in RESUME_TAKES)} may be given (those the command has): they change no score.",
)]


def refuse_on_resume(context: typer.Context) -> None:
    """Refuse, as one line naming them, the options and arguments given to a ``--resume`` that
    :data:`RESUME_TAKES` does not list: the run keeps its own settings, so they would be dropped.

    Read from the command's parameters as given, so a new option is refused until it is
    listed there: one rule for every command that resumes (``run``, ``arena``).
    """
    given = []
    for param in context.command.params:
        source = context.get_parameter_source(param.name or "")
        if param.name in (*RESUME_TAKES, "resume") or source is None or source.name in ("DEFAULT", "DEFAULT_MAP"):
            continue
        long = [opt for opt in param.opts if opt.startswith("--")] if param.param_type_name == "option" else []
        given.append(long[0] if long else (param.name or "").upper())  # --map, or an argument: DATASET
    if given:
        raise ConfigError(f"--resume runs with the run's own settings; drop {', '.join(given)}")


def resume_changes(context: typer.Context) -> CommandLine:
    """What a ``--resume`` puts on top of the run's own settings: the options given with it that
    :data:`RESUME_TAKES` lists; any other given option is refused (:func:`refuse_on_resume`)."""
    from localeval.cli.settings import CommandLine

    refuse_on_resume(context)
    return CommandLine.given(context.params, RESUME_TAKES)

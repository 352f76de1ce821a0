"""The glue of ``localeval synthesize``: options, documents checked first, the judge, a progress bar, the summary."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from localeval.backends.cache import CachedBackend
from localeval.cli.exits import EXIT_ERRORED, EXIT_OK
from localeval.config import RunConfig
from localeval.errors import ConfigError, first_problem
from localeval.files import make_folder
from localeval.judge import load_judge
from localeval.paths import Paths
from localeval.reports.terminal import print_line
from localeval.synthesizer import (
    Synthesis,
    Synthesizer,
    SynthesizerOptions,
    read_documents,
    rejected_path,
    save_goldens,
    save_rejected,
)
from localeval.synthesizer.pipeline import ContextDone
from localeval.synthesizer.pipeline import Progress as ProgressListener

#: How many error lines are printed; the rest are counted.
MAX_ERROR_LINES = 10


def options_from_cli(config: RunConfig, flags: Mapping[str, Any], styling: Mapping[str, Any]) -> SynthesizerOptions:
    """The config's ``[synthesizer]`` table with the command line's options on top (None: not given), checked."""
    base = config.synthesizer.model_dump()
    given = {k: v for k, v in flags.items() if v is not None}
    given_styling = {k: v for k, v in styling.items() if v is not None}
    try:
        return SynthesizerOptions.model_validate({**base, **given, "styling": {**base["styling"], **given_styling}})
    except ValidationError as error:
        where, message = first_problem(error)
        raise ConfigError(f"command line: synthesizer.{where}: {message}") from error


def synthesize(
    documents: list[Path], out_path: Path, config: RunConfig, options: SynthesizerOptions,
    paths: Paths, out: Console, err: Console, environ: Mapping[str, str],
) -> int:
    """Read every document (a bad one stops here, before the judge loads), synthesize, write, summarize.

    The goldens go to ``out_path``; the inputs a filter dropped, with why, beside it
    (:func:`~localeval.synthesizer.rejected_path`).
    """
    read = read_documents(documents)
    if not out_path.parent.is_dir():
        raise ConfigError(f"--out {out_path}: the folder {out_path.parent} does not exist")
    if config.cache.enabled:
        make_folder(config.cache.dir or paths.cache, "the cache folder")
    with ExitStack() as stack:
        judge = load_judge(config.backend, config.cache, paths, environ, stack, err)
        with synthesis_progress(err) as listen:
            synthesis = Synthesizer(judge, options, listen).from_documents(read)
        stats = judge.stats if isinstance(judge, CachedBackend) else None
    save_goldens(synthesis.goldens, out_path)
    rejected = rejected_path(out_path)
    save_rejected(synthesis.rejected, rejected)  # always: a stale file never stands beside new goldens
    for line in synthesis.errors[:MAX_ERROR_LINES]:
        print_line(err, f"[yellow]error:[/] {escape(line)}")
    if len(synthesis.errors) > MAX_ERROR_LINES:
        print_line(err, f"{len(synthesis.errors) - MAX_ERROR_LINES} more errors")
    calls = "" if stats is None else f", {stats.model_calls} model calls, {stats.hits} from cache"
    print_line(out, escape(summary(synthesis, len(read)) + calls + "."))
    print_line(out, escape(f"Goldens: {out_path}"))
    print_line(out, escape(f"Rejected: {rejected} ({len(synthesis.rejected)} inputs, each with its filter and why)"))
    return EXIT_ERRORED if synthesis.errors else EXIT_OK


def summary(synthesis: Synthesis, documents: int) -> str:
    """One line: goldens per document, the share filtered out, the time per golden."""
    kept, dropped = len(synthesis.goldens), len(synthesis.rejected)
    scored = kept + dropped
    share = f"{dropped / scored:.0%}" if scored else "-"
    per_golden = f"{synthesis.duration_s / kept:.1f} s per golden" if kept else "no golden"
    return (
        f"{kept} goldens from {documents} documents ({kept / documents:.1f} per document, "
        f"{synthesis.contexts} contexts); {dropped} of {scored} inputs filtered out ({share}); "
        f"{len(synthesis.errors)} errors; {synthesis.duration_s:.1f} s, {per_golden}; "
        f"chunks counted by the {synthesis.tokenizer}"
    )


@contextmanager
def synthesis_progress(console: Console) -> Iterator[ProgressListener]:
    """A listener that draws contexts done of the total, goldens kept and inputs filtered out;
    nothing when not on a terminal."""
    columns = (
        TextColumn("[bold]synthesizing"), BarColumn(), MofNCompleteColumn(),
        TextColumn("[green]{task.fields[kept]} kept[/] {task.fields[filtered]} filtered "
                   "[yellow]{task.fields[errors]} errors[/]"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("synthesizing", total=None, kept=0, filtered=0, errors=0)

        def listen(event: ContextDone) -> None:
            bar.update(task, total=event.total, completed=event.done, kept=event.kept,
                       filtered=event.filtered, errors=event.errors)

        yield listen

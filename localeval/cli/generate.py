"""The target's part of ``localeval run``, and ``localeval generate``: outputs for goldens that lack them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from localeval.backends.base import Backend
from localeval.config import RunConfig
from localeval.dataset import Dataset
from localeval.errors import ConfigError
from localeval.files import make_folder
from localeval.judge import load_judge
from localeval.paths import Paths
from localeval.reports.terminal import print_line
from localeval.results import TargetRecord
from localeval.targets import Generation, Outputs, PromptTemplate, generate_outputs, needing_output
from localeval.targets.template import render_all

#: How many failed cases are listed; the rest are counted.
MAX_ERROR_LINES = 10


def target_template(config: RunConfig, dataset: Dataset) -> PromptTemplate | None:
    """The target's prompt when the run has a target and goldens without output, else None.

    Renders it for every such golden now: a field a golden lacks stops here, before any model call.
    """
    if config.target is None or not needing_output(dataset):
        return None
    template = PromptTemplate(config.target, config.source)
    render_all(template, dataset, needing_output(dataset))
    return template


def load_target(config: RunConfig, paths: Paths, environ: Mapping[str, str], stack: ExitStack,
                err: Console) -> Backend:
    """The target's backend, loaded as a judge is (any kind, behind the cache), closed with ``stack``."""
    if config.target is None:
        raise ConfigError(f"{config.source}: no [target] table: nothing writes the outputs")
    if config.cache.enabled:
        make_folder(config.cache.dir or paths.cache, "the cache folder")
    return load_judge(config.target.backend, config.cache, paths, environ, stack, err, where="target.backend")


def write_outputs(config: RunConfig, template: PromptTemplate, dataset: Dataset, target: Backend, err: Console,
                  done: Mapping[int, Generation] | None = None,
                  record: Callable[[int, Generation], None] | None = None) -> Outputs:
    """Generate, with a progress bar, then say in one line what it took."""
    assert config.target is not None  # the caller has a template, so a target
    with generation_progress(err, config.target.name) as progress:
        outputs = generate_outputs(dataset, config.target, template, target, done=done,
                                   record=record or (lambda index, generation: None), progress=progress)
    print_line(err, escape(generation_summary(outputs.record)))
    return outputs


def generation_summary(record: TargetRecord) -> str:
    """One line: outputs written, read back, failed; time per output; model calls and cache hits."""
    per_case = f", {record.duration_s / record.generated:.2f} s per output" if record.generated else ""
    usage = record.usage
    calls = f"; {usage.model_calls} model calls, {usage.cache_hits} from cache" if usage is not None else ""
    return (f"Target {record.name}: {record.generated} outputs generated, {record.resumed} from the journal, "
            f"{record.errored} failed in {record.duration_s:.1f} s{per_case}{calls}")


def generate(config: RunConfig, out_path: Path, paths: Paths, out: Console, err: Console,
             environ: Mapping[str, str]) -> int:
    """``localeval generate``: the goldens with their outputs written to ``out_path``; returns the exit code."""
    from localeval.cli.session import EXIT_ERRORED, EXIT_OK, load_dataset  # the session imports this module

    if config.target is None:
        raise ConfigError(f"{config.source}: no [target] table: nothing writes the outputs")
    if not out_path.parent.is_dir():
        raise ConfigError(f"--out {out_path}: the folder {out_path.parent} does not exist")
    _, dataset = load_dataset(config)
    template = target_template(config, dataset)
    if template is None:
        print_line(err, "every case has an actual_output already: nothing to generate")
        dataset.save(out_path)
        return EXIT_OK
    with ExitStack() as stack:
        target = load_target(config, paths, environ, stack, err)
        outputs = write_outputs(config, template, dataset, target, err)
    outputs.dataset.save(out_path)
    for index, error in list(outputs.failed.items())[:MAX_ERROR_LINES]:
        print_line(err, f"[yellow]error:[/] {escape(dataset.locations[index])}: {escape(error)}")
    if len(outputs.failed) > MAX_ERROR_LINES:
        print_line(err, f"{len(outputs.failed) - MAX_ERROR_LINES} more errors")
    print_line(out, escape(f"Cases: {out_path}"))
    return EXIT_ERRORED if outputs.failed else EXIT_OK


@contextmanager
def generation_progress(console: Console, name: str) -> Iterator[Callable[[int, int], None]]:
    """A listener that draws outputs done of the total; nothing when not on a terminal."""
    columns = (TextColumn(f"[bold]{escape(name)} writing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("generating", total=None)

        def listen(finished: int, total: int) -> None:
            bar.update(task, total=total, completed=finished)

        yield listen

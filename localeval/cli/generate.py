"""The target's part of ``localeval run``, and ``localeval generate``: outputs for goldens that lack them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from localeval.backends.base import Backend
from localeval.cli.console import Pace, print_finishing
from localeval.cli.exits import EXIT_ERRORED, EXIT_OK
from localeval.cli.loading import load_dataset
from localeval.config import RunConfig
from localeval.data.dataset import Dataset
from localeval.data.results import TargetRecord
from localeval.errors import ConfigError
from localeval.files import make_folder
from localeval.judge import load_judge
from localeval.paths import Paths
from localeval.reports.terminal import print_line
from localeval.run.journal import Journal
from localeval.targets import Generation, PromptTemplate, TargetOptions, generate_outputs, needing_output
from localeval.targets.side_by_side import Generated, one_target, side_by_side
from localeval.targets.template import render_all

#: How many failed cases are listed; the rest are counted.
MAX_ERROR_LINES = 10


def target_templates(config: RunConfig, dataset: Dataset) -> dict[str, PromptTemplate]:
    """Each target's prompt, by name, when goldens lack an output (else none are needed).

    Renders every template for every such golden now: a field a golden lacks stops here,
    before any model call.
    """
    if config.all_targets() and dataset.conversational:
        raise ConfigError(f"{config.source}: a target answers single-turn goldens; "
                          f"{dataset.locations[0]} holds conversations")
    todo = needing_output(dataset)
    if not todo:
        return {}
    templates = {}
    for options in config.all_targets():
        templates[options.name] = template = PromptTemplate(options, config.source)
        render_all(template, dataset, todo)
    return templates


def load_targets(config: RunConfig, templates: Mapping[str, PromptTemplate], paths: Paths,
                 environ: Mapping[str, str], stack: ExitStack, err: Console) -> dict[str, Backend]:
    """Each target's backend, loaded as a judge is (any kind, behind the cache), closed with ``stack``."""
    if templates and config.cache.enabled:
        make_folder(config.cache.dir or paths.cache, "the cache folder")
    return {
        options.name: load_judge(options.backend, config.cache, paths, environ, stack, err,
                                 where=target_where(config, options))
        for options in config.all_targets() if options.name in templates
    }


def target_where(config: RunConfig, options: TargetOptions) -> str:
    """Where a target's backend table is in the config, as messages name it."""
    return "target.backend" if config.target is not None else f"targets.{options.name}.backend"


def generate_all(config: RunConfig, templates: Mapping[str, PromptTemplate], dataset: Dataset,
                 backends: Mapping[str, Backend], err: Console, journal: Journal | None = None) -> Generated:
    """Every target's outputs (journaled when there is a journal), then the cases to judge."""
    outputs = []
    for options in config.all_targets():
        done = journal.generated_by(options.name) if journal is not None else None
        with generation_progress(err, options.name) as progress:
            made = generate_outputs(dataset, options, templates[options.name], backends[options.name],
                                    done=done, record=_recorder(journal, options.name), progress=progress,
                                    interrupted=lambda count: print_finishing(err, count, "outputs"))
        print_line(err, escape(generation_summary(made.record)))
        outputs.append(made)
    return one_target(outputs[0]) if len(outputs) == 1 else side_by_side(dataset, outputs)


def _recorder(journal: Journal | None, target: str) -> Callable[[int, Generation], None]:
    """What keeps each output of ``target`` as it is written: the journal, when the run has one."""
    if journal is None:
        return lambda index, generation: None
    return lambda index, generation: journal.append_generation(target, index, generation)


def generation_summary(record: TargetRecord) -> str:
    """One line: outputs written, read back, failed; time per output; model calls and cache hits."""
    per_case = f", {record.duration_s / record.generated:.2f} s per output" if record.generated else ""
    usage = record.usage
    calls = f"; {usage.model_calls} model calls, {usage.cache_hits} from cache" if usage is not None else ""
    return (f"Target {record.name}: {record.generated} outputs generated, {record.resumed} from the journal, "
            f"{record.errored} failed in {record.duration_s:.1f} s{per_case}{calls}")


def generate(config: RunConfig, out_path: Path, paths: Paths, out: Console, err: Console,
             environ: Mapping[str, str]) -> int:
    """``localeval generate``: the goldens with their outputs written to ``out_path``; returns the exit code.

    With several targets, each golden is written once per target (``metadata.target`` says which).
    """

    if not config.all_targets():
        raise ConfigError(f"{config.source}: no [target] table: nothing writes the outputs")
    if not out_path.parent.is_dir():
        raise ConfigError(f"--out {out_path}: the folder {out_path.parent} does not exist")
    _, dataset = load_dataset(config)
    templates = target_templates(config, dataset)
    if not templates:
        print_line(err, "every case has an actual_output already: nothing to generate")
        dataset.save(out_path)
        return EXIT_OK
    with ExitStack() as stack:
        backends = load_targets(config, templates, paths, environ, stack, err)
        generated = generate_all(config, templates, dataset, backends, err)
    generated.dataset.save(out_path)
    failed = list(generated.unanswered.items())
    for index, error in failed[:MAX_ERROR_LINES]:
        print_line(err, f"[yellow]error:[/] {escape(generated.dataset.locations[index])}: {escape(error)}")
    if len(failed) > MAX_ERROR_LINES:
        print_line(err, f"{len(failed) - MAX_ERROR_LINES} more errors")
    print_line(out, escape(f"Cases: {out_path}"))
    return EXIT_ERRORED if failed else EXIT_OK


@contextmanager
def generation_progress(console: Console, name: str,
                        clock: Callable[[], float] = time.monotonic) -> Iterator[Callable[[int, int], None]]:
    """A listener that draws outputs done of the total on a terminal; elsewhere (a CI log) a line at
    most every :data:`~localeval.cli.console.PROGRESS_PERIOD_S` seconds (:class:`~localeval.cli.console.Pace`), as judging does."""
    columns = (TextColumn(f"[bold]{escape(name)} writing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    piped = not console.is_terminal
    with Progress(*columns, console=console, transient=True, disable=piped) as bar:
        task = bar.add_task("generating", total=None)
        started = clock()
        pace = Pace(clock, started)

        def listen(finished: int, total: int) -> None:
            bar.update(task, total=total, completed=finished)
            if piped and pace.due():
                rate = finished / max(pace.last - started, 1e-9)
                print_line(console, escape(f"{name} writing: {finished}/{total}, {rate:.2f}/s"))

        yield listen

"""The glue of ``localeval run``: load what is needed, run, journal, report.

The command line's options become a ``RunConfig`` in :mod:`~localeval.cli.settings`;
what a run readies first is :mod:`~localeval.cli.loading`'s; ``localeval arena`` is
:mod:`~localeval.cli.arena`, ``localeval meta-eval`` :mod:`~localeval.cli.meta_eval`.
Their names are importable from here too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rich.console import Console
from rich.markup import escape

from localeval.backends.base import Backend
from localeval.backends.cache import CachedBackend
from localeval.cli.console import print_errors, print_gates, print_report, progress_bar
from localeval.cli.exits import EXIT_ERRORED, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, save_traceback
from localeval.cli.generate import generate_all, load_targets, target_templates
from localeval.cli.judge_check import print_trust
from localeval.cli.loading import load_dataset, make_cache_folder, ray_executor
from localeval.cli.meta_eval import meta_eval
from localeval.cli.runs import JOURNAL, find_run, resumed_config, start_run
from localeval.cli.settings import CommandLine, MetaEvalSettings, meta_eval_settings_from_cli, settings_from_cli
from localeval.config import RunConfig
from localeval.data.results import RunReport
from localeval.errors import LocalevalError
from localeval.files import make_folder
from localeval.judge import load_judges
from localeval.metaeval.check import CheckStore
from localeval.metaeval.trust import assess, from_checks, judge_fingerprints, markup_notes
from localeval.metrics.base import Metric
from localeval.paths import Paths
from localeval.reports import write_reports
from localeval.reports.terminal import print_line
from localeval.run.events import Events
from localeval.run.gates import gate_results
from localeval.run.journal import Journal, JournalWriteError
from localeval.run.ray_executor import RayExecutor, import_ray
from localeval.run.runner import RunInterrupted, RunOptions, RunStopped, check_inputs, evaluate
from localeval.run.schedule import Order
from localeval.targets import needing_output, planned


@dataclass(frozen=True)
class RunFlags:
    """How ``localeval run`` runs, as opposed to what it evaluates (that is the RunConfig)."""

    resume: str | None = None  #: a run id or directory to finish
    run_dir: Path | None = None
    fail_fast: bool = False
    order: Order = "prefix"
    executor: Literal["local", "ray"] = "local"  #: where the tasks are measured (localeval.run.execution)
    ray_address: str | None = None  #: a Ray cluster; None: a local runtime on 127.0.0.1
    ray_workers: int | None = None  #: Ray actors; None: the cluster's CPUs / the judge's threads
    command: Literal["run", "arena"] = "run"  #: the command that resumes the run, for the hint on Ctrl-C
    changes: CommandLine = CommandLine()  #: what a resume puts on top of the run's own settings
    keep_errors: bool = False  #: a resume keeps the results that errored instead of judging them again
    #: The exit code from the report; None: a run's (the arena's is cli/arena.py's ``arena_exit_code``).
    exit_code: Callable[[RunReport], int] | None = None


def run(config: RunConfig, paths: Paths, out: Console, err: Console, environ: Mapping[str, str],
        flags: RunFlags | None = None) -> int:
    """Evaluate and report, journaling every result; returns the exit code."""
    flags = flags or RunFlags()
    if flags.executor == "ray":  # before any work: without the extra this is one line
        import_ray(local=flags.ray_address is None)
    journal = Journal.open(find_run(flags.resume, paths.runs) / JOURNAL, flags.keep_errors) if flags.resume else None
    if journal is not None:
        config = flags.changes.apply(resumed_config(journal))
        if journal.retried:
            print_line(err, f"Resuming: {journal.retried} results that errored are judged again "
                            "(--keep-errors keeps them)")
    dataset_path, dataset = load_dataset(config)
    metrics = config.build_metrics()
    templates = target_templates(config, dataset)  # every golden's prompt rendered: no model call yet
    check_inputs(planned(dataset, needing_output(dataset)) if templates else dataset, metrics)
    tables = config.judge_tables(metrics)
    make_cache_folder(config.cache, paths, bool(tables) or bool(templates))
    if journal is None:  # a run whose judge then fails to load leaves this folder empty: no run
        make_folder(flags.run_dir or paths.runs, "the run folder" if flags.run_dir else "the folder of runs")
    with ExitStack() as stack:
        targets = load_targets(config, templates, paths, environ, stack, err)
        judge, judges = load_judges(tables, config.cache, paths, environ, stack, err)
        fingerprints, markup = judge_fingerprints(judge, judges), markup_notes(judge, judges)
        metrics = from_checks(metrics, fingerprints, CheckStore(paths.judge_checks))  # before any judge call
        if journal is None:  # only now: a judge that cannot load leaves no run behind
            journal = start_run(config, dataset_path, [m.display_name for m in metrics], len(dataset),
                                flags.run_dir, paths.runs, [f.model for f in fingerprints.values()])
        run_dir = stack.enter_context(journal).path.parent
        print_line(err, escape(f"Run {run_label(journal.header.run_id, journal.header.name)}: {run_dir}"))
        options = RunOptions(order=flags.order, fail_fast=flags.fail_fast, config=config.model_dump(mode="json"),
                             executor=ray_executor(config, tables, flags.ray_address, flags.ray_workers)
                             if flags.executor == "ray" else None)
        generated = None
        if templates:  # journaled: a resumed run does not generate twice
            try:
                generated = generate_all(config, templates, dataset, targets, err, journal)
            except KeyboardInterrupt:
                print_line(err, escape(f"Interrupted: {len(journal.generated)} outputs are saved. "
                                       f"Resume with: localeval {flags.command} --resume {run_dir}"))
                return EXIT_INTERRUPTED
            except JournalWriteError as stop:  # a full disk: the outputs written before are kept
                print_line(err, "[bold red]error:[/] " + escape(
                    f"the run stopped: {stop}. Resume with: localeval {flags.command} --resume {run_dir}"))
                return EXIT_ERRORED
            dataset = generated.dataset
        with progress_bar(err) as listen:
            try:
                report = evaluate(dataset, metrics, judge, judges=judges, options=options, events=Events(listen),
                                  journal=journal, unanswered=generated.unanswered if generated else None)
            except RunInterrupted as stop:
                print_line(err, escape(
                    f"Interrupted: {stop.finished} of {stop.total} results are saved. "
                    f"Resume with: localeval {flags.command} --resume {run_dir}"
                ))
                return EXIT_INTERRUPTED
            except RunStopped as stop:  # a full disk, an executor that failed: the journal is intact
                print_line(err, "[bold red]error:[/] " + escape(
                    f"{stop}{_traceback_saved(stop)}. Resume with: localeval {flags.command} --resume {run_dir}"
                ))
                return EXIT_ERRORED
        for line in fleet_lines([(None, judge), *judges.items()]):
            print_line(err, escape(line))
        if isinstance(options.executor, RayExecutor) and options.executor.served:
            print_line(err, escape(options.executor.summary()))
    if generated is not None:
        report = generated.apply(report, metrics)
    header = journal.header
    report = report.model_copy(update={
        "trust": assess(metrics, fingerprints, CheckStore(paths.judge_checks), markup),
        "name": header.name, "tags": header.tags, "config_sha256": header.config_sha256,
        "gates": gate_results(config.gate, report.summary),
    })
    print_report(out, report)
    print_gates(out, report.gates)
    print_trust(err, report.trust)
    print_errors(err, report)
    written = write_reports(report, run_dir, config.report.copies())
    print_line(out, escape("Reports: " + ", ".join(str(p) for p in written)))
    return (flags.exit_code or _exit_code)(report)


def fleet_lines(judges: list[tuple[str | None, Backend | None]]) -> list[str]:
    """A line per judge that is a fleet of servers: each endpoint's state, calls and prefix reuse."""
    from localeval.backends.fleet import FleetBackend  # httpx: only when a run has judges to look at

    lines = []
    for name, judge in judges:
        inner = judge.backend if isinstance(judge, CachedBackend) else judge
        if isinstance(inner, FleetBackend):
            lines.append(f"Judge fleet{f' {name}' if name else ''}: {inner.summary()}")
    return lines


def _traceback_saved(stop: RunStopped) -> str:
    """Where the traceback of an unexpected cause of ``stop`` went: "; the traceback is in FILE" (else nothing)."""
    cause = stop.__cause__
    if cause is None or isinstance(cause, LocalevalError):
        return ""
    saved = save_traceback(cause)
    return f"; the traceback is in {saved}" if saved else ""


def run_label(run_id: str, name: str | None) -> str:
    """A run as its lines name it: its id, and its name in quotes where it has one."""
    return run_id if name is None else f"{run_id} {name!r}"


def _exit_code(report: RunReport) -> int:
    """3 when a result errored; else, with gates, 1 when one failed (a case's fail alone does not count);
    without, 1 when a case failed a metric; else 0."""
    if report.any_errored:
        return EXIT_ERRORED
    failed = any(not g.passed for g in report.gates) if report.gates else report.any_failed
    return EXIT_FAILED if failed else EXIT_OK


__all__ = [
    "EXIT_ERRORED", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "MetaEvalSettings", "Metric", "RunFlags",
    "load_dataset", "meta_eval", "meta_eval_settings_from_cli", "run", "settings_from_cli",
]

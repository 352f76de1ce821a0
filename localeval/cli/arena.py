"""The glue of ``localeval arena``: two runs' outputs, or one run's targets', as cases judged by an ordinary run."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from localeval.backends.catalog import file_sha256
from localeval.cli.exits import EXIT_ERRORED, EXIT_FAILED, EXIT_OK
from localeval.cli.runs import JOURNAL, REPORT, find_run, load_report, resumed_config
from localeval.cli.session import RunFlags, run
from localeval.config import RunConfig
from localeval.data.dataset import Dataset
from localeval.data.results import RunReport
from localeval.errors import ConfigError, InputError
from localeval.files import make_folder
from localeval.metrics.arena import better_than_first
from localeval.paths import Paths
from localeval.reports.pairing import arena_dataset, targets_arena_dataset
from localeval.reports.terminal import print_line, printable
from localeval.run.journal import Journal

#: A run id as localeval makes them (:func:`localeval.run.runner.new_run_id`): the arena's cases
#: file is named by its runs' ids, so a report's id that is not one must not name a file.
RUN_ID = re.compile(r"[0-9a-f]{12}")


def arena(settings: RunConfig, run_a: str, run_b: str | None, names: tuple[str, str] | None, paths: Paths,
          out: Console, err: Console, environ: Mapping[str, str], flags: RunFlags | None = None) -> int:
    """Judge two runs' outputs, or one run's targets' outputs, against each other with the
    config's arena metrics; returns the exit code.

    The cases are built from the reports (:mod:`localeval.reports.pairing`) and written as
    a dataset under ``<runs>/arena/``, named after the runs and the cases' sha256, so the arena is an ordinary
    run over it: journaled, resumable, reported in every format.
    """
    if settings.dataset.path is not None:
        raise ConfigError(f"{settings.source}: dataset.path: the arena takes its cases from the runs; drop it")
    if settings.all_targets():
        raise ConfigError(f"{settings.source}: the arena judges outputs the runs hold; drop [target] and [[targets]]")
    _check_arena_metrics(settings)
    report_a = _report(run_a, paths)
    if run_b is None:
        if names is not None:
            raise ConfigError("--names names two runs' outputs; one run's contestants are its targets, named in [[targets]]")
        dataset, stem = targets_arena_dataset(report_a), f"{report_a.run_id}-targets"
    else:
        report_b = _report(run_b, paths)
        dataset, stem = arena_dataset(report_a, report_b, names), f"{report_a.run_id}-vs-{report_b.run_id}"
    cases = _save_arena_cases(dataset, make_folder(paths.runs / "arena", "the folder of arena cases"), stem)
    print_line(err, printable(f"Arena of {len(dataset)} cases: {cases}"))
    config = settings.model_copy(update={"dataset": settings.dataset.model_copy(update={"path": cases})})
    return run(config, paths, out, err, environ, replace(flags or RunFlags(command="arena"), exit_code=arena_exit_code))


def resume_arena(paths: Paths, out: Console, err: Console, environ: Mapping[str, str], flags: RunFlags) -> int:
    """Finish an interrupted arena (``flags.resume``) with its own settings, over the cases it wrote.

    Nothing is rebuilt from the runs' reports: the journal names the arena's cases file,
    and :func:`~localeval.cli.runs.resumed_config` refuses it if it changed since.
    """
    if flags.resume is None:
        raise ValueError("resume_arena needs flags.resume")
    with Journal.open(find_run(flags.resume, paths.runs) / JOURNAL) as journal:
        config = resumed_config(journal)
        cases = journal.header.cases
    _check_arena_metrics(config)
    print_line(err, printable(f"Arena of {cases} cases: {config.dataset.path}"))
    return run(config, paths, out, err, environ, replace(flags, exit_code=arena_exit_code))


def arena_exit_code(report: RunReport) -> int:
    """3 when a comparison errored; 1 when some contestant was significantly better than the
    first-named (a pair's verdict: :func:`~localeval.metrics.arena.better_than_first`), or a gate
    failed; else 0: the first-named was not significantly worse, whatever single cases preferred."""
    if report.any_errored:
        return EXIT_ERRORED
    worse = any(better_than_first(summary.details) for summary in report.summary)
    return EXIT_FAILED if worse or any(not gate.passed for gate in report.gates) else EXIT_OK


def _report(ref: str, paths: Paths) -> RunReport:
    """The report of run ``ref``; :class:`InputError` naming its file when its ``run_id`` is not one
    localeval makes (:data:`RUN_ID`): the id names the arena's cases file, ``../`` would move it."""
    report = load_report(ref, paths.runs)
    if not RUN_ID.fullmatch(report.run_id):
        file = Path(ref) if Path(ref).is_file() else find_run(ref, paths.runs) / REPORT
        raise InputError(f"{file}: run_id {report.run_id!r} is not a run id localeval makes (12 hexadecimal digits)")
    return report


def _check_arena_metrics(settings: RunConfig) -> None:
    """Refuse a config (or a resumed run's) with metrics other than arena ones: they judge one output."""
    wrong = [f"{m.display_name} ({m.kind})" for m in settings.build_metrics() if m.kind != "arena"]
    if wrong:
        raise ConfigError(f"{settings.source}: the arena's cases have contestants, not one output; "
                          f"only arena metrics judge them, not {', '.join(wrong)}")


def _save_arena_cases(dataset: Dataset, folder: Path, stem: str) -> Path:
    """Write the arena's cases as ``<stem>-<sha256, 12 digits>.jsonl`` in ``folder``; returns the file.

    Named by their content, so that an arena of the same runs with other names never
    rewrites the cases an unfinished arena (its journal) points at; the same cases are
    the same file.
    """
    draft = folder / f".{stem}.{os.getpid()}.jsonl"
    dataset.save(draft)
    cases = folder / f"{stem}-{file_sha256(draft)[:12]}.jsonl"
    os.replace(draft, cases)
    return cases

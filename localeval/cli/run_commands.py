"""The commands of runs: ``run`` (and ``--resume``), ``report`` a finished run again, ``compare`` two
runs, ``arena``: two runs' outputs, or one run's targets', judged against each other."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from localeval.cli.exits import EXIT_FAILED
from localeval.cli.options import (
    BackendOption,
    BaseUrlOption,
    CacheDirOption,
    ConfigOption,
    HtmlOption,
    KeepErrorsOption,
    ModelOption,
    NameOption,
    NoCacheOption,
    ReportOption,
    ResumeOption,
    RunDirOption,
    TagOption,
    ThreadsOption,
    resume_changes,
    say,
    stderr,
    stdout,
    user_paths,
)
from localeval.errors import ConfigError


def run(
    context: typer.Context,
    dataset: Annotated[Path | None, typer.Argument(help="JSONL, JSON or CSV file of test cases.")] = None,
    config: ConfigOption = None,
    metric: Annotated[list[str] | None, typer.Option("--metric", "-m", help="A metric by name; repeatable.")] = None,
    model: ModelOption = None,
    backend: BackendOption = None,
    base_url: BaseUrlOption = None,
    threads: ThreadsOption = None,
    field: Annotated[list[str] | None, typer.Option("--map", help="FILE_KEY=FIELD, e.g. query=input; repeatable.")] = None,
    list_delimiter: Annotated[str | None, typer.Option(help="Separator of list items in CSV cells.")] = None,
    report: ReportOption = None,
    html: HtmlOption = None,
    junit: Annotated[Path | None, typer.Option(help="Also write JUnit XML here.")] = None,
    csv: Annotated[Path | None, typer.Option(help="Also write the results as CSV here: a row per case and metric.")] = None,
    no_cache: NoCacheOption = False,
    cache_dir: CacheDirOption = None,
    plugin: Annotated[list[str] | None, typer.Option("--plugin", help="Your metrics: a .py file or a module; repeatable.")] = None,
    resume: ResumeOption = None,
    keep_errors: KeepErrorsOption = False,
    run_dir: RunDirOption = None,
    fail_fast: Annotated[bool, typer.Option("--fail-fast", help="Stop at the first result that errors.")] = False,
    order: Annotated[str, typer.Option(help="prefix: calls sharing a prompt prefix back to back (faster in-process); input: case by case.")] = "prefix",
    executor: Annotated[str, typer.Option(help="local: threads here; ray: Ray actors (pip install 'localeval\\[ray]'; docs/scale.md).")] = "local",
    ray_address: Annotated[str | None, typer.Option(help="A Ray cluster to run on (default: a local one on 127.0.0.1).")] = None,
    ray_workers: Annotated[int | None, typer.Option(help="Ray actors, each with its own judge (default: the cluster's CPUs / threads).")] = None,
    name: NameOption = None,
    tag: TagOption = None,
    min_pass_rate: Annotated[list[str] | None, typer.Option(
        help="METRIC=RATE: the run passes only if METRIC's pass rate is at least RATE (0-1); repeatable.")] = None,
    min_mean: Annotated[list[str] | None, typer.Option(
        help="METRIC=SCORE: the run passes only if METRIC's mean score is at least SCORE (0-1); repeatable.")] = None,
) -> None:
    """Evaluate a dataset with metrics, print the results and write the reports.

    The config file (--config) holds every table: the dataset, the metrics, the judges,
    the targets, the reports; the options given here go on top of it.

    Every result is journaled as it finishes: after a crash or Ctrl-C, `--resume RUN`
    computes only what is missing and what errored (not with --keep-errors), with the
    run's own settings (the options it takes are in its help). Exit codes: 0 all passed,
    1 some failed, 3 some errored or the run stopped (the message says how to resume), 2
    bad usage or input, 4 an unexpected error (a bug), 130 interrupted. With gates
    (--min-pass-rate, --min-mean, \\[gate]), 0 and 1 say whether every gate was reached, not
    whether every case passed.
    """
    from localeval.cli import session
    from localeval.cli.settings import CommandLine, check_report_copies
    from localeval.config import RunConfig

    changes = resume_changes(context) if resume is not None else CommandLine()
    _keep_errors_needs_resume(keep_errors, resume)
    if order not in ("prefix", "input"):
        raise ConfigError(f"--order takes prefix or input, got {order!r}")
    if executor not in ("local", "ray"):
        raise ConfigError(f"--executor takes local or ray, got {executor!r}")
    if executor != "ray" and (ray_address or ray_workers):
        raise ConfigError("--ray-address and --ray-workers need --executor ray")
    settings = RunConfig() if resume is not None else session.settings_from_cli(  # a resume reads the run's
        dataset=dataset, config=config, metrics=metric, model=model, threads=threads,
        fields=field, list_delimiter=list_delimiter, report=report, no_cache=no_cache,
        cache_dir=cache_dir, backend=backend, base_url=base_url, plugins=plugin, html=html, junit=junit, csv=csv,
        name=name, tags=tag, min_pass_rate=min_pass_rate, min_mean=min_mean,
    )
    check_report_copies(settings.report.copies() if resume is None else changes.copies())  # before a judge loads
    flags = session.RunFlags(resume=resume, run_dir=run_dir, fail_fast=fail_fast, order=order,  # type: ignore[arg-type]
                             executor=executor, ray_address=ray_address, ray_workers=ray_workers,  # type: ignore[arg-type]
                             changes=changes, keep_errors=keep_errors)
    raise typer.Exit(session.run(settings, user_paths(), stdout(), stderr(), os.environ, flags))


def _keep_errors_needs_resume(keep_errors: bool, resume: str | None) -> None:
    if keep_errors and resume is None:
        raise ConfigError("--keep-errors applies to --resume only")


def report(
    run: Annotated[str, typer.Argument(help="A run: its id, its folder, or a report.json.")],
    out: Annotated[Path | None, typer.Option(help="Write every format into this folder (default: the run's).")] = None,
    html: Annotated[Path | None, typer.Option(help="Only the HTML report, here.")] = None,
    junit: Annotated[Path | None, typer.Option(help="Only JUnit XML, here.")] = None,
    csv: Annotated[Path | None, typer.Option(help="Only the results as CSV, here.")] = None,
) -> None:
    """Write a finished run's reports again: JSON, per-case JSON Lines, HTML, JUnit XML, CSV."""
    from localeval import reports
    from localeval.cli.runs import load_report

    loaded = load_report(run, user_paths().runs)
    folder = out if out or html or junit or csv else _run_folder(run)
    written = reports.write_reports(loaded, folder, {"html": html, "junit": junit, "csv": csv})
    for path in written:
        say(str(path))


def _run_folder(run: str) -> Path:
    from localeval.cli.runs import find_run

    path = Path(run)
    return path.parent if path.is_file() else find_run(run, user_paths().runs)


def compare(
    before: Annotated[str, typer.Argument(help="The baseline run: id, folder or report.json.")],
    after: Annotated[str, typer.Argument(help="The new run.")],
    tolerance: Annotated[float, typer.Option(help="Score moves up to this much are not listed.")] = 0.0,
    fail_on_regression: Annotated[str | None, typer.Option(
        help="Exit 1 on a regression: mean, a metric's mean got worse beyond its 95% interval; flip, a result "
             "went from pass to fail or error; any, either. Without it, compare exits 0 whatever changed.")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Also write the comparison as JSON here.")] = None,
    html: Annotated[Path | None, typer.Option(help="Also write the comparison as an HTML page here.")] = None,
) -> None:
    """Compare two runs: what changed, case by case, and per metric whether the change is real.

    Each output's word diff and each metric's score before and after; per metric the mean change
    with its 95% interval, McNemar's test of the pass/fail flips, and a verdict
    (docs/runs.md#comparing-two-runs).

    Exit codes: 0 compared (whatever changed, unless --fail-on-regression); 1 the
    --fail-on-regression gate failed; 2 bad usage or input (runs with no case in common, an
    unfinished run, a folder that is not a run, a report it cannot read).
    """
    from localeval.cli.runs import load_report
    from localeval.reports import compare as compare_runs
    from localeval.reports import print_comparison
    from localeval.reports.compare import GATES
    from localeval.reports.compare_html import write_comparison
    from localeval.reports.terminal import print_gate

    gate = next((g for g in GATES if g == fail_on_regression), None)
    if fail_on_regression is not None and gate is None:
        raise ConfigError(f"--fail-on-regression takes {', '.join(GATES)}, got {fail_on_regression!r}")
    runs = user_paths().runs
    comparison = compare_runs(load_report(before, runs), load_report(after, runs), tolerance=tolerance)
    print_comparison(stdout(), comparison)
    for path in write_comparison(comparison, json_path=json_path, html_path=html):
        say(str(path))
    raise typer.Exit(EXIT_FAILED if print_gate(stderr(), comparison, gate) else 0)


def arena(
    context: typer.Context,
    run_a: Annotated[str | None, typer.Argument(help="One run: id, folder or report.json.")] = None,
    run_b: Annotated[str | None, typer.Argument(
        help="The other run, of the same inputs; without it, RUN_A's \\[\\[targets]] are compared.")] = None,
    config: ConfigOption = None,
    names: Annotated[str | None, typer.Option(help="NAME_A,NAME_B for the two runs' outputs (default: the run ids).")] = None,
    model: ModelOption = None,
    backend: BackendOption = None,
    base_url: BaseUrlOption = None,
    threads: ThreadsOption = None,
    report: ReportOption = None,
    html: HtmlOption = None,
    no_cache: NoCacheOption = False,
    cache_dir: CacheDirOption = None,
    run_dir: RunDirOption = None,
    resume: ResumeOption = None,
    keep_errors: KeepErrorsOption = False,
    name: NameOption = None,
    tag: TagOption = None,
) -> None:
    """Judge two runs of the same inputs against each other, or one run's targets: each output pair in both orders, ranked.

    The config file (--config) holds the judge (\\[backend], \\[judges.NAME]) and arena metrics only.
    Without it, RUN_A's own config gives them: its judges, cache, plugins and arena metrics, or,
    with none, its G-Eval metrics as arena metrics of the same criteria and steps.

    Every judged case is journaled: after a crash or Ctrl-C, `--resume RUN` judges only what
    is missing and what errored (not with --keep-errors), over the cases the arena first wrote,
    with its own settings (the options it takes are in its help). Exit codes: 0 no contestant
    was significantly better than the first (RUN_A's outputs, or its first target), 1 one was
    (its win rate's 95% interval against the first excludes 50%), 3 some comparison errored or
    the arena stopped, 2 bad usage or input (different datasets), 4 an unexpected error, 130
    interrupted. A single case where another output was preferred does not make it 1.
    """
    from localeval.cli import session
    from localeval.cli.arena import arena as run_arena
    from localeval.cli.arena import resume_arena
    from localeval.cli.arena_config import arena_settings, run_settings
    from localeval.cli.settings import check_report_copies
    from localeval.reports.terminal import print_line, printable

    _keep_errors_needs_resume(keep_errors, resume)
    if resume is not None:
        flags = session.RunFlags(resume=resume, command="arena", changes=resume_changes(context),
                                 keep_errors=keep_errors)
        check_report_copies(flags.changes.copies())  # before a judge loads
        raise typer.Exit(resume_arena(user_paths(), stdout(), stderr(), os.environ, flags))
    if run_a is None:
        raise ConfigError("arena takes RUN_A (and RUN_B), or --resume RUN")
    pair = None
    if names is not None:
        parts = [n.strip() for n in names.split(",")]
        if len(parts) != 2 or not all(parts):
            raise ConfigError(f"--names takes NAME_A,NAME_B, got {names!r}")
        pair = (parts[0], parts[1])
    base = None
    if config is None:  # the run's own judges and metrics
        base, reused = arena_settings(run_settings(run_a, user_paths()), run_a)
        print_line(stderr(), printable(reused))
    settings = session.settings_from_cli(
        dataset=None, config=config, metrics=None, model=model, threads=threads, fields=None, list_delimiter=None,
        report=report, no_cache=no_cache, cache_dir=cache_dir, backend=backend, base_url=base_url, html=html,
        name=name, tags=tag, base=base,
    )
    check_report_copies(settings.report.copies())  # before a judge loads
    flags = session.RunFlags(run_dir=run_dir, command="arena")
    raise typer.Exit(run_arena(settings, run_a, run_b, pair, user_paths(), stdout(), stderr(), os.environ, flags))

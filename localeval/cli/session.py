"""The glue of ``localeval run`` and ``localeval meta-eval``: merge options, load what is needed, report."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from localeval.backends.base import Backend
from localeval.backends.options import BackendOptions, LlamaCppOptions
from localeval.backends.registry import backend_kind, parse_backend
from localeval.cache import CachedBackend
from localeval.catalog import file_sha256
from localeval.cli.console import (
    print_alignment,
    print_errors,
    print_item_errors,
    print_report,
    progress_bar,
)
from localeval.cli.generate import generate_all, load_targets, target_templates
from localeval.cli.runs import JOURNAL, find_run, load_report, resumed_config, start_run
from localeval.config import CacheConfig, RunConfig
from localeval.dataset import Dataset
from localeval.errors import ConfigError, first_problem
from localeval.events import Events
from localeval.execution import Executor
from localeval.files import make_folder
from localeval.journal import Journal
from localeval.judge import load_judge, load_judges
from localeval.metaeval import (
    JudgmentSpec,
    load_judgments,
    meta_evaluate,
    metric_variants,
)
from localeval.metrics.base import Metric
from localeval.paths import Paths
from localeval.ray_executor import JudgeRecipe, RayExecutor, import_ray
from localeval.reports import write_reports
from localeval.reports.pairing import arena_dataset, targets_arena_dataset
from localeval.reports.terminal import print_line
from localeval.results import RunReport
from localeval.runner import RunInterrupted, RunOptions, check_inputs, evaluate
from localeval.schedule import Order
from localeval.targets import needing_output, planned

EXIT_OK, EXIT_FAILED, EXIT_ERRORED, EXIT_INTERRUPTED = 0, 1, 3, 130


def settings_from_cli(
    *,
    dataset: Path | None,
    config: Path | None,
    metrics: list[str] | None,
    model: str | None,
    threads: int | None,
    fields: list[str] | None,
    list_delimiter: str | None,
    backend: str | None = None,
    base_url: str | list[str] | None = None,
    report: Path | None,
    no_cache: bool,
    cache_dir: Path | None,
    plugins: list[str] | None = None,
    html: Path | None = None,
    junit: Path | None = None,
) -> RunConfig:
    """The config file's settings with the command line's on top."""
    base = RunConfig.load(config) if config else RunConfig()
    data = base.dataset.model_copy(
        update={
            k: v
            for k, v in {
                "path": dataset,
                "list_delimiter": list_delimiter,
                "fields": {**base.dataset.fields, **_mapping(fields or [])} if fields else None,
            }.items()
            if v is not None
        }
    )
    merged = base.model_copy(
        update={
            "dataset": data,
            "backend": _backend_overrides(base.backend, backend, model, base_url, threads),
            "metrics": [{"metric": m} for m in metrics] if metrics else base.metrics,
            "plugins": base.plugins + [_from_cwd(p) for p in plugins or ()],
            "report": base.report.model_copy(
                update={"path": report or base.report.path, "html": html or base.report.html,
                        "junit": junit or base.report.junit}
            ),
            "cache": base.cache.model_copy(
                update={"enabled": base.cache.enabled and not no_cache, "dir": cache_dir or base.cache.dir}
            ),
        }
    )
    try:  # model_copy does not validate: check the options the command line added
        return RunConfig.model_validate({**merged.model_dump(), "source": merged.source})
    except ValidationError as error:
        where, message = first_problem(error)
        raise ConfigError(f"command line: {where}: {message}") from error


def _from_cwd(plugin: str) -> str:
    """A plugin file given on the command line, absolute (config files' are relative to the file)."""
    return str(Path(plugin).resolve()) if plugin.endswith(".py") else plugin


def _mapping(pairs: list[str]) -> dict[str, str]:
    return _pairs(pairs, "--map", "FILE_KEY=FIELD")


#: The command-line options that set a backend option, and the option each sets.
BACKEND_FLAGS = {"--model": "model", "--base-url": "base_url", "--threads": "n_threads"}


def _backend_overrides(
    base: BackendOptions, kind: str | None, model: str | None, base_url: str | list[str] | None,
    threads: int | None,
) -> BackendOptions:
    """``base`` with the command line's backend options on top, checked.

    A ``--backend`` other than ``base``'s kind starts from that kind's defaults:
    the config's settings are for another backend. An option the kind does not
    take (``--threads`` for a server) is an error naming the option and the kind.
    """
    table: dict[str, Any] = base.model_dump() if kind in (None, base.kind) else {"kind": kind}
    given = {"--model": model, "--base-url": _urls(base_url), "--threads": threads}
    try:
        takes = backend_kind(table["kind"]).options.model_fields
    except ConfigError as err:
        raise ConfigError(f"command line: backend.kind: {err}") from err
    for flag, value in given.items():
        if value is None:
            continue
        if BACKEND_FLAGS[flag] not in takes:
            raise ConfigError(f"{flag} does not apply to the {table['kind']} backend")
        table[BACKEND_FLAGS[flag]] = value
    return parse_backend(table, "command line: backend")


def _urls(given: str | list[str] | None) -> str | list[str] | None:
    """``--base-url`` given once, several times or comma-separated: one URL, or a fleet's list."""
    if given is None:
        return None
    urls = [url.strip() for text in ([given] if isinstance(given, str) else given) for url in text.split(",")]
    urls = [url for url in urls if url]
    return urls[0] if len(urls) == 1 else urls


@dataclass(frozen=True)
class RunFlags:
    """How ``localeval run`` runs, as opposed to what it evaluates (that is the RunConfig)."""

    resume: str | None = None  #: a run id or directory to finish
    run_dir: Path | None = None
    fail_fast: bool = False
    order: Order = "prefix"
    executor: Literal["local", "ray"] = "local"  #: where the tasks are measured (localeval.execution)
    ray_address: str | None = None  #: a Ray cluster; None: a local runtime on 127.0.0.1
    ray_workers: int | None = None  #: Ray actors; None: the cluster's CPUs / the judge's threads
    command: Literal["run", "arena"] = "run"  #: the command that resumes the run, for the hint on Ctrl-C


def run(config: RunConfig, paths: Paths, out: Console, err: Console, environ: Mapping[str, str],
        flags: RunFlags | None = None) -> int:
    """Evaluate and report, journaling every result; returns the exit code."""
    flags = flags or RunFlags()
    if flags.executor == "ray":  # before any work: without the extra this is one line
        import_ray(local=flags.ray_address is None)
    journal = Journal.open(find_run(flags.resume, paths.runs) / JOURNAL) if flags.resume else None
    if journal is not None:
        config = resumed_config(journal)
    dataset_path, dataset = load_dataset(config)
    metrics = config.build_metrics()
    templates = target_templates(config, dataset)  # every golden's prompt rendered: no model call yet
    check_inputs(planned(dataset, needing_output(dataset)) if templates else dataset, metrics)
    tables = config.judge_tables(metrics)
    _make_cache_folder(config.cache, paths, bool(tables) or bool(templates))
    if journal is None:  # a run whose judge then fails to load leaves this folder empty: no run
        make_folder(flags.run_dir or paths.runs, "the run folder" if flags.run_dir else "the folder of runs")
    with ExitStack() as stack:
        targets = load_targets(config, templates, paths, environ, stack, err)
        judge, judges = load_judges(tables, config.cache, paths, environ, stack, err)
        if journal is None:  # only now: a judge that cannot load leaves no run behind
            journal = start_run(config, dataset_path, [m.display_name for m in metrics], len(dataset),
                                flags.run_dir, paths.runs)
        run_dir = stack.enter_context(journal).path.parent
        print_line(err, escape(f"Run {journal.header.run_id}: {run_dir}"))
        options = RunOptions(order=flags.order, fail_fast=flags.fail_fast, config=config.model_dump(mode="json"),
                             executor=_executor(flags, config, tables))
        generated = None
        if templates:  # journaled: a resumed run does not generate twice
            try:
                generated = generate_all(config, templates, dataset, targets, err, journal)
            except KeyboardInterrupt:
                print_line(err, escape(f"Interrupted: {len(journal.generated)} outputs are saved. "
                                       f"Resume with: localeval {flags.command} --resume {run_dir}"))
                return EXIT_INTERRUPTED
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
        for line in fleet_lines([(None, judge), *judges.items()]):
            print_line(err, escape(line))
    if generated is not None:
        report = generated.apply(report, metrics)
    print_report(out, report)
    print_errors(err, report)
    written = write_reports(report, run_dir, config.report.copies())
    print_line(out, escape("Reports: " + ", ".join(str(p) for p in written)))
    return _exit_code(report)


def fleet_lines(judges: list[tuple[str | None, Backend | None]]) -> list[str]:
    """A line per judge that is a fleet of servers: each endpoint's state, calls and prefix reuse."""
    from localeval.backends.fleet import FleetBackend  # httpx: only when a run has judges to look at

    lines = []
    for name, judge in judges:
        inner = judge.backend if isinstance(judge, CachedBackend) else judge
        if isinstance(inner, FleetBackend):
            lines.append(f"Judge fleet{f' {name}' if name else ''}: {inner.summary()}")
    return lines


def _executor(flags: RunFlags, config: RunConfig, tables: Mapping[str | None, BackendOptions]) -> Executor | None:
    """The Ray executor when asked (its workers load the judges from the same tables); None: threads here."""
    if flags.executor != "ray":
        return None
    base = Path.cwd() if config.source == "<command line>" else Path(config.source).parent
    recipe = JudgeRecipe(tables, config.cache, tuple(config.plugins), base)
    return RayExecutor(recipe, address=flags.ray_address, workers=flags.ray_workers)


def load_dataset(config: RunConfig) -> tuple[Path, Dataset]:
    """The configured dataset file and its cases; a file without cases is an error, not a pass."""
    path = config.dataset.path
    if path is None:
        raise ConfigError("no dataset given (a file argument, or [dataset] path in --config)")
    dataset = Dataset.load(
        path,
        format=config.dataset.format,
        fields=config.dataset.fields,
        list_delimiter=config.dataset.list_delimiter,
        unknown_fields=config.dataset.unknown_fields,
    )
    dataset.require_cases(config.dataset.format)
    return path, dataset


def _make_cache_folder(cache: CacheConfig, paths: Paths, judged: bool) -> None:
    """Make the judge's cache folder before the judge loads, so that a bad path is one line, not a traceback."""
    if judged and cache.enabled:
        make_folder(cache.dir or paths.cache, "the cache folder")


def _exit_code(report: RunReport) -> int:
    if report.any_errored:
        return EXIT_ERRORED
    return EXIT_FAILED if report.any_failed else EXIT_OK


# -- localeval arena ---------------------------------------------------------------------


def arena(settings: RunConfig, run_a: str, run_b: str | None, names: tuple[str, str] | None, paths: Paths,
          out: Console, err: Console, environ: Mapping[str, str], flags: RunFlags | None = None) -> int:
    """Judge two runs' outputs, or one run's targets' outputs, against each other with the
    config's arena metrics; returns the exit code.

    The cases are built from the reports (:mod:`localeval.reports.pairing`) and written as
    a dataset under ``<runs>/arena/``, named after the runs, so the arena is an ordinary
    run over it: journaled, resumable, reported in every format.
    """
    if settings.dataset.path is not None:
        raise ConfigError(f"{settings.source}: dataset.path: the arena takes its cases from the runs; drop it")
    if settings.all_targets():
        raise ConfigError(f"{settings.source}: the arena judges outputs the runs hold; drop [target] and [[targets]]")
    _check_arena_metrics(settings)
    report_a = load_report(run_a, paths.runs)
    if run_b is None:
        if names is not None:
            raise ConfigError("--names names two runs' outputs; one run's contestants are its targets, named in [[targets]]")
        dataset, stem = targets_arena_dataset(report_a), f"{report_a.run_id}-targets"
    else:
        report_b = load_report(run_b, paths.runs)
        dataset, stem = arena_dataset(report_a, report_b, names), f"{report_a.run_id}-vs-{report_b.run_id}"
    cases = _save_arena_cases(dataset, make_folder(paths.runs / "arena", "the folder of arena cases"), stem)
    print_line(err, escape(f"Arena of {len(dataset)} cases: {cases}"))
    config = settings.model_copy(update={"dataset": settings.dataset.model_copy(update={"path": cases})})
    return run(config, paths, out, err, environ, flags)


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
    print_line(err, escape(f"Arena of {cases} cases: {config.dataset.path}"))
    return run(config, paths, out, err, environ, flags)


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


# -- localeval meta-eval -----------------------------------------------------------------


@dataclass(frozen=True)
class MetaEvalSettings:
    """What ``localeval meta-eval`` was asked to do, checked."""

    data: Path
    metric: str
    options: dict[str, Any]
    methods: list[str]
    spec: JudgmentSpec
    backend: BackendOptions
    cache: CacheConfig
    items_out: Path | None = None
    report: Path | None = None


def meta_eval_settings_from_cli(
    *,
    data: Path,
    metric: str,
    methods: list[str] | None,
    fields: list[str] | None,
    human: str,
    group: str | None,
    limit: int | None,
    metric_options: list[str] | None,
    items_out: Path | None,
    report: Path | None,
    model: str | None,
    threads: int | None,
    no_cache: bool,
    cache_dir: Path | None,
    backend: str | None = None,
    base_url: str | list[str] | None = None,
) -> MetaEvalSettings:
    """The command line's options, parsed and checked; a problem is a one-line ``ConfigError``."""
    backend_config = _backend_overrides(LlamaCppOptions(), backend, model, base_url, threads)
    return MetaEvalSettings(
        data=data,
        metric=metric,
        options={
            k: _option_value(v)
            for k, v in _pairs(metric_options or [], "--metric-option", "KEY=VALUE").items()
        },
        methods=list(methods or []),
        spec=JudgmentSpec(
            fields=_pairs(fields or [], "--field", "FIELD=KEY.PATH"), human=human, group=group, limit=limit
        ),
        backend=backend_config,
        cache=CacheConfig(enabled=not no_cache, dir=cache_dir),
        items_out=items_out,
        report=report,
    )


def meta_eval(
    settings: MetaEvalSettings, paths: Paths, out: Console, err: Console, environ: Mapping[str, str]
) -> int:
    """Correlate the metric's scores with the human scores and print them; returns the exit code."""
    judgments = load_judgments(settings.data, settings.spec)
    metrics = [m for _, m in metric_variants(settings.metric, settings.options, settings.methods)]
    check_inputs(judgments.dataset, metrics)  # before loading a model
    needed = any(m.needs_judge for m in metrics)
    _make_cache_folder(settings.cache, paths, needed)
    with ExitStack() as stack:
        judge = load_judge(settings.backend, settings.cache, paths, environ, stack, err) if needed else None
        with progress_bar(err) as listen:
            report = meta_evaluate(
                judgments, settings.metric, settings.options, settings.methods, judge, events=Events(listen)
            )
    print_alignment(out, report)
    print_item_errors(err, report)
    if settings.items_out is not None:
        report.save_items(settings.items_out)
        print_line(out, escape(f"Items: {settings.items_out}"))
    if settings.report is not None:
        report.save(settings.report)
        print_line(out, escape(f"Report: {settings.report}"))
    return EXIT_ERRORED if any(m.errored for m in report.methods) else EXIT_OK


def _pairs(pairs: list[str], option: str, shape: str) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key or not value:
            raise ConfigError(f"{option} takes {shape}, got {pair!r}")
        mapping[key] = value
    return mapping


def _option_value(text: str) -> Any:
    """A metric option's value: JSON where it parses (5, true, [1,3]), else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


__all__ = ["MetaEvalSettings", "arena", "Metric", "meta_eval", "meta_eval_settings_from_cli", "resume_arena", "run",
           "settings_from_cli"]

"""The glue of ``localeval arena``: two runs' outputs, or one run's targets', as cases judged by an ordinary run."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console
from rich.markup import escape

from localeval.cli.runs import load_report
from localeval.cli.session import RunFlags, run
from localeval.config import RunConfig
from localeval.errors import ConfigError
from localeval.files import make_folder
from localeval.paths import Paths
from localeval.reports.pairing import arena_dataset, targets_arena_dataset
from localeval.reports.terminal import print_line


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
    wrong = [f"{m.display_name} ({m.kind})" for m in settings.build_metrics() if m.kind != "arena"]
    if wrong:
        raise ConfigError(f"{settings.source}: the arena's cases have contestants, not one output; "
                          f"only arena metrics judge them, not {', '.join(wrong)}")
    report_a = load_report(run_a, paths.runs)
    if run_b is None:
        if names is not None:
            raise ConfigError("--names names two runs' outputs; one run's contestants are its targets, named in [[targets]]")
        dataset, stem = targets_arena_dataset(report_a), f"{report_a.run_id}-targets"
    else:
        report_b = load_report(run_b, paths.runs)
        dataset, stem = arena_dataset(report_a, report_b, names), f"{report_a.run_id}-vs-{report_b.run_id}"
    folder = make_folder(paths.runs / "arena", "the folder of arena cases")
    cases = folder / f"{stem}.jsonl"
    dataset.save(cases)
    print_line(err, escape(f"Arena of {len(dataset)} cases: {cases}"))
    config = settings.model_copy(update={"dataset": settings.dataset.model_copy(update={"path": cases})})
    return run(config, paths, out, err, environ, flags)

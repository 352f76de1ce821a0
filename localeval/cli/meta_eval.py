"""The glue of ``localeval meta-eval``: a metric's scores against human scores, correlated and reported."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack

from rich.console import Console
from rich.markup import escape

from localeval.cli.console import print_alignment, print_item_errors, progress_bar
from localeval.cli.exits import EXIT_ERRORED, EXIT_OK
from localeval.cli.loading import make_cache_folder
from localeval.cli.settings import MetaEvalSettings
from localeval.judge import load_judge
from localeval.metaeval.evaluation import load_judgments, meta_evaluate, metric_variants
from localeval.paths import Paths
from localeval.reports.terminal import print_line
from localeval.run.events import Events
from localeval.run.runner import check_inputs


def meta_eval(
    settings: MetaEvalSettings, paths: Paths, out: Console, err: Console, environ: Mapping[str, str]
) -> int:
    """Correlate the metric's scores with the human scores and print them; returns the exit code."""
    judgments = load_judgments(settings.data, settings.spec)
    metrics = [m for _, m in metric_variants(settings.metric, settings.options, settings.methods)]
    check_inputs(judgments.dataset, metrics)  # before loading a model
    needed = any(m.needs_judge for m in metrics)
    make_cache_folder(settings.cache, paths, needed)
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

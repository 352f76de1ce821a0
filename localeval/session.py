"""One ``localeval run``: merge config and options, load what is needed, evaluate, report."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console

from localeval.backends.base import Backend
from localeval.cache import CachedBackend, open_cache
from localeval.catalog import ModelCatalog
from localeval.config import RunConfig
from localeval.console import print_errors, print_report, progress_bar
from localeval.dataset import Dataset
from localeval.errors import ConfigError, first_problem
from localeval.metrics.base import Metric
from localeval.paths import Paths
from localeval.results import RunReport
from localeval.runner import check_inputs, evaluate

EXIT_OK, EXIT_FAILED, EXIT_ERRORED = 0, 1, 3


def settings_from_cli(
    *,
    dataset: Path | None,
    config: Path | None,
    metrics: list[str] | None,
    model: str | None,
    threads: int | None,
    fields: list[str] | None,
    list_delimiter: str | None,
    report: Path | None,
    no_cache: bool,
    cache_dir: Path | None,
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
    backend = base.backend.model_copy(
        update={k: v for k, v in {"model": model, "n_threads": threads}.items() if v is not None}
    )
    merged = base.model_copy(
        update={
            "dataset": data,
            "backend": backend,
            "metrics": [{"metric": m} for m in metrics] if metrics else base.metrics,
            "report": base.report.model_copy(update={"path": report or base.report.path}),
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


def _mapping(pairs: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key or not value:
            raise ConfigError(f"--map takes FILE_KEY=FIELD, got {pair!r}")
        mapping[key] = value
    return mapping


def run(config: RunConfig, paths: Paths, out: Console, err: Console) -> int:
    """Evaluate and report; returns the exit code."""
    if config.dataset.path is None:
        raise ConfigError("no dataset given (a file argument, or [dataset] path in --config)")
    dataset = Dataset.load(
        config.dataset.path,
        format=config.dataset.format,
        fields=config.dataset.fields,
        list_delimiter=config.dataset.list_delimiter,
        unknown_fields=config.dataset.unknown_fields,
    )
    metrics = config.build_metrics()
    check_inputs(dataset, metrics)
    with ExitStack() as stack:
        judge = _judge(config, paths, stack, err) if any(m.needs_judge for m in metrics) else None
        with progress_bar(err, len(dataset) * len(metrics)) as advance:
            report = evaluate(
                dataset, metrics, judge,
                config=config.model_dump(mode="json"),
                on_result=lambda _, result: advance(result),
            )
    print_report(out, report)
    print_errors(err, report)
    if config.report.path is not None:
        report.save(config.report.path)
        out.print(f"Report: {config.report.path}")
    return _exit_code(report)


def _judge(config: RunConfig, paths: Paths, stack: ExitStack, err: Console) -> Backend:
    from localeval.backends.llamacpp import LlamaCppBackend

    spec, model_path = ModelCatalog(paths.home).resolve(config.backend.model)
    store = None
    if config.cache.enabled:
        store = stack.enter_context(open_cache(config.cache.dir or paths.cache))
    with err.status(f"loading {spec.name}"):
        backend = LlamaCppBackend(
            model_path, spec, config.backend.llamacpp_options(), sha256_memo=store
        )
    stack.callback(backend.close)
    return CachedBackend(backend, store) if store is not None else backend


def _exit_code(report: RunReport) -> int:
    if report.any_errored:
        return EXIT_ERRORED
    return EXIT_FAILED if report.any_failed else EXIT_OK


__all__ = ["run", "settings_from_cli", "Metric"]

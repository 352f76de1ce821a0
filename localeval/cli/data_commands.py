"""The commands that write or read data files rather than runs: ``synthesize`` goldens, ``generate``
outputs, ``meta-eval`` a metric against human scores."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from localeval.cli.options import (
    BackendOption,
    BaseUrlOption,
    CacheDirOption,
    ConfigOption,
    ModelOption,
    NoCacheOption,
    ThreadsOption,
    stderr,
    stdout,
    user_paths,
)


def synthesize(
    documents: Annotated[list[Path], typer.Argument(help=".txt, .md or .pdf files to write goldens from.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The goldens file to write (JSONL, JSON or CSV).")],
    config: ConfigOption = None,
    model: ModelOption = None,
    backend: BackendOption = None,
    base_url: BaseUrlOption = None,
    threads: ThreadsOption = None,
    chunk_size: Annotated[int | None, typer.Option(help="Tokens per chunk.")] = None,
    chunk_overlap: Annotated[int | None, typer.Option(help="Tokens a chunk shares with the one before.")] = None,
    context_size: Annotated[int | None, typer.Option(help="Chunks per context.")] = None,
    max_contexts: Annotated[int | None, typer.Option(help="At most this many contexts per document.")] = None,
    inputs_per_context: Annotated[int | None, typer.Option(help="Inputs written from each context.")] = None,
    evolution: Annotated[list[str] | None, typer.Option("--evolution", help="reasoning, multi_context, comparison or hypothetical; repeatable.")] = None,
    threshold: Annotated[float | None, typer.Option(help="Drop inputs whose quality score (0-1) is below this.")] = None,
    no_filter: Annotated[bool, typer.Option("--no-filter", help="Keep every input: no quality score.")] = False,
    expected_output: Annotated[bool | None, typer.Option("--expected-output/--no-expected-output", help="Write expected outputs.")] = None,
    input_format: Annotated[str | None, typer.Option(help="What inputs look like, e.g. 'a short question'.")] = None,
    task: Annotated[str | None, typer.Option(help="The task of the application under test.")] = None,
    scenario: Annotated[str | None, typer.Option(help="Who sends the inputs, and why.")] = None,
    no_cache: NoCacheOption = False,
    cache_dir: CacheDirOption = None,
) -> None:
    """Write goldens (inputs, expected outputs, their context) from documents with the judge model.

    The config file (--config) gives the judge (\\[backend]) and the \\[synthesizer] table; the
    options given here go on top of it.

    Every judge call is cached: a second run with the same documents and options makes
    no model call. Exit codes: 0 done; 3 done, but some steps failed (listed); 2 bad
    usage or input (an unreadable or empty document), before any model call.
    """
    from localeval.cli import session
    from localeval.cli import synthesize as synthesis

    settings = session.settings_from_cli(
        dataset=None, config=config, metrics=None, model=model, threads=threads, fields=None,
        list_delimiter=None, report=None, no_cache=no_cache, cache_dir=cache_dir, backend=backend, base_url=base_url,
    )
    flags = {
        "chunk_size": chunk_size, "chunk_overlap": chunk_overlap, "context_size": context_size,
        "max_contexts_per_document": max_contexts, "inputs_per_context": inputs_per_context,
        "evolutions": evolution or None, "quality_threshold": threshold,
        "quality_filter": False if no_filter else None, "expected_output": expected_output,
    }
    styling = {"input_format": input_format, "task": task, "scenario": scenario}
    options = synthesis.options_from_cli(settings, flags, styling)
    raise typer.Exit(synthesis.synthesize(documents, out, settings, options, user_paths(), stdout(), stderr(), os.environ))


def generate(
    goldens: Annotated[Path, typer.Argument(help="Goldens (JSONL, JSON or CSV): cases without actual_output.")],
    config: ConfigOption,
    out: Annotated[Path, typer.Option("--out", "-o", help="The cases file to write (JSONL, JSON or CSV).")],
    no_cache: NoCacheOption = False,
    cache_dir: CacheDirOption = None,
) -> None:
    """Write actual_output for every golden that lacks one with the config's \\[target] model.

    The config file (--config) must have a \\[target] table (or \\[\\[targets]]).

    Deterministic generation (temperature 0, or a seed) is cached: a second run makes no
    model call. Exit codes: 0 done; 3 written, but the target failed for some goldens
    (listed; they are left without output); 2 bad usage or input (a template field a
    golden lacks), before any model call.
    """
    from localeval.cli import generate as generation
    from localeval.cli import session

    settings = session.settings_from_cli(
        dataset=goldens, config=config, metrics=None, model=None, threads=None, fields=None,
        list_delimiter=None, report=None, no_cache=no_cache, cache_dir=cache_dir,
    )
    raise typer.Exit(generation.generate(settings, out, user_paths(), stdout(), stderr(), os.environ))


def meta_eval(
    data: Annotated[Path, typer.Argument(help="JSON or JSONL file of records with human scores.")],
    metric: Annotated[str, typer.Option("--metric", "-m", help="The metric to check, e.g. geval:coherence.")],
    human: Annotated[str, typer.Option(help="Key path of the human score, e.g. scores.coherence.")],
    field: Annotated[list[str] | None, typer.Option("--field", help="FIELD=KEY.PATH, e.g. input=source; repeatable.")] = None,
    method: Annotated[list[str] | None, typer.Option("--method", help="A scoring method (logprobs, top, sampling); repeatable.")] = None,
    group: Annotated[str | None, typer.Option(help="Key path of the group for summary-level correlation, e.g. doc_id.")] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N records.")] = None,
    metric_option: Annotated[list[str] | None, typer.Option("--metric-option", help="KEY=VALUE (JSON, or else text); repeatable.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write every item's scores here (JSONL).")] = None,
    report: Annotated[Path | None, typer.Option(help="Write the correlations here (JSON).")] = None,
    model: ModelOption = None,
    backend: BackendOption = None,
    base_url: BaseUrlOption = None,
    threads: ThreadsOption = None,
    no_cache: NoCacheOption = False,
    cache_dir: CacheDirOption = None,
) -> None:
    """Measure how well a metric agrees with human scores (Pearson, Spearman, Kendall).

    Exit codes: 0 done; 3 done, but the judge could not score some items (they are
    counted and left out); 2 bad usage or input.
    """
    from localeval.cli import session

    settings = session.meta_eval_settings_from_cli(
        data=data, metric=metric, methods=method, fields=field, human=human, group=group,
        limit=limit, metric_options=metric_option, items_out=out, report=report, model=model,
        threads=threads, no_cache=no_cache, cache_dir=cache_dir, backend=backend, base_url=base_url,
    )
    raise typer.Exit(session.meta_eval(settings, user_paths(), stdout(), stderr(), os.environ))

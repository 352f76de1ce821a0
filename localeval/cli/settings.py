"""Command-line options → what a command runs: a ``RunConfig`` (the config file's settings with the
options on top), or ``localeval meta-eval``'s settings. A bad option is a one-line ``ConfigError``."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from localeval.backends.llamacpp import LlamaCppOptions
from localeval.backends.options import BackendOptions
from localeval.backends.registry import backend_kind, parse_backend
from localeval.config import CacheConfig, ReportConfig, RunConfig
from localeval.data.strict_json import json_document
from localeval.errors import ConfigError, DatasetError, first_problem
from localeval.metaeval.evaluation import JudgmentSpec
from localeval.plugins import load_plugins


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
    csv: Path | None = None,
    name: str | None = None,
    tags: list[str] | None = None,
    min_pass_rate: list[str] | None = None,
    min_mean: list[str] | None = None,
    base: RunConfig | None = None,
) -> RunConfig:
    """The config file's settings (without one, ``base``'s) with the command line's on top."""
    cli_plugins = [_from_cwd(p) for p in plugins or ()]
    # First: a plugin may register the backend kind the config file or --backend names.
    load_plugins(cli_plugins, Path.cwd(), "command line: --plugin")
    base = RunConfig.load(config) if config else base or RunConfig()  # imports the config's plugins
    given = CommandLine(dataset=dataset, metric=metrics, model=model, backend=backend, base_url=base_url,
                        threads=threads, field=fields, list_delimiter=list_delimiter, report=report, html=html,
                        junit=junit, csv=csv, no_cache=no_cache, cache_dir=cache_dir, name=name, tag=tags,
                        min_pass_rate=min_pass_rate, min_mean=min_mean)
    merged = given.apply(base.model_copy(update={"plugins": base.plugins + cli_plugins}))
    try:  # model_copy does not validate: check the options the command line added
        return RunConfig.model_validate({**merged.model_dump(), "source": merged.source})
    except ValidationError as error:
        where, message = first_problem(error)
        raise ConfigError(f"command line: {where}: {message}") from error


@dataclass(frozen=True)
class CommandLine:
    """The options a command puts on top of a config's settings, by the command's parameter names.

    One overlay for a run's settings (the config file's, :func:`settings_from_cli`) and
    for a resumed run's (the journal's, with only the options ``--resume`` takes:
    :meth:`given`). An option left at its default (None, False) leaves the setting alone.
    """

    dataset: Path | None = None
    metric: list[str] | None = None
    model: str | None = None
    backend: str | None = None
    base_url: str | list[str] | None = None
    threads: int | None = None
    field: list[str] | None = None
    list_delimiter: str | None = None
    report: Path | None = None
    html: Path | None = None
    junit: Path | None = None
    csv: Path | None = None
    no_cache: bool = False
    cache_dir: Path | None = None
    name: str | None = None
    tag: list[str] | None = None  #: added to the config's tags
    min_pass_rate: list[str] | None = None  #: METRIC=RATE, each on top of the config's gate of that metric
    min_mean: list[str] | None = None  #: METRIC=SCORE

    @classmethod
    def given(cls, params: Mapping[str, Any], names: Collection[str]) -> CommandLine:
        """Those of a command's ``params`` (``typer.Context.params``) that ``names`` lists, e.g. what
        ``--resume`` takes (``localeval.cli.options.RESUME_TAKES``); the others stay unset, as does a
        repeatable option given no time (click's ``()``)."""
        return cls(**{f.name: params[f.name] for f in fields(cls)
                      if f.name in names and params.get(f.name) not in (None, ())})

    def copies(self) -> dict[str, Path | None]:
        """The report copies these options ask for, as ``ReportConfig.copies`` gives them."""
        return {"json": self.report, "html": self.html, "junit": self.junit, "csv": self.csv}

    def apply(self, config: RunConfig) -> RunConfig:
        """``config`` with these options on top, unvalidated but the backend's: ``--threads`` for a judge that
        takes none is an error."""
        backend_flags = (self.backend, self.model, self.base_url, self.threads)
        data = config.dataset.model_copy(update={k: v for k, v in {
            "path": self.dataset,
            "list_delimiter": self.list_delimiter,
            "fields": {**config.dataset.fields, **_mapping(self.field)} if self.field else None,
        }.items() if v is not None})
        return config.model_copy(update={
            "dataset": data,
            "backend": config.backend if all(flag is None for flag in backend_flags)
            else backend_overrides(config.backend, *backend_flags),
            "metrics": [{"metric": m} for m in self.metric] if self.metric else config.metrics,
            "report": _report_copies(config.report, self.copies()),
            "cache": _cache(config.cache, self.no_cache, self.cache_dir),
            "name": self.name if self.name is not None else config.name,
            "tags": list(dict.fromkeys([*config.tags, *(self.tag or ())])),
            "gate": config.gate.model_copy(update={
                "min_pass_rate": {**config.gate.min_pass_rate, **_shares(self.min_pass_rate, "--min-pass-rate", "RATE")},
                "min_mean": {**config.gate.min_mean, **_shares(self.min_mean, "--min-mean", "SCORE")},
            }),
        })


def check_report_copies(copies: Mapping[str, Path | None]) -> None:
    """Refuse a report copy ({format: path}, ``ReportConfig.copies``) that cannot be written, before a
    judge loads: found after judging, it would cost the whole run. One ``ConfigError`` naming the path
    and why; nothing is created (the folders are made as the reports are written)."""
    for name, path in copies.items():
        if path is None:
            continue
        if path.is_dir():
            raise ConfigError(f"{path}: cannot write the {name} report there (it is a folder)")
        folder = path.parent
        while not folder.exists() and not folder.is_symlink() and folder != folder.parent:
            folder = folder.parent  # the nearest folder that exists: the rest is made when the report is written
        if not folder.is_dir():
            raise ConfigError(f"{path}: cannot write the {name} report there ({folder} is not a folder)")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ConfigError(f"{path}: cannot write the {name} report there ({folder} is not writable)")


def _report_copies(base: ReportConfig, copies: Mapping[str, Path | None]) -> ReportConfig:
    """``base`` with the command line's copies of the reports instead of its own, where given."""
    field_of = {"json": "path"}  # ReportConfig's field of each format's copy: the format's name, but the JSON's
    return base.model_copy(update={field_of.get(name, name): path for name, path in copies.items() if path})


def _cache(base: CacheConfig, no_cache: bool, cache_dir: Path | None) -> CacheConfig:
    return base.model_copy(update={"enabled": base.enabled and not no_cache, "dir": cache_dir or base.dir})


def _from_cwd(plugin: str) -> str:
    """A plugin file given on the command line, absolute (config files' are relative to the file)."""
    return str(Path(plugin).resolve()) if plugin.endswith(".py") else plugin


def _shares(pairs: list[str] | None, option: str, value: str) -> dict[str, float]:
    """``--min-pass-rate correctness=0.9`` as ``{"correctness": 0.9}``; a value that is no number from 0 to 1
    is a ``ConfigError`` naming the option (a resume's options are not validated again)."""
    shares = {}
    for metric, text in _pairs(pairs or [], option, f"METRIC={value}").items():
        try:
            share = float(text)
        except ValueError:
            share = math.nan
        if not 0.0 <= share <= 1.0:
            raise ConfigError(f"{option} takes METRIC={value} with {value} from 0 to 1, got {metric}={text}")
        shares[metric] = share
    return shares


def _mapping(pairs: list[str]) -> dict[str, str]:
    return _pairs(pairs, "--map", "FILE_KEY=FIELD")


#: The command-line options that set a backend option, and the option each sets.
BACKEND_FLAGS = {"--model": "model", "--base-url": "base_url", "--threads": "n_threads"}


def backend_overrides(
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
    backend_config = backend_overrides(LlamaCppOptions(), backend, model, base_url, threads)
    return MetaEvalSettings(
        data=data,
        metric=metric,
        options={
            k: _option_value(v, k)
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


def _pairs(pairs: list[str], option: str, shape: str) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key or not value:
            raise ConfigError(f"{option} takes {shape}, got {pair!r}")
        if key in mapping:
            raise ConfigError(f"{option} gives {key} twice: {key}={mapping[key]} and {pair}")
        mapping[key] = value
    return mapping


def _option_value(text: str, key: str = "") -> Any:
    """A metric option's value: JSON where it parses (5, true, [1,3]), read as strictly as a file (a key
    given twice is refused, not its last value taken), else the text itself."""
    try:
        return json_document(text, f"--metric-option {key}".strip())
    except json.JSONDecodeError:
        return text
    except DatasetError as err:
        raise ConfigError(str(err)) from None

"""What a promptfoo assertion gives localeval, checked: its ``config`` → metrics and judges, its ``vars`` and
``output`` → a test case.

promptfoo passes an assertion's ``config`` in ``context["config"]`` and the test's variables in
``context["vars"]`` (https://www.promptfoo.dev/docs/configuration/expected-outputs/python/). Every problem
is one :class:`~localeval.errors.InputError` naming the key (``config.metrics[2].criteria``, ``vars.docs``),
which the assertion returns as a failing result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localeval.backends.options import BackendOptions
from localeval.backends.registry import parse_backend
from localeval.config import CacheConfig, RunConfig
from localeval.data.case import CASE_FIELDS, LIST_FIELDS, TestCase
from localeval.errors import ConfigError, InputError, first_problem
from localeval.metrics.base import Metric
from localeval.metrics.registry import build_metric, metric_class

#: The case fields that a var of the same name fills; any other field needs ``config.fields``, so a prompt's
#: own ``name`` or ``tags`` var never lands in the case by accident.
SAME_NAME_FIELDS = ("input", "expected_output", "context", "retrieval_context", "tools_called", "expected_tools")
#: Text fields a YAML number may fill (``expected_output: 4``): taken as its text.
_TEXT_FIELDS = ("input", "expected_output", "name")


class AssertionConfig(BaseModel):
    """The assertion's ``config``: these keys, and the single metric's options beside them."""

    model_config = ConfigDict(extra="allow")

    metric: str | None = Field(None, description="The metric's kind or preset (geval, faithfulness, geval:coherence).")
    metrics: list[dict[str, Any]] | None = Field(None, description="Several metrics, each a [[metrics]] table.")
    judge: dict[str, Any] | str | None = Field(
        None, description="A [backend] table (the judge), or the name of a [judges.NAME] table of config_file."
    )
    config_file: Path | None = Field(None, description="A localeval TOML config, relative to the working directory.")
    fields: dict[str, str] = Field(default_factory=dict, description="promptfoo var → case field.")
    list_delimiter: str | None = Field(None, min_length=1, description="Splits a text var that fills a list field.")


@dataclass(frozen=True)
class Assertion:
    """What one assertion asks: its metrics, the judges they ask (None: the default one), the cache, and how
    promptfoo's vars become a case."""

    metrics: list[Metric]
    judges: dict[str | None, BackendOptions]
    cache: CacheConfig
    fields: dict[str, str]
    list_delimiter: str | None = None
    #: Where the default judge's table is, for messages: the assertion's ``config.judge``, else ``[backend]``.
    judge_table: str = "backend"

    def where(self, judge: str | None) -> str:
        """Where the table of a judge (None: the default one) is, for messages."""
        return self.judge_table if judge is None else f"judges.{judge}"


def read_assertion(config: Any) -> Assertion:
    """The assertion that ``config`` (promptfoo's ``context["config"]``) describes, on top of its
    ``config_file`` when it names one: the file's judges, cache, plugins and metric defaults, and its
    ``[[metrics]]`` when ``config`` names none."""
    if config is None:
        raise ConfigError("config: none given; name a localeval metric in the assertion's config (metric: geval)")
    if not isinstance(config, Mapping):
        raise ConfigError(f"config: expected a mapping of options, got {type(config).__name__}")
    try:
        given = AssertionConfig.model_validate(dict(config))
    except ValidationError as err:
        where, message = first_problem(err)
        raise ConfigError(f"config.{where}: {message}") from err
    # absolute: the file's own relative paths (plugins, its cache folder) then do not depend on the working directory
    base = RunConfig.load(given.config_file.absolute()) if given.config_file is not None else RunConfig()
    if isinstance(given.judge, dict):
        base = base.model_copy(update={"backend": parse_backend(given.judge, "config.judge")})
    metrics = _metrics(given, base)
    for metric in metrics:
        name = metric.judge_name
        if metric.needs_judge and name is not None and name not in base.judges:
            known = ", ".join(sorted(base.judges)) or "none"
            raise ConfigError(f"judge {name!r} of metric '{metric.display_name}': no [judges.{name}] table "
                              f"in config_file (judges: {known})")
    judge_table = "config.judge" if isinstance(given.judge, dict) else "backend"
    return Assertion(metrics, base.judge_tables(metrics), base.cache, given.fields, given.list_delimiter, judge_table)


def _metrics(given: AssertionConfig, base: RunConfig) -> list[Metric]:
    options = dict(given.model_extra or {})
    if isinstance(given.judge, str):
        options["judge"] = given.judge  # a metric's own option: which [judges.NAME] it asks
    if given.metric is not None and given.metrics is not None:
        raise ConfigError("config: give metric or metrics, not both")
    if given.metrics is not None:
        if options:
            raise ConfigError(f"config.{next(iter(options))}: with metrics, each metric's options go in its entry")
        if not given.metrics:
            raise ConfigError("config.metrics: empty; give at least one metric")
        return _unique([_build(dict(entry), f"config.metrics[{i}]", base) for i, entry in
                        enumerate(given.metrics, start=1)], "config.metrics")
    if given.metric is not None:
        return [_build({"metric": given.metric, **options}, "config", base)]
    if given.config_file is not None and not options:
        return _unique(base.build_metrics(), f"{base.source}: metrics")
    raise ConfigError("config.metric: required; name a localeval metric (geval, faithfulness, ...) or "
                      "several as config.metrics")


def _build(options: dict[str, Any], where: str, base: RunConfig) -> Metric:
    """One metric of the assertion; relative paths in its options (prompt files) are the working directory's."""
    kind = options.pop("metric", None)
    if not isinstance(kind, str):
        raise ConfigError(f"{where}.metric: required: the metric's kind or preset (geval, faithfulness, ...)")
    cls = metric_class(kind)
    if cls is not None:
        options = base.metrics_defaults.applied(cls, options)
    return build_metric(kind, options, where, folder=Path.cwd())


def _unique(metrics: list[Metric], where: str) -> list[Metric]:
    """The metrics, refused if two share a name: promptfoo's named scores are keyed by it."""
    names = [m.display_name for m in metrics]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise ConfigError(f"{where}: two metrics are named {twice!r}; give each its own name")
    return metrics


def case_of(output: Any, context: Mapping[str, Any], assertion: Assertion) -> TestCase:
    """The test case promptfoo's ``output`` and ``context["vars"]`` make.

    ``actual_output`` is the output (JSON text if promptfoo parsed it into an object). Each other field
    comes from the var ``config.fields`` maps to it (which must be there), else, for
    :data:`SAME_NAME_FIELDS`, from the var of its own name when there is one. Without an input var, the
    input is the prompt promptfoo sent.
    """
    variables = context.get("vars") or {}
    if not isinstance(variables, Mapping):
        raise InputError(f"vars: expected a mapping, got {type(variables).__name__}")
    sources = _sources(assertion.fields)
    data: dict[str, Any] = {}
    for field in CASE_FIELDS:
        var = sources.get(field, field if field in SAME_NAME_FIELDS else None)
        if var is None:
            continue
        if var not in variables:
            if field in sources:
                raise InputError(f"vars.{var}: not given, and config.fields maps it to {field}")
            continue
        data[field] = _value(field, variables[var], assertion.list_delimiter)
    if "input" not in data:
        prompt = context.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise InputError("vars: no input: give a var named input, or map one in config.fields (question: input)")
        data["input"] = prompt
    data["actual_output"] = output if output is None or isinstance(output, str) else json.dumps(output)
    try:
        return TestCase.model_validate(data)
    except ValidationError as err:
        where, message = first_problem(err)
        field = where.split(".")[0]
        var = "output" if field == "actual_output" else f"vars.{sources.get(field, field)}"
        raise InputError(f"{var} ({field}): {message}") from err


def _sources(fields: Mapping[str, str]) -> dict[str, str]:
    """``config.fields`` (var → field) turned around (field → var), checked."""
    sources: dict[str, str] = {}
    for var, field in fields.items():
        if field == "actual_output":
            raise ConfigError(f"config.fields.{var}: actual_output is promptfoo's output, not a var")
        if field not in CASE_FIELDS:
            raise ConfigError(f"config.fields.{var}: {field!r} is not a test case field "
                              f"({', '.join(f for f in CASE_FIELDS if f != 'actual_output')})")
        if field in sources:
            raise ConfigError(f"config.fields: both {sources[field]!r} and {var!r} map to {field}")
        sources[field] = var
    return sources


def _value(field: str, value: Any, delimiter: str | None) -> Any:
    """A var's value as the field takes it: a text for a list field is one item (or items, split by
    ``delimiter``); a number for a text field is its text. Anything else is left for validation to judge."""
    if field in LIST_FIELDS and isinstance(value, str):
        if delimiter is None:
            return [value]
        return [item.strip() for item in value.split(delimiter) if item.strip()]
    if field in _TEXT_FIELDS and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value

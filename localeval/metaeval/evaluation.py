"""Meta-evaluation: how well a metric agrees with human scores on a human-judgment file.

A human-judgment file (JSON list or JSONL) holds records such as
``{"doc_id": 3, "source": "...", "system_output": "...", "scores": {"coherence": 2.3}}``.
A :class:`JudgmentSpec` says which keys give the test-case fields, the human
score and (optionally) the group for summary-level correlation. Each scoring
method of the metric (G-Eval's ``logprobs``, ``top``, ``sampling``) scores every
record in the same run, and its scores are correlated with the human scores
(see :mod:`localeval.metaeval.correlations`). A record the judge could not score is counted
and left out of that method's correlations; it never gets an invented score.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localeval.backends.base import Backend, Fingerprint
from localeval.data.case import CASE_FIELDS, LIST_FIELDS, TestCase
from localeval.data.dataset import Dataset
from localeval.data.records import json_type, no_records_error, read_records
from localeval.data.results import MetricResult, RunStats
from localeval.errors import ConfigError, DatasetError, first_problem
from localeval.files import write_text_atomically
from localeval.metaeval.correlations import Correlations, pooled, summary_level
from localeval.metrics import build_metric
from localeval.metrics.base import Metric
from localeval.run.events import Events
from localeval.run.runner import evaluate

__all__ = [
    "ItemJudgment", "JudgmentSpec", "Judgments", "MetaEvalReport", "MethodAlignment",
    "load_judgments", "meta_evaluate", "metric_variants",
]

#: The JSON summary's format version.
METAEVAL_FORMAT = 1
#: The method name of a metric that has no ``scoring`` option.
NO_METHOD = "-"


@dataclass(frozen=True)
class JudgmentSpec:
    """How to read a human-judgment file. Key paths are dotted: "scores.coherence".

    ``fields`` maps test-case fields to key paths, e.g. ``{"input": "source",
    "actual_output": "system_output"}``; a string where a list field (``context``)
    is expected becomes a one-item list. ``human`` is the human score's key path,
    ``group`` the optional key path of the group (e.g. "doc_id") for
    summary-level correlation, and ``limit`` keeps only the first records.
    """

    fields: Mapping[str, str]
    human: str
    group: str | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        for target, keypath in self.fields.items():
            if target not in CASE_FIELDS:
                raise ConfigError(f"'{target}' is not a test-case field ({', '.join(CASE_FIELDS)})")
            _check_keypath(keypath, f"the key path of '{target}'")
        if "input" not in self.fields:
            raise ConfigError("fields must give 'input' (every test case has one), e.g. input=source")
        _check_keypath(self.human, "the human score's key path")
        if self.group is not None:
            _check_keypath(self.group, "the group's key path")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"limit must be at least 1, got {self.limit}")


@dataclass(frozen=True)
class Judgments:
    """Records of a human-judgment file as test cases, each with its human score and group.

    ``dataset.locations`` are the records' real "file:line"; ``groups`` is None
    when the spec names no group.
    """

    path: str
    spec: JudgmentSpec
    dataset: Dataset
    lines: list[int]
    human: list[float]
    groups: list[Any] | None = None


def load_judgments(path: str | os.PathLike[str], spec: JudgmentSpec) -> Judgments:
    """Read and check a JSON or JSONL human-judgment file; a bad record raises ``DatasetError``."""
    name = os.fspath(path)
    records = read_records(name, limit=spec.limit)
    if not records:
        raise no_records_error(name, what="records")
    rows = [_row(record, spec, name, line) for line, record in records]  # the first bad one raises
    lines = [line for line, _ in records]
    return Judgments(
        path=name,
        spec=spec,
        dataset=Dataset([case for case, _, _ in rows], [f"{name}:{line}" for line in lines]),
        lines=lines,
        human=[human for _, human, _ in rows],
        groups=[group for _, _, group in rows] if spec.group is not None else None,
    )


class ItemJudgment(BaseModel):
    """One record as one method judged it: a line of the ``--out`` JSONL file."""

    model_config = ConfigDict(frozen=True)

    line: int = Field(description="Where the record starts in the data file.")
    group: Any = None
    human: float
    method: str
    judge: float | None = Field(description="The metric's raw score (e.g. 1-5); None if it errored.")
    score: float | None = Field(description="The metric's score in [0, 1].")
    error: str | None = None


class MethodAlignment(BaseModel):
    """One scoring method's agreement with the human scores."""

    model_config = ConfigDict(frozen=True)

    method: str
    judged: int = Field(description="Records the method was asked to score.")
    errored: int = Field(description="Records it could not score; left out of the correlations.")
    pooled: Correlations
    summary_level: Correlations | None = Field(None, description="When a group key is given.")


class MetaEvalReport(BaseModel):
    """The result of a meta-evaluation: the correlations per method, and every item's scores."""

    format_version: int = METAEVAL_FORMAT
    data: str
    metric: str
    human: str
    group: str | None = None
    records: int
    backend: Fingerprint | None = None
    methods: list[MethodAlignment]
    stats: RunStats = RunStats()
    items: list[ItemJudgment] = Field(default_factory=list, exclude=True)

    def method(self, name: str) -> MethodAlignment:
        """The results of one method by name ("-" for a metric without scoring methods)."""
        for m in self.methods:
            if m.method == name:
                return m
        raise KeyError(name)

    def save(self, path: Path) -> None:
        """Write the summary (without the items) as JSON, atomically."""
        _write(path, self.model_dump_json(indent=2) + "\n")

    def save_items(self, path: Path) -> None:
        """Write one JSON line per (record, method), atomically, for re-analysis."""
        _write(path, "".join(item.model_dump_json() + "\n" for item in self.items))


def metric_variants(
    metric: str, options: Mapping[str, Any] | None = None, methods: Sequence[str] = ()
) -> list[tuple[str, Metric]]:
    """The metric once per scoring method, as (method, metric) pairs.

    A metric with a ``scoring`` option is built with ``scoring=method`` for each
    method (by default, its own configured method) and named "NAME (method)"; one
    without is built once, under the method name "-". Where the metric can write a
    reason after scoring (``include_reason``), it does not unless asked to: the
    score does not depend on it, and meta-evaluation reads only scores.
    """
    options = dict(options or {})
    base = build_metric(metric, options)
    fields = type(base).model_fields
    if "include_reason" in fields and "include_reason" not in options:
        options["include_reason"] = False
    if "scoring" not in fields:
        if methods:
            raise ConfigError(f"metric '{metric}' has no scoring methods to choose from; give no --method")
        return [(NO_METHOD, build_metric(metric, options))]
    if methods and "scoring" in options:
        raise ConfigError("give the scoring method as a method or as the option 'scoring', not both")
    chosen = list(dict.fromkeys(methods)) or [str(getattr(base, "scoring"))]  # noqa: B009 -- not every Metric has it
    return [
        (m, build_metric(metric, {**options, "scoring": m, "name": f"{base.display_name} ({m})"}))
        for m in chosen
    ]


def meta_evaluate(
    judgments: Judgments,
    metric: str,
    options: Mapping[str, Any] | None = None,
    methods: Sequence[str] = (),
    judge: Backend | None = None,
    *,
    events: Events | None = None,
) -> MetaEvalReport:
    """Score every record with each method of ``metric`` and correlate with the human scores.

    ``methods`` are the values of the metric's ``scoring`` option to compare (see
    :func:`metric_variants`); ``events`` hears of each item as it is scored.
    """
    variants = metric_variants(metric, options, methods)
    run = evaluate(judgments.dataset, [m for _, m in variants], judge, events=events)
    groups = judgments.groups
    items = [
        _item(result, method, line, value, groups[i] if groups is not None else None)
        for i, (case, line, value) in enumerate(zip(run.cases, judgments.lines, judgments.human))
        for (method, _), result in zip(variants, case.results)
    ]
    return MetaEvalReport(
        data=judgments.path,
        metric=metric,
        human=judgments.spec.human,
        group=judgments.spec.group,
        records=len(judgments.dataset),
        backend=run.backend,
        methods=[_alignment(method, items, judgments) for method, _ in variants],
        stats=run.stats,
        items=items,
    )


def _alignment(method: str, items: list[ItemJudgment], judgments: Judgments) -> MethodAlignment:
    mine = [item for item in items if item.method == method]
    scores = [item.judge for item in mine]
    return MethodAlignment(
        method=method,
        judged=len(mine),
        errored=sum(1 for s in scores if s is None),
        pooled=pooled(scores, judgments.human),
        summary_level=(
            summary_level(scores, judgments.human, judgments.groups)
            if judgments.groups is not None
            else None
        ),
    )


def _item(result: MetricResult, method: str, line: int, human: float, group: Any) -> ItemJudgment:
    value = None if result.errored else result.raw_score
    if not _is_number(value):
        value = None
    error = result.error or (None if value is not None else "the metric gave no numeric score")
    return ItemJudgment(
        line=line, group=group, human=human, method=method,
        judge=None if value is None else float(value), score=result.score, error=error,
    )


def _row(record: dict[str, Any], spec: JudgmentSpec, path: str, line: int) -> tuple[TestCase, float, Any]:
    """One record's test case, human score and group (None without a group key)."""
    case = _case(record, spec, path, line)
    human = _human(_get(record, spec.human, path, line), spec.human, path, line)
    if spec.group is None:
        return case, human, None
    return case, human, _group(_get(record, spec.group, path, line), spec.group, path, line)


def _case(record: dict[str, Any], spec: JudgmentSpec, path: str, line: int) -> TestCase:
    data: dict[str, Any] = {}
    for target, keypath in spec.fields.items():
        value = _get(record, keypath, path, line)
        data[target] = [value] if target in LIST_FIELDS and isinstance(value, str) else value
    try:
        return TestCase.model_validate(data)
    except ValidationError as err:
        where, message = first_problem(err)
        target = where.partition(".")[0]
        keypath = spec.fields.get(target, target)
        raise DatasetError(f"{message} (for {target})", path=path, line=line, field=keypath) from None


def _get(record: dict[str, Any], keypath: str, path: str, line: int) -> Any:
    value: Any = record
    parts = keypath.split(".")
    for depth, part in enumerate(parts):
        if not isinstance(value, dict):
            parent = ".".join(parts[:depth])
            message = f"missing: '{parent}' is {json_type(value)}, not an object"
            raise DatasetError(message, path=path, line=line, field=keypath)
        if part not in value:
            keys = ", ".join(list(value)[:12]) or "none"
            message = f"missing: no key '{part}' here (keys: {keys})"
            raise DatasetError(message, path=path, line=line, field=keypath)
        value = value[part]
    return value


def _human(value: Any, keypath: str, path: str, line: int) -> float:
    if not _is_number(value):
        shown = json.dumps(value, ensure_ascii=False)[:40]
        message = f"the human score must be a finite number, got {json_type(value)} ({shown})"
        raise DatasetError(message, path=path, line=line, field=keypath)
    return float(value)


def _group(value: Any, keypath: str, path: str, line: int) -> Any:
    """The record's group; a boolean is refused, because Python's ``True == 1`` would merge it with the number 1."""
    if value is None or isinstance(value, (bool, list, dict)):
        message = f"a group must be a string or a number, got {json_type(value)}"
        raise DatasetError(message, path=path, line=line, field=keypath)
    return value


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    )


def _check_keypath(keypath: str, what: str) -> None:
    if not keypath or any(not part for part in keypath.split(".")):
        raise ConfigError(f"{what} must be dotted keys like 'scores.coherence', got {keypath!r}")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, text)

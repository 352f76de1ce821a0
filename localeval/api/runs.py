"""A Python run's folder: its journal's header, what a resume checks, and the runs a folder holds.

A run started by :func:`localeval.evaluate` is a run like ``localeval run``'s (:mod:`localeval.run.folders`):
``localeval runs``, ``view`` and ``compare`` read it the same way. Its metrics and judges were Python
objects, so its journal records what identifies them instead of a config to rebuild them from: each
metric's options as a ``[[metrics]]`` table, the sha256 of those and of the judges' fingerprints (the
settings that can change a score), and the cases' sha256. A resume is another call with the same
cases, metrics and judges, which these let it check.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from localeval.backends.base import Fingerprint
from localeval.data.dataset import Dataset
from localeval.errors import InputError
from localeval.metrics.base import Metric
from localeval.paths import Paths
from localeval.reports.run_index import RunEntry, list_runs
from localeval.run.folders import PYTHON_SOURCE, create_run, find_run
from localeval.run.journal import JOURNAL_FILE, Journal

#: The dataset's "file" in the report of a run over cases built in code (their locations are "<memory>:N").
MEMORY = "<memory>"


def runs(folder: str | os.PathLike[str] | None = None) -> list[RunEntry]:
    """The runs ``localeval runs`` lists, newest first: those of ``folder``, else of the folder of runs
    (``LOCALEVAL_RUNS_DIR``, else ``<LOCALEVAL_HOME>/runs``), from Python and the CLI alike."""
    return list_runs(Path(folder) if folder is not None else Paths.from_environ(os.environ).runs)


def python_config(dataset: Dataset, metrics: Sequence[Metric]) -> dict[str, Any]:
    """What a Python run records as its config (in its journal and report): the dataset's file, if any,
    and each metric as the ``[[metrics]]`` table that would build it."""
    return {
        "dataset": {"path": dataset.source.path if dataset.source is not None else None},
        "metrics": [metric_table(m) for m in metrics],
    }


def metric_table(metric: Metric) -> dict[str, Any]:
    """The metric's kind and the options it was given (its defaults left out), as a ``[[metrics]]`` table;
    a value JSON cannot hold (a function a custom metric was given) by its name."""
    options = metric.model_dump(mode="json", by_alias=True, exclude_defaults=True, fallback=_named)
    for field, value in metric:  # a composite's parts: each as its own table, its kind with its options
        if field in options and isinstance(value, list | tuple) and all(isinstance(v, Metric) for v in value):
            options[field] = [metric_table(part) for part in value]
    return {"metric": metric.kind, **options}


def scoring_sha256(metrics: Sequence[Metric], judges: Mapping[str, Fingerprint]) -> str:
    """The sha256 of what can change a Python run's scores: its metrics' tables and its judges'
    fingerprints (kind, model file's sha256, runtime, settings)."""
    data = {"metrics": [metric_table(m) for m in metrics],
            "judges": {name: f.model_dump(mode="json") for name, f in judges.items()}}
    return _sha256(data)


def cases_sha256(dataset: Dataset) -> str:
    """The dataset's identity: its file's sha256 (as ``localeval run`` records it), or for cases built in
    code the sha256 of the cases themselves."""
    if dataset.source is not None:
        return dataset.source.sha256
    return _sha256([case.model_dump(mode="json") for case in dataset.cases])


def start_python_run(run_dir: Path | None, runs_home: Path, dataset: Dataset, metrics: Sequence[Metric],
                     judges: Mapping[str, Fingerprint], name: str | None, tags: Sequence[str]) -> Journal:
    """A new run folder and journal for a Python run (``run_dir``, else one under ``runs_home``)."""
    return create_run(
        run_dir, runs_home,
        config=python_config(dataset, metrics), config_source=PYTHON_SOURCE,
        dataset_sha256=cases_sha256(dataset), cases=len(dataset), metrics=[m.display_name for m in metrics],
        name=name, tags=list(tags), config_sha256=scoring_sha256(metrics, judges),
        judges=list(dict.fromkeys(f.model for f in judges.values())),
    )


def open_python_run(ref: str | os.PathLike[str], runs_home: Path, dataset: Dataset,
                    metrics: Sequence[Metric]) -> Journal:
    """The journal of the Python run ``ref`` (its id or folder), opened to finish it: refused, in one line,
    when it was started by ``localeval run`` or over other cases or metrics. What errored is judged again."""
    journal = Journal.open(find_run(os.fspath(ref), runs_home) / JOURNAL_FILE)
    try:
        _same_run(journal, dataset, metrics)
    except InputError:
        journal.close()
        raise
    return journal


def check_same_judges(journal: Journal, metrics: Sequence[Metric], judges: Mapping[str, Fingerprint]) -> None:
    """Refuse to finish a run with other metric options or judges than it started with (once they are loaded)."""
    if journal.header.config_sha256 != scoring_sha256(metrics, judges):
        raise InputError(f"{journal.path}: the metrics' options or the judges differ from those run "
                         f"{journal.header.run_id} started with; its results would not match: start a new run")


def _same_run(journal: Journal, dataset: Dataset, metrics: Sequence[Metric]) -> None:
    header, where = journal.header, journal.path
    if header.config_source != PYTHON_SOURCE:
        raise InputError(f"{where}: run {header.run_id} was started by `localeval run`; resume it with: "
                         f"localeval run --resume {where.parent}")
    if cases_sha256(dataset) != header.dataset_sha256 or len(dataset) != header.cases:
        raise InputError(f"{where}: the cases differ from those run {header.run_id} started with; "
                         "its results would not match: start a new run")
    names = [m.display_name for m in metrics]
    if names != header.metrics:
        raise InputError(f"{where}: run {header.run_id} has metrics {header.metrics}, this call {names}; "
                         "give the same metrics, or start a new run")


def _sha256(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _named(value: Any) -> str:
    return str(getattr(value, "__qualname__", type(value).__qualname__))

"""Run directories: where a run keeps its journal and reports, and how a run is found again.

A run directory holds ``journal.jsonl`` (every result as it finished; see
:mod:`localeval.run.journal`) and, once the run is complete, its reports. Runs live
under ``<LOCALEVAL_HOME>/runs/<run id>`` unless the user names a directory; a run
is referred to by its directory or by its id. Creating and finding a run folder is the library's
(:mod:`localeval.run.folders`, which Python runs use too); reading a run's config back is the CLI's.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError

from localeval import reports
from localeval.backends.catalog import file_sha256
from localeval.config import RunConfig
from localeval.data.results import RunReport
from localeval.errors import InputError, first_problem
from localeval.run.folders import PYTHON_SOURCE, create_run, find_run
from localeval.run.journal import JOURNAL_FILE, Journal, JournalHeader

JOURNAL = JOURNAL_FILE
REPORT = reports.REPORT_FILES["json"]

__all__ = ["JOURNAL", "REPORT", "absolute_paths", "find_run", "load_report", "recorded_config", "resumed_config",
           "start_run"]


def start_run(config: RunConfig, dataset: Path, metrics: list[str], cases: int, run_dir: Path | None,
              runs_home: Path, judges: list[str] | None = None) -> Journal:
    """A new run's journal, its header recording everything needed to resume it (``dataset``: its file),
    and what ``localeval runs`` lists it by: its name, tags, judges' models (``judges``) and the sha256 of
    its scoring settings."""
    absolute = absolute_paths(config)
    return create_run(
        run_dir,
        runs_home,
        config=absolute.model_dump(mode="json"),
        config_source=config.source if config.source == "<command line>" else os.path.abspath(config.source),
        dataset_sha256=file_sha256(dataset),
        cases=cases,
        metrics=metrics,
        name=config.name,
        tags=config.tags,
        config_sha256=absolute.scoring_sha256(),
        judges=judges,
    )


def resumed_config(journal: Journal) -> RunConfig:
    """The configuration the journal's run started with; refuses when its dataset has changed since."""
    header = journal.header
    if header.config_source == PYTHON_SOURCE:  # its metrics and judges were Python objects: no config holds them
        raise InputError(f"{journal.path}: run {header.run_id} was started from Python; resume it there, "
                         f"with localeval.evaluate(..., resume={header.run_id!r})")
    config = recorded_config(header, journal.path)
    path = config.dataset.path
    if path is None or not path.is_file():
        raise InputError(f"{journal.path}: the run's dataset {path} is gone")
    if file_sha256(path) != header.dataset_sha256:
        raise InputError(
            f"{path}: the dataset changed since run {header.run_id} started; its results would not "
            "match. Start a new run instead"
        )
    return config


def recorded_config(header: JournalHeader, path: Path) -> RunConfig:
    """The configuration the run of the journal at ``path`` started with, as its ``header`` records it
    (server URLs whole)."""
    try:
        return RunConfig.model_validate({**header.config, "source": header.config_source})
    except ValidationError as err:  # a journal written by another localeval, whose settings differ
        where, message = first_problem(err)
        raise InputError(
            f"{path}:1: the run's settings cannot be read ({where}: {message}); "
            "it was started by another version of localeval: start a new run"
        ) from err


def absolute_paths(config: RunConfig) -> RunConfig:
    """The config with its file paths made absolute, so that a resume works from any directory."""
    return config.rebased(Path.cwd())


def load_report(ref: str | Path, runs_home: Path) -> RunReport:
    """The report of a finished run, given a report file, a run directory or a run id."""
    path = Path(ref)
    if path.is_file():
        return RunReport.load(path)
    run_dir = find_run(ref, runs_home)
    if not (run_dir / REPORT).is_file():
        raise InputError(
            f"run {run_dir} has no {REPORT}: it has not finished; resume it with: localeval run --resume {run_dir}"
        )
    return RunReport.load(run_dir / REPORT)

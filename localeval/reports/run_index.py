"""The runs in a folder of runs, read for a listing (``localeval runs``, and whatever else lists runs), and
which of them a prune removes.

Each folder under the runs folder is one entry; reading one never raises. A folder that is not a run, a
journal that cannot be read, a report this localeval cannot read (a format it does not know), is an entry
with status ``unreadable`` and a note saying why. The status of a run:

- ``finished``: its ``report.json`` is there (the run wrote its reports; results that errored are
  counted in its metrics);
- ``errored``: no report, and its journal holds a result (or a target's output) that errored, or every
  result it should hold (it was judged whole, then stopped before its reports were written);
- ``interrupted``: no report, and nothing in its journal errored: it stopped before its last result
  (Ctrl-C, a kill, a full disk, a crash). A run still running reads the same: nothing marks a live run.

Both of the last two can be finished with ``localeval run --resume``. The figures of an unfinished run
(pass rate, mean score) are those of the results its journal holds.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localeval.data.results import READABLE_FORMATS, Counts, MetricResult, RunReport
from localeval.errors import InputError, LocalevalError, first_problem
from localeval.reports.formats import REPORT_FILES
from localeval.run.journal import JOURNAL_FILE, JournalContents, read_journal

Status = Literal["finished", "interrupted", "errored", "unreadable"]
STATUSES: tuple[Status, ...] = ("finished", "interrupted", "errored", "unreadable")

REPORT_FILE = REPORT_FILES["json"]

#: A folder of the runs folder that is no run: the arena's cases (localeval/cli/arena.py writes them there).
NOT_RUNS = frozenset({"arena"})


class MetricFigures(BaseModel):
    """One metric of a listed run: its counts, pass rate and mean score (no intervals: a listing reads
    hundreds of runs, and the bootstrap of a mean takes a while; the run's report has them)."""

    model_config = ConfigDict(frozen=True)

    metric: str
    passed: int
    failed: int
    errored: int
    pass_rate: float | None = Field(description="passed / (passed + failed); None if none scored.")
    mean_score: float | None = None

    @classmethod
    def of(cls, metric: str, results: list[MetricResult]) -> MetricFigures:
        counts = Counts.of(results)
        return cls(metric=metric, passed=counts.passed, failed=counts.failed, errored=counts.errored,
                   pass_rate=counts.pass_rate, mean_score=counts.mean_score)


class RunEntry(BaseModel):
    """One folder of the runs folder, as a listing shows it."""

    model_config = ConfigDict(frozen=True)

    run_id: str = Field(description="The folder's name: the run's id.")
    folder: str
    status: Status
    note: str = Field("", description="Why it is unreadable, or how far an unfinished run got.")
    name: str | None = None
    tags: list[str] = Field(default_factory=list)
    created_at: str | None = Field(None, description="When the run started (UTC, ISO 8601).")
    dataset: str | None = Field(None, description="The dataset's file, as the run recorded it.")
    dataset_sha256: str | None = None
    judges: list[str] = Field(default_factory=list, description="The judges' models.")
    metrics: list[MetricFigures] = Field(default_factory=list)
    results: int = Field(0, description="The results the run holds.")
    expected: int = Field(0, description="The results the whole run has: cases × metrics.")
    config_sha256: str | None = Field(None, description="sha256 of the settings that can change a score.")
    shared: int = Field(1, description="The runs of the folder with this dataset and config, this one included.")

    @property
    def started(self) -> datetime | None:
        """When the run started, or None where it cannot be told."""
        try:
            return datetime.fromisoformat(self.created_at) if self.created_at else None
        except ValueError:
            return None


def list_runs(runs: Path) -> list[RunEntry]:
    """Every run under ``runs``, newest first (an unreadable one by its folder's time); none if it is absent."""
    try:
        folders = [p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name not in NOT_RUNS]
    except FileNotFoundError:
        return []
    except OSError as err:
        raise InputError(f"{runs}: cannot list the runs ({err.strerror})") from err
    entries = [read_run(folder) for folder in folders]
    same = Counter(_identity(e) for e in entries if _identity(e) is not None)
    entries = [e.model_copy(update={"shared": same[key]}) if (key := _identity(e)) else e for e in entries]
    return sorted(entries, key=lambda e: (_when(e), e.run_id), reverse=True)


def read_run(folder: Path) -> RunEntry:
    """The run in ``folder``, or an ``unreadable`` entry saying why it cannot be read (never an exception)."""
    report, journal = folder / REPORT_FILE, folder / JOURNAL_FILE
    try:
        if report.is_file():
            return _finished(folder, _report_head(report))
        if journal.is_file():
            return _unfinished(folder, read_journal(journal))
    except (LocalevalError, OSError, RecursionError) as err:
        return _unreadable(folder, _short(str(err), folder))
    return _unreadable(folder, f"not a run: no {JOURNAL_FILE}")


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing shows; a criterion left at None lets every run through."""

    name: str | None = None  #: a part of the name, any case
    tag: str | None = None
    dataset: str | None = None  #: a part of the dataset's file name, or the start of its sha256
    status: Status | None = None
    since: datetime | None = None  #: started at or after

    def matches(self, entry: RunEntry) -> bool:
        started = entry.started
        return all((
            self.name is None or self.name.casefold() in (entry.name or "").casefold(),
            self.tag is None or self.tag in entry.tags,
            self.dataset is None or self.dataset in Path(entry.dataset or "").name
            or (entry.dataset_sha256 or "").startswith(self.dataset.lower()),
            self.status is None or entry.status == self.status,
            self.since is None or (started is not None and started >= self.since),
        ))


def to_prune(entries: list[RunEntry], keep: int | None, older_than: timedelta | None,
             now: datetime) -> list[RunEntry]:
    """The runs of ``entries`` (newest first) a prune removes: beyond the ``keep`` newest and, when
    ``older_than`` is given, started longer ago than that; both given, both must hold. A folder that is not
    a run (no journal, no report) is never removed."""
    if keep is None and older_than is None:
        raise ValueError("to_prune needs keep or older_than")
    runs = [e for e in entries if is_run(Path(e.folder))]
    beyond = runs[keep:] if keep is not None else runs
    return [e for e in beyond if older_than is None or _when(e) < now - older_than]


def remove_run(folder: Path) -> None:
    """Delete the run ``folder`` and everything in it; refuses a folder that is not a run."""
    if not is_run(folder):
        raise InputError(f"{folder}: not a run (no {JOURNAL_FILE} or {REPORT_FILE}); left alone")
    try:
        shutil.rmtree(folder)
    except OSError as err:
        raise InputError(f"{folder}: cannot remove the run ({err.strerror})") from err


def is_run(folder: Path) -> bool:
    """Whether ``folder`` holds a run: its journal or its report (readable or not)."""
    return (folder / JOURNAL_FILE).is_file() or (folder / REPORT_FILE).is_file()


def _report_head(path: Path) -> RunReport:
    """The report at ``path`` without its cases: what a listing shows of it, read fast (plain JSON: the
    strict reading of :meth:`RunReport.load` walks every value, and ``localeval report`` does that)."""
    try:
        raw = json.loads(path.read_bytes())
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:{err.lineno}: not JSON ({err.msg})") from err
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: cannot read report (not UTF-8: {err.reason})") from None
    version = raw.get("format_version") if isinstance(raw, dict) else None
    if version not in READABLE_FORMATS:
        raise InputError(f"{path}: report format {version!r} is not {' or '.join(map(str, READABLE_FORMATS))}")
    try:
        return RunReport.model_validate({**raw, "cases": []})
    except ValidationError as err:
        where, message = first_problem(err)
        raise InputError(f"{path}: field '{where}': {message}") from err


def _finished(folder: Path, report: RunReport) -> RunEntry:
    judges = [report.backend] if report.backend is not None else []
    models = [f.model for f in [*judges, *report.judges.values()]]
    return RunEntry(
        run_id=folder.name, folder=str(folder), status="finished", name=report.name, tags=report.tags,
        created_at=report.created_at, dataset=report.dataset.path if report.dataset else None,
        dataset_sha256=report.dataset.sha256 if report.dataset else None, judges=list(dict.fromkeys(models)),
        metrics=[MetricFigures.model_validate(s, from_attributes=True) for s in report.summary],
        results=sum(s.cases for s in report.summary),
        expected=sum(s.cases for s in report.summary), config_sha256=report.config_sha256,
    )


def _unfinished(folder: Path, journal: JournalContents) -> RunEntry:
    header = journal.header
    results = journal.results
    expected = header.cases * len(header.metrics)
    errored = sum(r.errored for r in results.values()) + sum(g.error is not None for g in journal.generated.values())
    status: Status = "errored" if errored or (expected and len(results) >= expected) else "interrupted"
    note = f"{len(results)} of {expected} results" + (f", {errored} errored" if errored else "")
    by_metric: dict[str, list[MetricResult]] = {name: [] for name in header.metrics}
    for (_, metric), result in sorted(results.items()):
        by_metric.setdefault(metric, []).append(result)
    dataset = header.config.get("dataset")
    return RunEntry(
        run_id=folder.name, folder=str(folder), status=status, note=note, name=header.name, tags=header.tags,
        created_at=header.created_at, dataset=dataset.get("path") if isinstance(dataset, dict) else None,
        dataset_sha256=header.dataset_sha256,
        judges=header.judges if header.judges is not None else _configured_judges(header.config),
        metrics=[MetricFigures.of(name, rs) for name, rs in by_metric.items()], results=len(results),
        expected=expected, config_sha256=header.config_sha256,
    )


def _configured_judges(config: dict[str, Any]) -> list[str]:
    """The models of a config's ``[backend]`` and ``[judges.NAME]`` tables: the judges of an unfinished run
    whose journal does not record them (a run whose metrics ask no judge lists them too); "default"
    where none is named."""
    tables = [config.get("backend"), *(config.get("judges") or {}).values()]
    models = [str(t.get("model") or "default") for t in tables if isinstance(t, dict)]
    return list(dict.fromkeys(Path(m).name if m.endswith(".gguf") else m for m in models))


def _unreadable(folder: Path, note: str) -> RunEntry:
    return RunEntry(run_id=folder.name, folder=str(folder), status="unreadable", note=note)


def _short(message: str, folder: Path) -> str:
    """An error's first line, without the folder's path it starts with (the listing shows the run's id)."""
    line = message.splitlines()[0] if message else "cannot be read"
    return line.replace(f"{folder}/", "").replace(str(folder), "")


def _identity(entry: RunEntry) -> tuple[str, str] | None:
    if entry.dataset_sha256 is None or entry.config_sha256 is None:
        return None
    return entry.dataset_sha256, entry.config_sha256


def _when(entry: RunEntry) -> datetime:
    """When a run started; an unreadable one: its folder's last change; neither: the earliest time."""
    started = entry.started
    if started is not None:
        return started if started.tzinfo else started.replace(tzinfo=UTC)
    try:
        return datetime.fromtimestamp(Path(entry.folder).stat().st_mtime, UTC)
    except OSError:
        return datetime.min.replace(tzinfo=UTC)

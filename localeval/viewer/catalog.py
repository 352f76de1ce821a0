"""The runs folder as the viewer reads it: listed once per change of the folder, reports loaded on demand.

Listing 500 runs takes about half a second (``run_index.list_runs`` reads every report's head), too long
for every request and every poll. So the listing is kept with a *version*: a hash of the folder's names and
the modification times of the folder and of each run's folder, which costs one ``stat`` a run. A run that
starts makes a folder, a run that finishes writes its reports into its folder, a prune removes folders:
each changes the version, and the next request lists the folder again. A run's journal growing does not
(appending to a file leaves its folder's time alone): a running run's figures are those of when it started,
until it finishes.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from localeval.data.results import RunReport
from localeval.errors import InputError
from localeval.reports.run_index import REPORT_FILE, RunEntry, list_runs

#: How many loaded reports are kept, the last used: a report of 1,000 cases takes a second to read.
REPORTS_KEPT = 4


@dataclass(frozen=True)
class Listing:
    """The runs of the folder at one version, newest first."""

    version: str
    entries: tuple[RunEntry, ...]
    by_id: dict[str, RunEntry] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_id", {e.run_id: e for e in self.entries})


class RunCatalog:
    """The runs under ``runs``, safe to read from the server's threads."""

    def __init__(self, runs: Path) -> None:
        self.runs = runs
        self._lock = threading.Lock()
        self._listing: Listing | None = None
        self._reports: OrderedDict[tuple[str, int, int], RunReport] = OrderedDict()

    def version(self) -> str:
        """A short hash that changes when a run is added, finishes or is removed (:func:`folder_version`)."""
        return folder_version(self.runs)

    def listing(self) -> Listing:
        """The runs, listed again only when the folder's version changed since the last listing."""
        version = self.version()  # before listing: a change while listing shows as a new version next time
        with self._lock:
            if self._listing is None or self._listing.version != version:
                self._listing = Listing(version, tuple(list_runs(self.runs)))
            return self._listing

    def find(self, run_id: str) -> RunEntry | None:
        """The run of that id, or None: an id is looked up among the folder's runs, never made into a path."""
        return self.listing().by_id.get(run_id)

    def report(self, entry: RunEntry) -> RunReport:
        """The finished run's report, read strictly (``RunReport.load``); an ``InputError`` says why it cannot be."""
        path = Path(entry.folder) / REPORT_FILE
        try:
            stat = path.stat()
        except OSError as err:
            raise InputError(f"{path}: cannot read report ({err.strerror})") from err
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if key in self._reports:
                self._reports.move_to_end(key)
                return self._reports[key]
        report = RunReport.load(path)  # outside the lock: other requests go on meanwhile
        with self._lock:
            self._reports[key] = report
            while len(self._reports) > REPORTS_KEPT:
                self._reports.popitem(last=False)
        return report


def folder_version(runs: Path) -> str:
    """A hash of the names of ``runs``' folders and the modification times of it and of each of them;
    ``"absent"`` while there is no such folder."""
    digest = hashlib.sha256()
    try:
        digest.update(f"{runs.stat().st_mtime_ns}\n".encode())
        with os.scandir(runs) as found:
            for name, mtime in sorted(_stamps(found)):
                digest.update(f"{name}\t{mtime}\n".encode("utf-8", "surrogateescape"))
    except FileNotFoundError:
        return "absent"
    except OSError as err:
        raise InputError(f"{runs}: cannot list the runs ({err.strerror})") from err
    return digest.hexdigest()[:16]


def _stamps(found: Iterator[os.DirEntry[str]]) -> list[tuple[str, int]]:
    stamps = []
    for item in found:
        try:
            if item.is_dir():
                stamps.append((item.name, item.stat().st_mtime_ns))
        except OSError:  # removed while listing: the next version will not have it either
            continue
    return stamps

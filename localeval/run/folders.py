"""Run folders: where a run keeps its journal and reports, and how a run is found again.

A run folder holds ``journal.jsonl`` (every result as it finished; see
:mod:`localeval.run.journal`) and, once the run is complete, its reports. Runs live
under the folder of runs (``<LOCALEVAL_HOME>/runs``, :class:`~localeval.paths.Paths`)
as ``<run id>/`` unless a folder is named; a run is referred to by its folder or by
its id. ``localeval run`` and :func:`localeval.evaluate` create them the same way, so
``localeval runs``, ``view`` and ``compare`` see both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localeval.errors import InputError
from localeval.run.journal import JOURNAL_FILE, Journal, JournalHeader
from localeval.run.runner import new_run_id, now

#: The ``config_source`` of a run started from Python: there is no config file to resume it from.
PYTHON_SOURCE = "<python>"


def find_run(ref: str | Path, runs_home: Path) -> Path:
    """The run directory ``ref`` names: a directory with a journal, or a run id under ``runs_home``."""
    for candidate in (Path(ref), runs_home / str(ref)):
        if (candidate / JOURNAL_FILE).is_file():
            return candidate
    raise InputError(
        f"no run {str(ref)!r}: neither a directory with a {JOURNAL_FILE} nor a run id under {runs_home}"
    )


def create_run(run_dir: Path | None, runs_home: Path, **header: Any) -> Journal:
    """A new run: a fresh id, its folder (``run_dir``, else ``<runs_home>/<id>``) and its journal, whose
    header holds ``header`` (the :class:`JournalHeader` fields besides the id and the time)."""
    run_id = new_run_id()
    journal_header = JournalHeader(run_id=run_id, created_at=now(), **header)
    return Journal.create((run_dir or runs_home / run_id) / JOURNAL_FILE, journal_header)

"""A folder of synthetic runs, copies of one real run: for ``localeval runs``' tests and its timing.

``python tests/synthetic_runs.py RUNS TEMPLATE COUNT`` writes COUNT runs under RUNS, each a copy of the
run folder TEMPLATE's ``report.json`` and ``journal.jsonl`` with its own id and start, a day apart; every
tenth is a stopped run instead (no report, half its journal), as ``localeval runs`` reads them from a
journal. docs/runs.md's timing of ``localeval runs`` was made so.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path


def synthetic_runs(home: Path, template: Path, count: int, start: datetime, stopped_every: int = 0) -> list[str]:
    """``count`` runs under ``home``, copies of the run folder ``template``, one a day from ``start``; with
    ``stopped_every`` N, every Nth is stopped (its journal half written, no report). Their ids, oldest first."""
    report = json.loads((template / "report.json").read_text())
    header, *lines = (template / "journal.jsonl").read_text().splitlines(keepends=True)
    ids = []
    for n in range(count):
        run_id = f"{n:012x}"
        created_at = (start + timedelta(days=n)).isoformat(timespec="seconds")
        folder = home / run_id
        folder.mkdir(parents=True)
        stopped = stopped_every and n % stopped_every == stopped_every - 1
        head = json.dumps({**json.loads(header), "run_id": run_id, "created_at": created_at}) + "\n"
        (folder / "journal.jsonl").write_text(head + "".join(lines[: len(lines) // 2] if stopped else lines))
        if not stopped:
            (folder / "report.json").write_text(json.dumps({**report, "run_id": run_id, "created_at": created_at}))
        ids.append(run_id)
    return ids


if __name__ == "__main__":
    runs, template, count = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    synthetic_runs(runs, template, count, datetime(2025, 1, 1, 12, tzinfo=UTC), stopped_every=10)

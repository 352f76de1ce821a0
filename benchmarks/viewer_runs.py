"""How fast `localeval view` lists 500 runs, and how much memory it holds.

Writes RUNS runs into FOLDER/runs with the library, as `localeval run` leaves them: each a journal
and its reports, `exact_match` and a case-blind `exact_match` over the same 20 cases (nothing
judged), a minute apart; every tenth stopped halfway (its reports removed, half its journal kept).
Then starts `localeval view --port 0` on them in a subprocess and times, with urllib on 127.0.0.1:
the first list page (the folder listed), the list again (from the cache), the poll (`/api/version`),
a run's report, the trends of the dataset and a comparison of two runs; then the list after one more
run was added (listed again). Prints each time and the server's resident memory (now and at its peak,
from /proc).

    python benchmarks/viewer_runs.py FOLDER [--runs 500] [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

from localeval.data.dataset import Dataset
from localeval.metrics.registry import build_metric
from localeval.reports import write_reports
from localeval.run.journal import Journal, JournalHeader
from localeval.run.runner import evaluate

START = datetime(2026, 1, 1, tzinfo=UTC)


def write_dataset(path: Path, cases: int = 20) -> Path:
    rows = [{"name": f"q{i}", "input": f"question {i}?", "expected_output": f"answer {i}",
             "actual_output": f"Answer {i}" if i % 3 else f"answer {i}"} for i in range(cases)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_run(runs: Path, dataset: Dataset, n: int, stopped: bool) -> None:
    """Run ``n``, judged and written by the library; ``stopped``: left as a run stopped halfway leaves it."""
    assert dataset.source is not None
    metrics = [build_metric("exact_match"), build_metric("exact_match", {"name": "blind", "ignore_case": True})]
    run_id = f"{n:012x}"
    created = (START + timedelta(minutes=n)).isoformat(timespec="seconds")
    header = JournalHeader(run_id=run_id, created_at=created, config={"dataset": {"path": dataset.source.path}},
                           config_source="<benchmark>", dataset_sha256=dataset.source.sha256, cases=len(dataset),
                           metrics=[m.display_name for m in metrics], name=f"nightly {n}", tags=["bench"],
                           config_sha256="c" * 64, judges=[])
    folder = runs / run_id
    with Journal.create(folder / "journal.jsonl", header) as journal:
        report = evaluate(dataset, metrics, journal=journal)
    if stopped:
        head, *lines = (folder / "journal.jsonl").read_text().splitlines(keepends=True)
        (folder / "journal.jsonl").write_text(head + "".join(lines[: len(lines) // 2]))
        return
    write_reports(report.model_copy(update={"name": header.name, "tags": header.tags,
                                            "config_sha256": header.config_sha256}), folder)


def timed(url: str) -> tuple[float, int]:
    """Seconds to GET ``url`` whole, and its size in bytes."""
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as response:
        size = len(response.read())
    return time.perf_counter() - start, size


def memory_kib(pid: int) -> dict[str, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    return {key: int(re.search(rf"^{key}:\s+(\d+) kB", status, re.M).group(1))  # type: ignore[union-attr]
            for key in ("VmRSS", "VmHWM")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    runs = args.folder / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    args.folder.mkdir(parents=True, exist_ok=True)
    dataset = Dataset.load(write_dataset(args.folder / "cases.jsonl"))
    assert dataset.source is not None
    start = time.perf_counter()
    for n in range(args.runs):
        write_run(runs, dataset, n, stopped=n % 10 == 9)
    print(f"wrote {args.runs} runs in {time.perf_counter() - start:.1f} s")

    started = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "localeval", "view", "--runs", str(runs), "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = re.search(r" at (http://\S+/) ", server.stdout.readline()).group(1)  # type: ignore[union-attr]
        print(f"serving after {time.perf_counter() - started:.2f} s (interpreter, imports, bind)")
        print(f"memory before the first request: {memory_kib(server.pid)} KiB")
        first, size = timed(url)
        print(f"first list page: {first:.3f} s, {size / 1024:.0f} KiB")
        newest, older = f"{args.runs - 2:012x}", f"{args.runs - 3:012x}"
        pages = {"list": url, "version": url + "api/version", "run": url + f"runs/{newest}",
                 "trends": url + f"trends?dataset={dataset.source.sha256}",
                 "compare": url + f"compare?a={older}&b={newest}"}
        for name, page in pages.items():
            times = [timed(page)[0] for _ in range(args.rounds)]
            print(f"{name}: median {statistics.median(times) * 1000:.1f} ms, "
                  f"min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f} ({args.rounds} requests)")
        write_run(runs, dataset, args.runs, stopped=False)
        relisted, _ = timed(url)
        print(f"list page after a run finished (listed again): {relisted:.3f} s")
        print(f"memory after: {memory_kib(server.pid)} KiB")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()

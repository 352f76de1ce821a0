"""A cached `localeval.evaluate()` rerun: model calls and seconds, against the first run.

Runs the quick start (examples/quickstart: its 6 cases and 3 metrics, read from eval.toml as
`localeval run` reads them) through `localeval.evaluate` with SmolLM2-135M (n_threads=1) and a
fresh cache in FOLDER: the first run, then the same call again, each timed in this process (the
judge's load included: a call given a model's name loads it and closes it). Then `localeval run`
on the same quick start and cache, in a subprocess, to show that the CLI answers from what Python
filled. Prints one line per run: model calls, calls from the cache, seconds.

    python benchmarks/python_api_rerun.py FOLDER
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from localeval import Dataset, evaluate
from localeval.config import RunConfig

QUICKSTART = Path(__file__).resolve().parent.parent / "examples" / "quickstart"
JUDGE = {"model": "smollm2-135m-instruct", "n_threads": 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    folder = parser.parse_args().folder.resolve()
    os.environ["LOCALEVAL_CACHE_DIR"] = str(folder / "cache")
    os.environ["LOCALEVAL_RUNS_DIR"] = str(folder / "runs")
    metrics = RunConfig.load(QUICKSTART / "eval.toml").build_metrics()
    for label in ("first run", "cached rerun"):
        started = time.perf_counter()
        report = evaluate(Dataset.load(QUICKSTART / "qa.jsonl"), metrics, JUDGE, progress=False)
        seconds = time.perf_counter() - started
        print(f"evaluate(), {label}: {report.stats.model_calls} model calls, "
              f"{report.stats.cache_hits} from the cache, {seconds:.2f} s")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "localeval", "run", "--config", str(QUICKSTART / "eval.toml"),
                           "--model", "smollm2-135m-instruct", "--report", str(folder / "cli.json")],
                          capture_output=True, text=True, env=os.environ)
    seconds = time.perf_counter() - started
    cost = re.search(r"\d+ model calls[^.]*", done.stdout)
    print(f"localeval run, after them: {cost.group(0) if cost else done.stdout[-300:]}, {seconds:.2f} s "
          f"(exit {done.returncode}, start-up included)")


if __name__ == "__main__":
    main()

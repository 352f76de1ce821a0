"""The benchmark's tables (rich) from results.json: ``python table.py OUT_DIR/results.json``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table


def _f(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def figures(results: dict[str, Any]) -> Table:
    """One row per system and metric, with its ratios."""
    ratio = {(r["system"], r["metric"]): r for r in results["ratios"]}
    table = Table(title=f"{results['settings']['cases']} cases × {results['settings']['rounds']} round(s); "
                  f"{results['machine']['cpu']}, {results['settings']['threads']} thread(s)")
    for name in ("metric", "system", "median s/case", "total s", "usable/min", "calls/case",
                 "prompt tok/case", "gen tok/case", "errored", "deepeval ÷ this", "this ÷ limit", "cold ÷ cached"):
        table.add_column(name, justify="left" if name in ("metric", "system") else "right")
    for row in results["summary"]:
        r = ratio.get((row["system"], row["metric"]), {})
        table.add_row(
            row["metric"], row["system"], _f(row["median_s_per_case"]), _f(row["total_s"], 1),
            _f(row["usable_results_per_min"], 1), _f(row["model_calls_per_case"], 1),
            _f(row["prompt_tokens_per_case"], 0), _f(row["completion_tokens_per_case"], 0),
            f"{row['errored_cases']}/{row['measured_cases']}",
            _f(r.get("deepeval_over_localeval")), _f(r.get("localeval_over_limit")), _f(r.get("cold_over_cached"), 0),
        )
    return table


def targets(results: dict[str, Any]) -> Table:
    table = Table(title="Targets of issue #7")
    for name in ("target", "value", "goal", "met"):
        table.add_column(name)
    for t in results["targets"]:
        met = "–" if t["met"] is None else ("yes" if t["met"] else "NO")
        table.add_row(t["target"], _f(t["value"]), t["goal"], met)
    return table


def show(results: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console(width=None if sys.stdout.isatty() else 200)
    console.print(figures(results))
    console.print(targets(results))


if __name__ == "__main__":
    show(json.loads(Path(sys.argv[1]).read_text()))

"""Print the README's alignment table from the JSON reports benchmarks/alignment.sh wrote.

Usage: python benchmarks/alignment_table.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def cell(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def main(folder: Path) -> None:
    print("| set | dimension | method | items | errored | pooled r | pooled ρ | pooled τ | summary-level ρ (groups) | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for path in sorted(folder.glob("*.json"), key=lambda p: (p.stem.split("-")[:2], "baseline" in p.stem)):
        report = json.loads(path.read_text())
        name, _, dimension = path.stem.partition("-")
        dimension, _, variant = dimension.partition("-")
        for m in report["methods"]:
            method = "length, no judge" if variant == "baseline" else m["method"]
            pooled, summary = m["pooled"], m["summary_level"]
            level = f"{cell(summary['spearman'])} ({summary['groups']})" if report.get("group") and summary["groups"] else "–"
            print(
                f"| {name} | {dimension} | {method} | {pooled['items']} | {m['errored']} | "
                f"{cell(pooled['pearson'])} | {cell(pooled['spearman'])} | {cell(pooled['kendall'])} | "
                f"{level} | {report['stats']['duration_s']:.0f} |"
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""Print the alignment table from the JSON reports benchmarks/alignment.sh wrote, one folder per judge.

Usage: python benchmarks/alignment_table.py OUT_DIR [OUT_DIR ...] [--paper FOLDER] [--compact METHOD]

Each row: a set, a dimension, the judge (the report's model), a method, and the agreement with people:
Spearman ρ with its 95% bootstrap interval (meta-eval's, over items pooled, over groups summary-level).
--paper FOLDER adds the G-Eval paper's GPT-4 figure for the same set and dimension from its tables there
(geval_table3_qags_*.csv: ρ over the set; geval_table2_topicalchat_*.csv: ρ per turn, which the
summary-level column is the counterpart of).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

PAPER_ROW = "G-EVAL-4"
PAPER_COLUMNS = {  # (set, dimension) -> the column of the paper's table
    ("qags_cnndm", "consistency"): "cnn_rho", ("qags_xsum", "consistency"): "xsum_rho",
    ("topical_chat", "naturalness"): "nat_rho", ("topical_chat", "coherence"): "coh_rho",
    ("topical_chat", "engagingness"): "eng_rho", ("topical_chat", "groundedness"): "gro_rho",
}


def cell(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def with_interval(correlations: dict[str, Any]) -> str:
    interval = correlations.get("spearman_interval")
    shown = cell(correlations["spearman"])
    return shown if interval is None else f"{shown} [{interval[0]:+.2f}, {interval[1]:+.2f}]"


def paper_figures(folder: Path | None) -> dict[str, str]:
    """The paper's G-Eval-4 row, column by column, from every table in ``folder``."""
    if folder is None:
        return {}
    found: dict[str, str] = {}
    for path in sorted(folder.glob("geval_table*.csv")):
        lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
        for row in csv.DictReader(lines):
            if row["metric"] == PAPER_ROW:
                found.update({k: v for k, v in row.items() if k != "metric"})
    return found


def rows(folder: Path, paper: dict[str, str]) -> list[str]:
    lines = []
    for path in sorted(folder.glob("*.json"), key=lambda p: (p.stem.split("-")[:2], "baseline" in p.stem)):
        report = json.loads(path.read_text())
        name, _, dimension = path.stem.partition("-")
        dimension, _, variant = dimension.partition("-")
        baseline = variant == "baseline"
        judge = "no judge" if baseline else (report.get("backend") or {}).get("model", "?")
        figure = paper.get(PAPER_COLUMNS.get((name, dimension), ""), "")
        for m in report["methods"]:
            method = "length" if baseline else m["method"]
            pooled, summary = m["pooled"], m["summary_level"]
            level = (f"{with_interval(summary)} ({summary['groups']})"
                     if report.get("group") and summary and summary["groups"] else "–")
            lines.append(
                f"| {name} | {dimension} | {judge} | {method} | {pooled['items']} | {m['errored']} | "
                f"{cell(pooled['pearson'])} | {with_interval(pooled)} | {cell(pooled['kendall'])} | "
                f"{level} | {report['stats']['duration_s']:.0f} |" + (f" {figure or '–'} |" if paper else "")
            )
    return lines


def compact(folders: list[Path], paper: dict[str, str], method: str) -> None:
    """One row per set and dimension, one column per judge: ρ of ``method`` with its interval, pooled on
    QAGS (one summary per document) and per dialogue on Topical-Chat (the paper's turn-level)."""
    cells: dict[tuple[str, str], dict[str, str]] = {}
    judges: list[str] = []
    for folder in folders:
        for path in sorted(folder.glob("*.json")):
            report = json.loads(path.read_text())
            name, _, dimension = path.stem.partition("-")
            dimension, _, variant = dimension.partition("-")
            judge = "length (no judge)" if variant == "baseline" else (report.get("backend") or {}).get("model", "?")
            wanted = "-" if variant == "baseline" else method
            found = [m for m in report["methods"] if m["method"] == wanted]
            if not found:
                continue
            m = found[0]
            correlations = m["summary_level"] if report.get("group") and m["summary_level"]["groups"] else m["pooled"]
            cells.setdefault((name, dimension), {})[judge] = f"{with_interval(correlations)} (n {m['pooled']['items']})"
            judges += [judge] if judge not in judges else []
    print("| set | dimension | " + " | ".join(judges) + (" | G-Eval-4 (paper) |" if paper else " |"))
    print("|---|---|" + "---|" * len(judges) + ("---|" if paper else ""))
    for (name, dimension), row in sorted(cells.items()):
        figure = paper.get(PAPER_COLUMNS.get((name, dimension), ""), "")
        print(f"| {name} | {dimension} | " + " | ".join(row.get(j, "–") for j in judges)
              + (f" | {figure or '–'} |" if paper else " |"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--paper", type=Path, help="the folder of the G-Eval paper's tables (CSV)")
    parser.add_argument("--compact", metavar="METHOD", help="one column per judge: ρ of this method (logprobs, "
                        "top), pooled on QAGS, per dialogue on Topical-Chat")
    args = parser.parse_args()
    paper = paper_figures(args.paper)
    if args.compact:
        compact(args.folders, paper, args.compact)
        return
    print("| set | dimension | judge | method | items | errored | pooled r | pooled ρ [95%] | pooled τ | "
          "summary-level ρ [95%] (groups) | wall s |" + (" G-Eval-4 ρ (paper) |" if paper else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if paper else ""))
    for folder in args.folders:
        for line in rows(folder, paper):
            print(line)


if __name__ == "__main__":
    main()

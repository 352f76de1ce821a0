"""A judge check as the Markdown table of docs/measurements/judges.md, with its judge calls and failures.

Usage: python benchmarks/judge_table.py CHECK.json [CHECK.json ...]
A CHECK.json is what `localeval check-judge --report FILE` writes, or a stored check
(~/.local/share/localeval/judge-checks/*.json); several files of one judge are merged, later files
replacing earlier ones family by family. The table's columns are those of the docs.
"""

from __future__ import annotations

import sys
from pathlib import Path

from localeval.metaeval.check import FamilyCheck, JudgeCheck


def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def row(f: FamilyCheck) -> str:
    scored = f.pairs - f.errored
    calibrated = f.calibrated
    return " | ".join([
        "", f"`{f.family}`", str(f.pairs), share(f.ordered), f"{f.bad_failed}/{scored}", f"{f.good_passed}/{scored}",
        "-" if calibrated is None else f"{calibrated.threshold:.3f}",
        "-" if calibrated is None else share(calibrated.held_out_accuracy),
        str(f.judge_calls or "-"), str(f.errored), "**at chance**" if f.at_chance else "", "",
    ]).strip()


def main(paths: list[str]) -> None:
    check: JudgeCheck | None = None
    for path in paths:
        check = JudgeCheck.model_validate_json(Path(path).read_text(encoding="utf-8")).merged_into(check)
    if check is None:
        raise SystemExit(__doc__)
    print(f"{check.judge.model} ({check.judge.kind}, {check.judge.runtime}), checked {check.checked_at}\n")
    print("| family | pairs | ordered | bad failed | good passed | calibrated | held-out | judge calls | errored | |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for family in check.families:
        print(row(family))
    counted = [f for f in check.families if f.judge_calls]
    failures: dict[str, int] = {}
    for f in check.families:
        for kind, n in f.error_kinds.items():
            failures[kind] = failures.get(kind, 0) + n
    chance = sum(f.at_chance for f in check.families)
    print(f"\nAt chance on {chance} of {len(check.families)} families. Judge calls counted "
          f"({len(counted)} families): {sum(f.judge_calls for f in counted)} answered, failed: "
          f"{sum(failures.values())} {failures or ''}".rstrip())


if __name__ == "__main__":
    main(sys.argv[1:])

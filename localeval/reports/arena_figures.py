"""How an arena's figures read, the same in the terminal and the HTML report: a strength and a win
rate with their 95% intervals, and a record of outcomes (:mod:`localeval.metrics.arena`'s summary rows)."""

from __future__ import annotations

from typing import Any


def strength_text(row: dict[str, Any]) -> str:
    """"+0.412 [+0.100, +0.730]"; without its interval where there is none (a single case)."""
    low, high = row.get("strength_low"), row.get("strength_high")
    interval = f" [{low:+.3f}, {high:+.3f}]" if low is not None and high is not None else ""
    return f"{row['strength']:+.3f}{interval}"


def win_rate_text(row: dict[str, Any]) -> str:
    """"62.5% [45.1–77.3%]"; "–" without comparisons."""
    rate, low, high = row.get("win_rate"), row.get("win_rate_low"), row.get("win_rate_high")
    if rate is None:
        return "–"
    return f"{rate:.1%}" + (f" [{low:.1%}–{high:.1%}]" if low is not None and high is not None else "")


def record_text(row: dict[str, Any]) -> str:
    """"5 / 2 / 1": won (A preferred), tied, lost; "–" in a report written before outcomes were counted."""
    if "wins" not in row:
        return "–"
    return f"{row['wins']} / {row['ties']} / {row['losses']}"

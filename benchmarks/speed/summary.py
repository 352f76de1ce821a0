"""From per-case records to the benchmark's figures, ratios and the issue's targets. Pure functions.

A record is one (system, metric row, round, case) measurement: ``seconds``,
``results`` (metrics in the row) and ``scored`` (those that gave a score),
``errored``, ``model_calls``, ``prompt_tokens``, ``completion_tokens``.
A metric row is a metric set (``geval``, ``geval4``, ``faithfulness``,
``answer_relevancy``), or a variant of one (``geval+reason``) whose base is
the part before ``+``: deepeval and the limit are compared by base.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

SYSTEMS = ("deepeval", "localeval-http", "localeval", "localeval-cached", "limit")
LOCALEVAL = ("localeval-http", "localeval", "localeval-cached")


def base(metric: str) -> str:
    return metric.split("+")[0]


def summarize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (system, metric row), in SYSTEMS order."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[record["system"], record["metric"]].append(record)
    rows = [_row(system, metric, group) for (system, metric), group in groups.items()]
    return sorted(rows, key=lambda r: (_metric_order(r["metric"]), SYSTEMS.index(r["system"])))


def _metric_order(metric: str) -> tuple[int, str]:
    order = ("geval", "geval4", "faithfulness", "answer_relevancy")
    return (order.index(base(metric)) if base(metric) in order else len(order), metric)


def _row(system: str, metric: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    rounds: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        rounds[record["round"]].append(record)
    totals = [sum(r["seconds"] for r in rs) for rs in rounds.values()]
    per_minute = [60 * sum(r["scored"] for r in rs) / max(total, 1e-9) for rs, total in zip(rounds.values(), totals)]
    return {
        "system": system,
        "metric": metric,
        "cases": len(records) // max(len(rounds), 1),
        "rounds": len(rounds),
        "median_s_per_case": statistics.median(r["seconds"] for r in records),
        "total_s": statistics.median(totals),
        "total_s_per_round": totals,
        "usable_results_per_min": statistics.median(per_minute),
        "model_calls_per_case": _mean(records, "model_calls"),
        "prompt_tokens_per_case": _mean(records, "prompt_tokens"),
        "completion_tokens_per_case": _mean(records, "completion_tokens"),
        "forward_tokens_per_case": _mean(records, "forward_tokens"),
        "errored_cases": sum(1 for r in records if r["errored"]),
        "timed_out_cases": sum(1 for r in records if r.get("timed_out")),
        "measured_cases": len(records),
    }


def _mean(records: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in records if r.get(key) is not None]
    return statistics.fmean(values) if values else None


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each cold localeval row: deepeval's total time over its own (same base metric), its
    usable results per minute over deepeval's, its time over the limit's, and (in-process)
    its time over the cached re-run's."""
    by_key = {(r["system"], r["metric"]): r for r in rows}

    def figure(system: str, metric: str, key: str) -> float | None:
        return by_key.get((system, metric), {}).get(key)

    out = []
    for row in rows:
        if row["system"] not in ("localeval-http", "localeval"):
            continue
        own, metric = row["total_s"], row["metric"]
        out.append({
            "system": row["system"],
            "metric": metric,
            "deepeval_over_localeval": _div(figure("deepeval", base(metric), "total_s"), own),
            "usable_per_min_localeval_over_deepeval": _div(
                row["usable_results_per_min"], figure("deepeval", base(metric), "usable_results_per_min")),
            "localeval_over_limit": _div(own, figure("limit", base(metric), "total_s")),
            "cold_over_cached": _div(own, figure("localeval-cached", metric, "total_s"))
            if row["system"] == "localeval" else None,
        })
    return out


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b <= 0 else a / b


def targets(rows: list[dict[str, Any]], ratio_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The targets of issue #7, each with the figure that decides it (None: not measured)."""
    ratio = {(r["system"], r["metric"]): r for r in ratio_rows}

    def get(system: str, metric: str, key: str) -> float | None:
        return ratio.get((system, metric), {}).get(key)

    over_limit, over_deepeval = "localeval_over_limit", "deepeval_over_localeval"
    checks = [
        ("G-Eval, one criterion, in-process <= 1.3x the limit", get("localeval", "geval", over_limit), "<=", 1.3),
        ("four G-Evals >= 3x faster than deepeval's four (in-process)",
         get("localeval", "geval4", over_deepeval), ">=", 3.0),
        ("four G-Evals >= 3x faster than deepeval's four (same server)",
         get("localeval-http", "geval4", over_deepeval), ">=", 3.0),
        ("faithfulness, in-process <= 2x the limit", get("localeval", "faithfulness", over_limit), "<=", 2.0),
        ("answer relevancy, in-process <= 2x the limit", get("localeval", "answer_relevancy", over_limit), "<=", 2.0),
    ]
    cold = [r["cold_over_cached"] for r in ratio_rows if r["cold_over_cached"] is not None]
    checks.append(("cached re-run >= 100x faster than cold (worst metric)", min(cold) if cold else None, ">=", 100.0))
    errored = [r["errored_cases"] for r in rows if r["system"] in LOCALEVAL]
    checks.append(("0 errored cases for localeval", float(sum(errored)) if errored else None, "<=", 0.0))
    return [
        {"target": name, "value": value, "goal": f"{op} {goal:g}",
         "met": None if value is None else (value <= goal if op == "<=" else value >= goal)}
        for name, value, op, goal in checks
    ]

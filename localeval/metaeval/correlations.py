"""How well judge scores agree with human scores: correlation coefficients, pure math.

Two recipes, as the G-Eval paper (Liu et al., 2023) uses them:

* **pooled**: one correlation over every (judge, human) pair;
* **summary-level**: per group (say, a source document scored for several
  systems' summaries), correlate across the group's items; skip groups with
  fewer than two items or where either side is constant (no correlation is
  defined there); average each coefficient over the remaining groups.

Pearson r, Spearman ρ and Kendall τ-b come from ``scipy.stats``, imported on
first use so that importing localeval does not load scipy. A coefficient that is
undefined (fewer than two pairs, a constant side) is None, never 0 or NaN.
Pairs whose judge score is None (the judge could not score) are dropped first.

Spearman ρ comes with its 95% interval: a seeded percentile bootstrap over the items
(pooled) or over the groups (summary-level: the groups' ρ resampled and averaged), from
:func:`localeval.stats.resampled_intervals`. It says how far a set this size pins ρ down (on
60 items an interval about ±0.25 wide is usual); None below
:data:`localeval.stats.MIN_VALUES` items or groups, or where a resample leaves ρ undefined.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from localeval import stats as intervals

__all__ = ["Correlations", "pooled", "summary_level"]


class Correlations(BaseModel):
    """Correlation of judge scores with human scores, and how many items (and groups) it rests on."""

    model_config = ConfigDict(frozen=True)

    pearson: float | None = Field(description="Pearson r; None where undefined.")
    spearman: float | None = Field(description="Spearman ρ; None where undefined.")
    kendall: float | None = Field(description="Kendall τ-b; None where undefined.")
    items: int = Field(description="Pairs the coefficients rest on.")
    groups: int | None = Field(None, description="Groups averaged over (summary-level only).")
    spearman_interval: tuple[float, float] | None = Field(
        None, description="Spearman ρ's 95% bootstrap interval over the items (pooled) or the groups "
                          "(summary-level); None for fewer than 10 of them or where ρ is undefined.")


def pooled(judge: Sequence[float | None], human: Sequence[float]) -> Correlations:
    """Correlations over all pairs whose judge score is not None."""
    xs, ys = _scored_pairs(judge, human)
    coefficients = _coefficients(xs, ys) if _defined(xs, ys) else (None, None, None)
    return Correlations(
        pearson=coefficients[0], spearman=coefficients[1], kendall=coefficients[2], items=len(xs),
        spearman_interval=_spearman_interval(xs, ys) if coefficients[1] is not None else None,
    )


def summary_level(
    judge: Sequence[float | None], human: Sequence[float], groups: Sequence[Hashable]
) -> Correlations:
    """Per-group correlations averaged over the groups where they are defined.

    ``groups[i]`` names the group of pair ``i``. ``items`` counts the pairs in the
    groups used; with no usable group every coefficient is None and ``groups`` is 0.
    """
    if len(groups) != len(judge):
        raise ValueError(f"{len(judge)} judge scores but {len(groups)} group keys")
    _check_lengths(judge, human)
    members: dict[Hashable, tuple[list[float], list[float]]] = {}
    for x, y, key in zip(judge, human, groups):
        if x is not None:
            xs, ys = members.setdefault(key, ([], []))
            xs.append(x)
            ys.append(y)
    used = [_coefficients(xs, ys) for xs, ys in members.values() if _defined(xs, ys)]
    items = sum(len(xs) for xs, ys in members.values() if _defined(xs, ys))
    means = [_mean([c[i] for c in used]) for i in range(3)]
    return Correlations(
        pearson=means[0], spearman=means[1], kendall=means[2], items=items, groups=len(used),
        spearman_interval=_mean_interval([c[1] for c in used]),
    )


def _scored_pairs(
    judge: Sequence[float | None], human: Sequence[float]
) -> tuple[list[float], list[float]]:
    _check_lengths(judge, human)
    pairs = [(x, y) for x, y in zip(judge, human) if x is not None]
    return [x for x, _ in pairs], [y for _, y in pairs]


def _check_lengths(judge: Sequence[float | None], human: Sequence[float]) -> None:
    if len(judge) != len(human):
        raise ValueError(f"{len(judge)} judge scores but {len(human)} human scores")


def _defined(xs: list[float], ys: list[float]) -> bool:
    """Whether correlations exist: two pairs at least, and neither side constant."""
    return len(xs) >= 2 and len(set(xs)) > 1 and len(set(ys)) > 1


def _coefficients(xs: list[float], ys: list[float]) -> tuple[float | None, float | None, float | None]:
    from scipy import stats  # lazily: importing localeval must not load scipy

    return (
        _finite(stats.pearsonr(xs, ys).statistic),
        _finite(stats.spearmanr(xs, ys).statistic),
        _finite(stats.kendalltau(xs, ys).statistic),  # tau-b, scipy's default
    )


def _spearman_interval(xs: list[float], ys: list[float]) -> tuple[float, float] | None:
    """ρ's bootstrap interval over the pairs (each resample re-ranked); None for too few pairs."""
    if len(xs) < intervals.MIN_VALUES:
        return None
    import numpy as np  # lazily, as scipy
    from scipy import stats

    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)

    def rho(rows: Any) -> Any:  # one resample per row -> one ρ per row (NaN where a side is constant)
        rx, ry = stats.rankdata(x[rows], axis=1), stats.rankdata(y[rows], axis=1)
        rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ((rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1)))[None, :]

    return _interval(intervals.resampled_intervals(len(xs), rho))


def _mean_interval(values: list[float | None]) -> tuple[float, float] | None:
    """The bootstrap interval of the mean of the groups' coefficients, the groups resampled."""
    present = [v for v in values if v is not None]
    if len(present) < intervals.MIN_VALUES:
        return None
    import numpy as np  # lazily, as scipy

    v = np.asarray(present, dtype=float)
    return _interval(intervals.resampled_intervals(len(present), lambda rows: v[rows].mean(axis=1)[None, :]))


def _interval(found: list[tuple[float, float]] | None) -> tuple[float, float] | None:
    if not found:
        return None
    low, high = found[0]
    return (low, high) if math.isfinite(low) and math.isfinite(high) else None


def _finite(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None

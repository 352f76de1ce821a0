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
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Correlations", "pooled", "summary_level"]


class Correlations(BaseModel):
    """Correlation of judge scores with human scores, and how many items (and groups) it rests on."""

    model_config = ConfigDict(frozen=True)

    pearson: float | None = Field(description="Pearson r; None where undefined.")
    spearman: float | None = Field(description="Spearman ρ; None where undefined.")
    kendall: float | None = Field(description="Kendall τ-b; None where undefined.")
    items: int = Field(description="Pairs the coefficients rest on.")
    groups: int | None = Field(None, description="Groups averaged over (summary-level only).")


def pooled(judge: Sequence[float | None], human: Sequence[float]) -> Correlations:
    """Correlations over all pairs whose judge score is not None."""
    xs, ys = _scored_pairs(judge, human)
    coefficients = _coefficients(xs, ys) if _defined(xs, ys) else (None, None, None)
    return Correlations(
        pearson=coefficients[0], spearman=coefficients[1], kendall=coefficients[2], items=len(xs)
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
        pearson=means[0], spearman=means[1], kendall=means[2], items=items, groups=len(used)
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


def _finite(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None

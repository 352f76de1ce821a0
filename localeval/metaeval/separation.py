"""How well a judge's scores separate good outputs from planted-bad ones: pure functions, no I/O.

A planted pair is one case written twice, a good variant and a bad one that differs in the one
thing a metric judges. Given each pair's two scores (``None``: the metric could not score):

- **ordered**: the share of pairs whose good variant scores better (higher, or lower where lower
  is better), a tie counting half: 0.5 is a judge that cannot tell them apart;
- **bad failed** / **good passed**: at a threshold, how many bad variants fail and good ones pass;
- **the threshold that best separates them**, chosen on one half of the pairs (the *fit* half)
  and its accuracy measured on the other (the *held-out* half), so the figure is not fitted to
  what it is judged on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: A judge that orders fewer pairs than this on a family is at chance there (ties count half).
AT_CHANCE_BELOW = 0.75


@dataclass(frozen=True)
class PairScores:
    """One pair's two scores; ``None`` where the metric errored."""

    good: float | None
    bad: float | None

    @property
    def scored(self) -> bool:
        return self.good is not None and self.bad is not None


@dataclass(frozen=True)
class Calibration:
    """A threshold chosen on the fit half, and how it classifies the held-out half."""

    threshold: float
    fit_accuracy: float
    held_out_accuracy: float
    fit_pairs: int
    held_out_pairs: int


def passes(score: float, threshold: float, lower_is_better: bool) -> bool:
    """The metric's own rule: at least the threshold, or at most it where lower is better."""
    return score <= threshold if lower_is_better else score >= threshold


def ordered(pairs: Sequence[PairScores], lower_is_better: bool = False) -> float | None:
    """The share of scored pairs whose good variant scores better; a tie counts half. None: none scored."""
    scored = [p for p in pairs if p.scored]
    if not scored:
        return None
    sign = -1.0 if lower_is_better else 1.0
    credit = 0.0
    for pair in scored:
        difference = sign * (pair.good - pair.bad)  # type: ignore[operator]
        credit += 1.0 if difference > 0 else 0.5 if difference == 0 else 0.0
    return credit / len(scored)


def outcomes(pairs: Sequence[PairScores], threshold: float, lower_is_better: bool = False) -> tuple[int, int]:
    """(bad variants that fail, good variants that pass) at ``threshold``, among the scored ones."""
    bad_failed = sum(1 for p in pairs if p.bad is not None and not passes(p.bad, threshold, lower_is_better))
    good_passed = sum(1 for p in pairs if p.good is not None and passes(p.good, threshold, lower_is_better))
    return bad_failed, good_passed


def accuracy(pairs: Sequence[PairScores], threshold: float, lower_is_better: bool = False) -> float | None:
    """The share of scored variants on the right side of ``threshold``: good pass, bad fail."""
    total = sum((p.good is not None) + (p.bad is not None) for p in pairs)
    if total == 0:
        return None
    bad_failed, good_passed = outcomes(pairs, threshold, lower_is_better)
    return (bad_failed + good_passed) / total


def best_threshold(pairs: Sequence[PairScores], lower_is_better: bool = False) -> tuple[float, float] | None:
    """(threshold, accuracy) that classifies ``pairs`` best; None when nothing is scored.

    Candidates are the midpoints between neighbouring distinct scores and the two ends, so the
    threshold sits between the scores it separates, never on one; among equally accurate
    thresholds the one nearest 0.5 wins (the least extreme), then the lower.
    """
    scores = sorted({s for p in pairs for s in (p.good, p.bad) if s is not None})
    if not scores:
        return None
    candidates = [0.0, 1.0, *((a + b) / 2 for a, b in zip(scores, scores[1:]))]
    best = max(
        candidates,
        key=lambda t: (accuracy(pairs, t, lower_is_better), -abs(t - 0.5), -t),
    )
    return best, accuracy(pairs, best, lower_is_better)  # type: ignore[return-value]


def halves(count: int) -> tuple[list[int], list[int]]:
    """The pairs' indices split in two alternately: (fit, held out). Deterministic, so a check repeats."""
    return list(range(0, count, 2)), list(range(1, count, 2))


def calibrate(pairs: Sequence[PairScores], lower_is_better: bool = False) -> Calibration | None:
    """The best threshold on the fit half and its accuracy on the held-out half; None if either is unscored."""
    fit_index, held_index = halves(len(pairs))
    fit = [pairs[i] for i in fit_index if pairs[i].scored]
    held = [pairs[i] for i in held_index if pairs[i].scored]
    chosen = best_threshold(fit, lower_is_better)
    held_accuracy = None if chosen is None else accuracy(held, chosen[0], lower_is_better)
    if chosen is None or held_accuracy is None:
        return None
    return Calibration(
        threshold=chosen[0], fit_accuracy=chosen[1], held_out_accuracy=held_accuracy,
        fit_pairs=len(fit), held_out_pairs=len(held),
    )

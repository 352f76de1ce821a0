"""Rankings from pairwise preferences: win rates and a Bradley–Terry fit. Pure, no I/O.

A comparison is ``(a, b, p)``: the judge preferred ``a`` to ``b`` with probability
``p``. It counts as a *soft win*: ``p`` of a win for ``a`` and ``1 - p`` for ``b``,
so a confident preference weighs more than a coin flip, and a 0/1 verdict (a
sampled one) is the classic win or loss.

Bradley–Terry models P(i beats j) = σ(s_i − s_j) with one strength ``s`` per
contestant; the fit maximizes Σ w_ij · log σ(s_i − s_j) over the soft wins
w_ij, by solving its likelihood equations (each contestant's soft wins equal its
expected wins) with scipy's ``root`` and the exact Jacobian; the strengths are
shifted to mean 0. The maximum exists only when every contestant has won *and*
lost some mass against every group of the others (the win graph is strongly
connected); otherwise a contestant that won everything would get an infinite
strength. Then, and only then, ``smoothing`` virtual comparisons split evenly
(``smoothing`` of a win each way per compared pair) keep it finite, and the
ranking records the smoothing it used. Contestants in groups never compared with
each other cannot be ranked together: that is an error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: Virtual wins each way per compared pair when the maximum-likelihood fit does not exist.
FALLBACK_SMOOTHING = 0.5

Comparison = tuple[str, str, float]


@dataclass(frozen=True)
class Standing:
    """One contestant's place: its Bradley–Terry strength, its win rate, and how often it was compared."""

    rank: int
    name: str
    strength: float  #: Bradley–Terry log-strength, mean 0 over the contestants
    win_rate: float  #: soft wins / comparisons
    comparisons: int


@dataclass(frozen=True)
class Ranking:
    """Contestants best first, and the smoothing the fit needed (0.0: the plain maximum likelihood)."""

    standings: tuple[Standing, ...]
    smoothing: float


def soft_wins(names: Sequence[str], comparisons: Iterable[Comparison]) -> dict[tuple[str, str], float]:
    """{(a, b): the soft wins of ``a`` over ``b``} for every ordered pair compared at least once."""
    known = set(names)
    wins: dict[tuple[str, str], float] = {}
    for a, b, p in comparisons:
        if a not in known or b not in known or a == b:
            raise ValueError(f"comparison ({a!r}, {b!r}) names a contestant twice or one not in {list(names)}")
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"a preference is a probability, got {p}")
        wins[(a, b)] = wins.get((a, b), 0.0) + p
        wins[(b, a)] = wins.get((b, a), 0.0) + 1.0 - p
    return wins


def win_rates(names: Sequence[str], comparisons: Iterable[Comparison]) -> dict[str, float | None]:
    """Each contestant's soft wins divided by its comparisons; None for one never compared."""
    wins = soft_wins(names, comparisons)
    won = dict.fromkeys(names, 0.0)
    played = dict.fromkeys(names, 0.0)
    for (a, b), w in wins.items():
        won[a] += w
        played[a] += w
        played[b] += w
    return {n: won[n] / played[n] if played[n] else None for n in names}


def bradley_terry(names: Sequence[str], comparisons: Iterable[Comparison], smoothing: float = 0.0) -> dict[str, float]:
    """The Bradley–Terry log-strengths (mean 0) that best explain the comparisons.

    Raises ``ValueError`` when the contestants fall into groups never compared with
    each other, or when the maximum does not exist (see the module) and
    ``smoothing`` is 0.
    """
    import numpy as np  # lazily, as scipy: importing localeval must not load them
    from scipy.optimize import root

    wins = soft_wins(names, comparisons)
    if smoothing:
        wins = {pair: w + smoothing for pair, w in wins.items()}
    _check_identifiable(names, wins)
    index = {n: i for i, n in enumerate(names)}
    pairs = [(index[a], index[b], w) for (a, b), w in wins.items() if w > 0.0]
    i_idx = np.array([i for i, _, _ in pairs], dtype=int)
    j_idx = np.array([j for _, j, _ in pairs], dtype=int)
    weight = np.array([w for _, _, w in pairs], dtype=float)
    size = len(names)

    def full(free: np.ndarray) -> np.ndarray:
        return np.concatenate(([0.0], free))  # the first strength is pinned at 0: the rest are relative to it

    def gradient(free: np.ndarray) -> np.ndarray:
        s = full(free)
        pull = weight / (1.0 + np.exp(s[i_idx] - s[j_idx]))  # w · (1 - σ(d))
        grad = np.zeros(size)
        np.add.at(grad, i_idx, -pull)
        np.add.at(grad, j_idx, pull)
        return grad[1:]

    def hessian(free: np.ndarray) -> np.ndarray:
        s = full(free)
        sig = 1.0 / (1.0 + np.exp(-(s[i_idx] - s[j_idx])))
        curve = weight * sig * (1.0 - sig)
        hess = np.zeros((size, size))
        np.add.at(hess, (i_idx, i_idx), curve)
        np.add.at(hess, (j_idx, j_idx), curve)
        np.add.at(hess, (i_idx, j_idx), -curve)
        np.add.at(hess, (j_idx, i_idx), -curve)
        return hess[1:, 1:]

    if size == 1:
        return {names[0]: 0.0}
    # The maximum is where the gradient vanishes: observed wins = expected wins for every
    # contestant. MINPACK's hybrid method with the exact Jacobian (the Hessian) solves it to
    # rounding; a minimizer stops at its own tolerance, a few 1e-9 short.
    fit = root(gradient, np.zeros(size - 1), jac=hessian, method="hybr", options={"xtol": 1e-14})
    # MINPACK may say it can improve no further when it is at the root to rounding: the gradient decides.
    if not np.all(np.abs(gradient(fit.x)) < 1e-9 * max(1.0, float(weight.sum()))):
        raise ValueError(f"the Bradley–Terry fit did not converge: {fit.message}")
    strengths = full(fit.x)
    strengths -= strengths.mean()
    return {n: float(strengths[index[n]]) for n in names}


def rank(names: Sequence[str], comparisons: Iterable[Comparison]) -> Ranking:
    """The contestants best first by Bradley–Terry strength (ties: by name), with win rates.

    Smoothing (:data:`FALLBACK_SMOOTHING`) is used only when the plain fit has no
    maximum, and recorded.
    """
    comparisons = list(comparisons)
    wins = soft_wins(names, comparisons)
    smoothing = 0.0 if _strongly_connected(names, wins) else FALLBACK_SMOOTHING
    strengths = bradley_terry(names, comparisons, smoothing)
    rates = win_rates(names, comparisons)
    counts = dict.fromkeys(names, 0)
    for a, b, _ in comparisons:
        counts[a] += 1
        counts[b] += 1
    order = sorted(names, key=lambda n: (-strengths[n], n))
    standings = tuple(
        Standing(rank=i, name=n, strength=strengths[n], win_rate=rates[n] or 0.0, comparisons=counts[n])
        for i, n in enumerate(order, start=1)
    )
    return Ranking(standings, smoothing)


def win_probability(strength_a: float, strength_b: float) -> float:
    """P(a beats b) under Bradley–Terry: σ(s_a − s_b)."""
    return 1.0 / (1.0 + math.exp(strength_b - strength_a))


def _check_identifiable(names: Sequence[str], wins: dict[tuple[str, str], float]) -> None:
    if not _reachable(names, {pair for pair in wins}) >= set(names):
        raise ValueError("some contestants were never compared, directly or through others, with the rest")
    if not _strongly_connected(names, wins):
        raise ValueError(
            "a group of contestants won every comparison against the others: the maximum-likelihood "
            "strengths are infinite; give a smoothing"
        )


def _strongly_connected(names: Sequence[str], wins: dict[tuple[str, str], float]) -> bool:
    """Whether every contestant reaches every other along edges a→b where a won some mass from b."""
    beat = {pair for pair, w in wins.items() if w > 0.0}
    beaten = {(b, a) for a, b in beat}
    return _reachable(names, beat) >= set(names) and _reachable(names, beaten) >= set(names)


def _reachable(names: Sequence[str], edges: set[tuple[str, str]]) -> set[str]:
    if not names:
        return set()
    seen, frontier = {names[0]}, [names[0]]
    while frontier:
        node = frontier.pop()
        for a, b in edges:
            if a == node and b not in seen:
                seen.add(b)
                frontier.append(b)
    return seen

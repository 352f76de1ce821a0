"""Rankings from pairwise preferences: Bradley–Terry strengths and win rates, each with its interval,
and a verdict per pair. Pure, no I/O.

A comparison is ``(a, b, p)``: the judge preferred ``a`` to ``b`` with probability
``p``. It counts as a *soft win*: ``p`` of a win for ``a`` and ``1 - p`` for ``b``,
so a confident preference weighs more than a coin flip, and a 0/1 verdict (a
sampled one) is the classic win or loss. An outcome is what one case decided about
a pair: ``(a, b, winner)``, the winner ``a``, ``b`` or None for a tie within the
judge's noise (the arena decides it: :mod:`localeval.metrics.arena`).

Bradley–Terry models P(i beats j) = σ(s_i − s_j) with one strength ``s`` per
contestant; the fit maximizes Σ w_ij · log σ(s_i − s_j) over the soft wins
w_ij, by solving its likelihood equations (each contestant's soft wins equal its
expected wins) with Newton's method and the exact Hessian, many fits at once (the
bootstrap's); the strengths are shifted to mean 0. The maximum exists only when every contestant has won *and*
lost some mass against every group of the others (the win graph is strongly
connected); otherwise a contestant that won everything would get an infinite
strength. Then, and only then, ``smoothing`` virtual comparisons split evenly
(``smoothing`` of a win each way per compared pair) keep it finite, and the
ranking records the smoothing it used. Contestants in groups never compared with
each other cannot be ranked together: that is an error. A strength's interval is
the bootstrap's: the cases resampled with replacement and the fit made again on
each resample, by the same rule (:func:`localeval.stats.resampled_intervals`).

A win rate counts outcomes, a tie as half a win, with the interval of
:func:`localeval.stats.win_rate`. A pair's verdict is its head-to-head win rate's:
one side is better when that interval excludes 0.5 (:func:`better_side`), else
there is no significant difference. Wilson's interval stays honest at a handful of
cases, where a bootstrap of so few cases is not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from localeval.stats import RESAMPLES, Interval, resampled_intervals, win_rate

if TYPE_CHECKING:
    import numpy as np

#: Virtual wins each way per compared pair when the maximum-likelihood fit does not exist.
FALLBACK_SMOOTHING = 0.5

Comparison = tuple[str, str, float]
Outcome = tuple[str, str, str | None]


@dataclass(frozen=True)
class Record:
    """Outcomes seen from one side: wins, ties within the judge's noise, losses."""

    wins: int = 0
    ties: int = 0
    losses: int = 0

    @property
    def comparisons(self) -> int:
        return self.wins + self.ties + self.losses

    def win_rate(self) -> Interval | None:
        """(wins + ties / 2) / comparisons with its 95% interval; None without comparisons."""
        return win_rate(self.wins, self.ties, self.losses)

    def plus(self, won: bool | None) -> Record:
        """This record and one more outcome: a win (True), a loss (False) or a tie (None)."""
        if won is None:
            return Record(self.wins, self.ties + 1, self.losses)
        return Record(self.wins + won, self.ties, self.losses + (not won))


@dataclass(frozen=True)
class Standing:
    """One contestant's place: its Bradley–Terry strength and its win rate, each with a 95% interval
    (None where there is none: a single case, a fit that failed on some resample), and its outcomes."""

    rank: int
    name: str
    strength: float  #: Bradley–Terry log-strength, mean 0 over the contestants
    strength_low: float | None
    strength_high: float | None
    win_rate: float  #: (wins + ties / 2) / comparisons
    win_rate_low: float
    win_rate_high: float
    wins: int
    ties: int
    losses: int
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


def records(names: Sequence[str], outcomes: Iterable[Outcome]) -> dict[str, Record]:
    """Each contestant's wins, ties and losses over every outcome it was in."""
    found = dict.fromkeys(names, Record())
    for a, b, winner in outcomes:
        if a not in found or b not in found or a == b or winner not in (a, b, None):
            raise ValueError(f"outcome ({a!r}, {b!r}, {winner!r}) does not name two of {list(names)} and a winner")
        found[a] = found[a].plus(None if winner is None else winner == a)
        found[b] = found[b].plus(None if winner is None else winner == b)
    return found


def head_to_head(outcomes: Iterable[Outcome]) -> dict[tuple[str, str], Record]:
    """{(a, b): ``a``'s record against ``b``} for each pair as the outcomes name it first."""
    found: dict[tuple[str, str], Record] = {}
    for a, b, winner in outcomes:
        key, side = ((a, b), a) if (b, a) not in found else ((b, a), b)
        found[key] = found.get(key, Record()).plus(None if winner is None else winner == side)
    return found


def better_side(record: Record) -> Literal["first", "second"] | None:
    """Which side of a head-to-head record is significantly better: the first (whose record it is)
    when its win rate's interval lies above 0.5, the second when below; None: no significant difference."""
    rate = record.win_rate()
    if rate is None or not rate.excludes(0.5):
        return None
    return "first" if rate.low > 0.5 else "second"


def bradley_terry(names: Sequence[str], comparisons: Iterable[Comparison], smoothing: float = 0.0) -> dict[str, float]:
    """The Bradley–Terry log-strengths (mean 0) that best explain the comparisons.

    Raises ``ValueError`` when the contestants fall into groups never compared with
    each other, or when the maximum does not exist (see the module) and
    ``smoothing`` is 0.
    """
    strengths = _fit(_matrix(names, soft_wins(names, comparisons)), smoothing)
    return {n: float(s) for n, s in zip(names, strengths, strict=True)}


def rank(names: Sequence[str], cases: Sequence[Sequence[Comparison]], outcomes: Iterable[Outcome],
         resamples: int = RESAMPLES) -> Ranking:
    """The contestants best first by Bradley–Terry strength (ties: by name), with win rates.

    ``cases`` are the comparisons case by case, the unit the strengths' bootstrap resamples.
    Smoothing (:data:`FALLBACK_SMOOTHING`) is used only when the plain fit has no maximum,
    and recorded.
    """
    matrices = [_matrix(names, soft_wins(names, case)) for case in cases]
    total = sum(matrices[1:], matrices[0]) if matrices else _matrix(names, {})
    smoothing = 0.0 if _strongly_connected(total) else FALLBACK_SMOOTHING
    strengths = dict(zip(names, _fit(total, smoothing), strict=True))
    intervals = _strength_intervals(matrices, resamples)
    seen = records(names, outcomes)
    order = sorted(names, key=lambda n: (-strengths[n], n))
    standings = []
    for place, name in enumerate(order, start=1):
        i = names.index(name)
        rate = seen[name].win_rate() or Interval(0.5, 0.5, 0.5)
        low, high = intervals[i] if intervals else (None, None)
        standings.append(Standing(
            rank=place, name=name, strength=float(strengths[name]), strength_low=low, strength_high=high,
            win_rate=rate.estimate, win_rate_low=rate.low, win_rate_high=rate.high,
            wins=seen[name].wins, ties=seen[name].ties, losses=seen[name].losses, comparisons=seen[name].comparisons,
        ))
    return Ranking(tuple(standings), smoothing)


def win_probability(strength_a: float, strength_b: float) -> float:
    """P(a beats b) under Bradley–Terry: σ(s_a − s_b)."""
    return 1.0 / (1.0 + math.exp(strength_b - strength_a))


# -- the fit, on a matrix of soft wins (row over column) -------------------------------------


def _matrix(names: Sequence[str], wins: dict[tuple[str, str], float]) -> np.ndarray:
    import numpy as np  # lazily, as scipy: importing localeval must not load them

    index = {n: i for i, n in enumerate(names)}
    matrix = np.zeros((len(names), len(names)))
    for (a, b), w in wins.items():
        matrix[index[a], index[b]] += w
    return matrix


def _fit(wins: np.ndarray, smoothing: float) -> np.ndarray:
    """The strengths (mean 0) maximizing the likelihood of ``wins``, ``smoothing`` added to each compared pair."""
    compared = (wins + wins.T) > 0.0
    wins = wins + smoothing * compared
    _check_identifiable(wins, compared)
    strengths: np.ndarray = _newton(wins[None])[0]
    if not all(math.isfinite(s) for s in strengths):
        raise ValueError("the Bradley–Terry fit did not converge")
    return strengths


def _newton(wins: np.ndarray, steps: int = 100) -> np.ndarray:
    """The maximum-likelihood strengths (mean 0) of each matrix of ``wins`` (``fits × n × n``, each
    one identifiable), all at once; a row that did not converge is NaN.

    The maximum is where the gradient vanishes: observed wins = expected wins for every contestant.
    Newton's method with the exact Hessian finds it to rounding (the log-likelihood is concave), a
    step capped at 1 so a far start cannot overshoot; the first strength is pinned at 0 meanwhile.
    Batched, so the bootstrap's thousands of refits are a few array operations, not a loop.
    """
    import numpy as np  # lazily, as scipy: importing localeval must not load them

    fits, size, _ = wins.shape
    strengths: np.ndarray = np.zeros((fits, size))
    both = wins + wins.transpose(0, 2, 1)
    diagonal = np.arange(size)
    tolerance = 1e-9 * np.maximum(1.0, wins.sum(axis=(1, 2)))
    for _ in range(steps if size > 1 else 0):
        beats, gradient = _gradient(wins, strengths)
        if np.all(np.abs(gradient).max(axis=1) < tolerance):
            break
        curve = both * beats * (1.0 - beats)
        hessian = -curve  # of minus the log-likelihood: positive definite on the free strengths
        hessian[:, diagonal, diagonal] += curve.sum(axis=2)
        step = np.linalg.solve(hessian[:, 1:, 1:], gradient[:, 1:, None])[..., 0]
        step /= np.maximum(1.0, np.abs(step).max(axis=1, keepdims=True))
        strengths[:, 1:] += step
    _, gradient = _gradient(wins, strengths)
    strengths[np.abs(gradient).max(axis=1) >= tolerance] = np.nan
    strengths -= strengths.mean(axis=1, keepdims=True)
    return strengths


def _gradient(wins: np.ndarray, strengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(i beats j) at ``strengths``, and the log-likelihood's gradient: soft wins minus expected wins."""
    import numpy as np

    beats: np.ndarray = 1.0 / (1.0 + np.exp(strengths[:, None, :] - strengths[:, :, None]))
    gradient: np.ndarray = (wins * (1.0 - beats)).sum(axis=2) - (wins.transpose(0, 2, 1) * beats).sum(axis=2)
    return beats, gradient


def _strength_intervals(matrices: Sequence[np.ndarray], resamples: int) -> list[tuple[float, float]] | None:
    """Each strength's bootstrap interval over the cases; None with fewer than two cases, or where a
    resample could not be fitted (its contestants never compared with each other)."""
    import numpy as np

    if len(matrices) < 2:
        return None
    units, size = len(matrices), len(matrices[0])
    stack = np.stack(matrices).reshape(units, size * size)

    def refit(rows: np.ndarray) -> np.ndarray:
        counts = np.bincount((rows + units * np.arange(len(rows))[:, None]).ravel(), minlength=len(rows) * units)
        totals = (counts.reshape(len(rows), units) @ stack).reshape(len(rows), size, size)
        found = np.full((len(rows), size), np.nan)
        compared = (totals + totals.transpose(0, 2, 1)) > 0.0
        fitted = _connected(compared)  # the others cannot be fitted: NaN, and so no interval
        smoothing = np.where(_strongly_connected(totals), 0.0, FALLBACK_SMOOTHING)[:, None, None]
        if fitted.any():
            found[fitted] = _newton((totals + smoothing * compared)[fitted])
        return found.T

    found = resampled_intervals(units, refit, resamples)
    if found is None or not all(math.isfinite(v) for pair in found for v in pair):
        return None
    return found


def _check_identifiable(wins: np.ndarray, compared: np.ndarray) -> None:
    if not _connected(compared):
        raise ValueError("some contestants were never compared, directly or through others, with the rest")
    if not _strongly_connected(wins):
        raise ValueError(
            "a group of contestants won every comparison against the others: the maximum-likelihood "
            "strengths are infinite; give a smoothing"
        )


def _strongly_connected(wins: np.ndarray) -> Any:
    """Whether every contestant reaches every other along edges a→b where a won some mass from b
    (per matrix, for a stack of them)."""
    return _connected(wins > 0.0)


def _connected(edges: np.ndarray) -> Any:
    """Whether every node reaches every other along ``edges`` (``… × n × n``, boolean): the
    transitive closure by squaring the reach matrix, ⌈log2 n⌉ times."""
    import numpy as np

    size = edges.shape[-1]
    reach = edges | np.eye(size, dtype=bool)
    for _ in range(max(1, math.ceil(math.log2(max(size, 2))))):
        reach = (reach.astype(np.int64) @ reach.astype(np.int64)) > 0
    return reach.all(axis=(-2, -1))

"""Pure arithmetic on probability distributions. No I/O, no model."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict


class CandidateDistribution(BaseModel):
    """The probability of each candidate continuation at one position.

    ``probabilities`` are renormalized over the candidates (they sum to 1);
    ``covered_mass`` is how much of the model's raw probability the candidates
    had before renormalizing — a low value means the model wanted to write
    something else there, and the renormalized numbers mean little.
    """

    # A candidate outside a server's top-k has log-probability -inf: keep it -inf
    # through JSON (as "-Infinity"), so cached and reported distributions round-trip.
    model_config = ConfigDict(frozen=True, ser_json_inf_nan="strings")

    probabilities: dict[str, float]
    logprobs: dict[str, float]
    covered_mass: float

    def expected_value(self, values: Mapping[str, float]) -> float:
        """Σ p(c)·v(c) over the candidates."""
        return expected_value(self.probabilities, values)

    def most_likely(self) -> str:
        """The candidate with the highest probability (the first one on a tie)."""
        return max(self.probabilities, key=lambda c: self.probabilities[c])


def log_softmax(logits: Sequence[float]) -> list[float]:
    """Log-probabilities from raw logits, computed stably."""
    if not logits:
        raise ValueError("log_softmax of an empty sequence")
    top = max(logits)
    log_total = top + math.log(sum(math.exp(x - top) for x in logits))
    return [x - log_total for x in logits]


def renormalize(logprobs: Mapping[str, float]) -> CandidateDistribution:
    """Renormalize candidates' raw log-probabilities so they sum to 1.

    Works in log space so candidates far in the tail (log p ≈ -100) still get
    an exact relative weight instead of underflowing to 0/0.
    """
    if not logprobs:
        raise ValueError("renormalize needs at least one candidate")
    values = list(logprobs.values())
    if any(math.isnan(v) or v > 1e-6 for v in values):
        raise ValueError(f"log-probabilities must be finite and <= 0, got {values}")
    top = max(values)
    if top == -math.inf:
        raise ValueError("every candidate has probability 0")
    log_covered = top + math.log(sum(math.exp(v - top) for v in values))
    return CandidateDistribution(
        probabilities={c: math.exp(v - log_covered) for c, v in logprobs.items()},
        logprobs={c: float(v) for c, v in logprobs.items()},
        covered_mass=min(1.0, math.exp(log_covered)),
    )


def exclusive_logprobs(
    sequence_logprobs: Mapping[str, float], tokens: Mapping[str, Sequence[int]]
) -> dict[str, float]:
    """Each candidate's probability of being the *whole* answer, when candidates nest.

    ``sequence_logprobs[c]`` is log P(the continuation starts with c's tokens). When
    one candidate's tokens begin another's ("1" and "10" on a tokenizer that splits
    "10" into "1", "0"), P("1") includes P("10"). The exclusive probability removes
    the longer candidates that the shorter one is the nearest candidate prefix of:

        P_excl(c) = P(c) · (1 − Σ_d P(d) / P(c)),  d ranging over those candidates,

    computed in log space. Candidates that nest nothing keep their value, and the
    exclusive probabilities of all candidates add up to the mass of the outermost ones.
    """
    parents = {c: _nearest_prefix(c, tokens) for c in tokens}
    result = {}
    for c, log_p in sequence_logprobs.items():
        inside = sum(math.exp(sequence_logprobs[d] - log_p) for d, p in parents.items() if p == c)
        result[c] = log_p + math.log1p(-inside) if inside < 1.0 else -math.inf
    return result


def _nearest_prefix(candidate: str, tokens: Mapping[str, Sequence[int]]) -> str | None:
    mine = list(tokens[candidate])
    best: str | None = None
    for other, theirs in tokens.items():
        n = len(theirs)
        if other != candidate and n < len(mine) and mine[:n] == list(theirs):
            if best is None or n > len(tokens[best]):
                best = other
    return best


def expected_value(probabilities: Mapping[str, float], values: Mapping[str, float]) -> float:
    """Σ p(c)·v(c); every candidate with a probability must have a value."""
    missing = set(probabilities) - set(values)
    if missing:
        raise ValueError(f"no value for candidates {sorted(missing)}")
    return sum(p * values[c] for c, p in probabilities.items())


def scale_to_unit(value: float, low: float, high: float) -> float:
    """Map a value on [low, high] linearly onto [0, 1]."""
    if high <= low:
        raise ValueError(f"empty range [{low}, {high}]")
    if not low - 1e-9 <= value <= high + 1e-9:
        raise ValueError(f"{value} is outside [{low}, {high}]")
    return min(1.0, max(0.0, (value - low) / (high - low)))

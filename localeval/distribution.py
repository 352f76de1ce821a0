"""Pure arithmetic on probability distributions. No I/O, no model."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict


class CandidateDistribution(BaseModel):
    """The probability of each candidate continuation at one position.

    ``probabilities`` are renormalized over the candidates (they sum to 1);
    ``covered_mass`` is how much of the model's raw probability the candidates
    had before renormalizing — a low value means the model wanted to write
    something else there, and the renormalized numbers mean little.

    ``whole_answers`` says what each candidate's probability is. True: that the
    candidate is the whole answer, P(c) · P(the answer ends | c) (see
    :func:`whole_answer_logprobs`); the in-process backend reads the end factor
    from the vocabulary. False: that the reply *starts with* it, all the backend
    could see (a server's top log-probabilities at one position give nothing
    after the candidate), so "1" on a 0-10 range also holds "10"-"19".
    """

    # A candidate outside a server's top-k has log-probability -inf: keep it -inf
    # through JSON (as "-Infinity"), so cached and reported distributions round-trip.
    model_config = ConfigDict(frozen=True, ser_json_inf_nan="strings")

    probabilities: dict[str, float]
    logprobs: dict[str, float]
    covered_mass: float
    whole_answers: bool = False

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


def renormalize(logprobs: Mapping[str, float], *, whole_answers: bool = False) -> CandidateDistribution:
    """Renormalize candidates' raw log-probabilities so they sum to 1.

    Works in log space so candidates far in the tail (log p ≈ -100) still get
    an exact relative weight instead of underflowing to 0/0. ``whole_answers``
    records what the log-probabilities are (see :class:`CandidateDistribution`).
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
        whole_answers=whole_answers,
    )


def log_sum_exp(logprobs: Iterable[float]) -> float:
    """log Σ exp(x), computed stably; -inf for no terms or only -inf terms.

    Probabilities of disjoint events add: two tokens that spell the same answer
    ("3" and " 3"), or every token after which a number has ended. Adding them in
    log space keeps tail values (log p ≈ -1000) exact instead of underflowing to 0.
    """
    values = list(logprobs)
    top = max(values, default=-math.inf)
    if top == -math.inf:
        return -math.inf
    return top + math.log(sum(math.exp(v - top) for v in values))


def whole_answer_logprobs(
    sequence_logprobs: Mapping[str, float], end_logprobs: Mapping[str, float]
) -> dict[str, float]:
    """Each candidate's log-probability of being the *whole* answer.

    ``sequence_logprobs[c]`` is log P(the reply starts with c); ``end_logprobs[c]``
    is log P(the answer ends | c): the mass of the next tokens that do not carry it
    on. P(c is the answer) = P(c) · P(end | c), which is why no score absorbs the
    longer answers that begin with it: on a 0-10 range P("1") also holds "10",
    "15", "1.5" and "19", candidates or not, and only the end factor removes
    them all. Candidates that begin one another ("1" and "10") need nothing more:
    "10" is among the continuations of "1", so its mass is not in "1"'s.
    """
    if set(sequence_logprobs) != set(end_logprobs):
        raise ValueError(
            f"end log-probabilities are for {sorted(end_logprobs)}, the candidates are {sorted(sequence_logprobs)}"
        )
    if any(math.isnan(v) or v > 1e-6 for v in end_logprobs.values()):
        raise ValueError(f"end log-probabilities must be <= 0, got {dict(end_logprobs)}")
    return {c: log_p + min(end_logprobs[c], 0.0) for c, log_p in sequence_logprobs.items()}


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

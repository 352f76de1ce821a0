"""Verdicts on a list of items, as the judge wrote them or weighted by its probabilities. Pure: no I/O.

A verdict-list metric (:mod:`localeval.metrics.items`) asks the judge for one verdict per item,
each one of the metric's choices, in a schema-constrained JSON reply. Read as written (the
default), each verdict counts 1 for the choice the judge wrote, its most likely one: a
one-sentence answer scores exactly 0 or 1, and two answers a judge sees as nearly alike tie.
Read weighted (``verdict_reading = "weighted"``), each verdict is the judge's probability of each
choice at the place in its reply where it wrote that verdict, and the count of a choice is the
sum of its probabilities, Σ P(c): the expected count.

The formulas take a sequence of :data:`ItemVerdict`, a written choice or a weighted one, and
count with :func:`weight`; a written verdict weighs 1 or 0 (whole numbers, so written counts and
scores are exactly those of counting the verdicts). :class:`Verdicts` carries both readings of one
reply: the written verdicts (the evidence, and what the reason prompt is told) and what the
formulas count.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from localeval.distribution import CandidateDistribution

#: How a metric reads the judge's verdicts: the choices it wrote, or its probabilities of each.
VerdictReading = Literal["written", "weighted"]
#: A verdict as the formulas count it: the choice written, or the judge's probability of each choice.
ItemVerdict = str | Mapping[str, float]


def weight(verdict: ItemVerdict, choice: str) -> float:
    """How much ``verdict`` counts for ``choice``: 1 or 0 written (an int), P(choice) weighted."""
    if isinstance(verdict, str):
        return int(verdict == choice)
    return verdict.get(choice, 0.0)


def tally(verdicts: Sequence[ItemVerdict], choices: Sequence[str]) -> dict[str, float]:
    """How many of each verdict, every choice listed (zeros included): Σ of its weights, whole numbers
    for written verdicts."""
    return {c: sum(weight(v, c) for v in verdicts) for c in choices}


def share(verdicts: Sequence[ItemVerdict], counted: str, empty: float) -> float:
    """The share of ``verdicts`` that are ``counted`` (weighted: its expected share); ``empty`` when there are none."""
    return sum(weight(v, counted) for v in verdicts) / len(verdicts) if verdicts else empty


def format_count(count: float) -> str:
    """A count as a summary shows it: 3 (written), 2.74 (weighted: an expected count)."""
    return str(count) if isinstance(count, int) else f"{count:.2f}"


@dataclass(frozen=True)
class Verdicts:
    """The judge's verdicts on the items of one reply, in order.

    ``written``: the choice the judge wrote for each. ``weights``: what the formulas count for each,
    the written choice itself, or (weighted) the judge's probability of each choice there, summing
    to 1. ``reading``: how they were read, as ``details["verdict_reading"]`` records it ("written",
    "weighted", or a fallback to the written ones and why). ``covered``: weighted, the probability
    the choices had at each verdict's position before renormalizing.
    """

    written: tuple[str, ...]
    weights: tuple[ItemVerdict, ...]
    reading: str = "written"
    covered: tuple[float, ...] = ()

    @classmethod
    def as_written(cls, written: Sequence[str], reading: str = "written") -> Verdicts:
        """The verdicts counted as written; ``reading`` says why when weighted ones were asked for."""
        return cls(tuple(written), tuple(written), reading)

    @classmethod
    def from_distributions(cls, written: Sequence[str], distributions: Sequence[CandidateDistribution]) -> Verdicts:
        """The verdicts counted by the judge's distribution at each one (renormalized over the choices)."""
        if len(written) != len(distributions):
            raise ValueError(f"{len(written)} verdicts, {len(distributions)} distributions")
        return cls(tuple(written), tuple(dict(d.probabilities) for d in distributions), "weighted",
                   tuple(d.covered_mass for d in distributions))

    @classmethod
    def joined(cls, parts: Sequence[Verdicts]) -> Verdicts:
        """Verdicts read one request at a time (one per exchange), as one list; the reading of the first."""
        return cls(tuple(v for p in parts for v in p.written), tuple(w for p in parts for w in p.weights),
                   parts[0].reading if parts else "written", tuple(c for p in parts for c in p.covered))

    @property
    def weighted(self) -> bool:
        """Whether they were read weighted (not as written, nor a fallback to that)."""
        return self.reading == "weighted"

    def weight_of(self, choice: str) -> list[float]:
        """How much each verdict counts for ``choice``: 1 or 0 written, P(choice) weighted."""
        return [weight(w, choice) for w in self.weights]

    def counts(self, choices: Sequence[str]) -> dict[str, float]:
        """How many of each choice: whole numbers written, expected counts weighted (:func:`tally`)."""
        return tally(self.weights, choices)

    def evidence(self) -> dict[str, Any]:
        """What a result's details add for this reading: nothing when read as written (the default);
        else ``verdict_reading``, and weighted, each verdict's ``distributions`` (probabilities and covered mass)."""
        if self.reading == "written":
            return {}
        found: dict[str, Any] = {"verdict_reading": self.reading}
        if self.covered:
            found["distributions"] = [{"probabilities": dict(w), "covered_mass": c}
                                      for w, c in zip(self.weights, self.covered) if not isinstance(w, str)]
        return found


# -- where each verdict is in the reply -------------------------------------------------

_DECODER = json.JSONDecoder()


def string_value_offsets(text: str) -> list[int]:
    """The offset of the opening quote of every string *value* of the JSON ``text`` (object keys
    left out), in the order written. ``ValueError`` when ``text`` is not one JSON value."""
    found: list[int] = []
    end = _value(text, _skip(text, 0), found)
    if _skip(text, end) != len(text):
        raise ValueError(f"text after the JSON value at char {end}")
    return found


def _value(text: str, at: int, found: list[int]) -> int:
    """Read the value starting at ``at``; note its string values' offsets; return where it ends."""
    opening = text[at:at + 1]
    if opening == '"':
        found.append(at)
        return _string(text, at)
    if opening in ("{", "["):
        closing = "}" if opening == "{" else "]"
        at = _skip(text, at + 1)
        if text[at:at + 1] == closing:
            return at + 1
        while True:
            if opening == "{":
                at = _skip(text, _string(text, at))
                _expect(text, at, ":")
                at = _skip(text, at + 1)
            at = _skip(text, _value(text, at, found))
            if text[at:at + 1] == closing:
                return at + 1
            _expect(text, at, ",")
            at = _skip(text, at + 1)
    _, end = _DECODER.raw_decode(text, at)  # a number, true, false or null
    return end


def _string(text: str, at: int) -> int:
    _expect(text, at, '"')
    return _DECODER.raw_decode(text, at)[1]


def _skip(text: str, at: int) -> int:
    while text[at:at + 1] in (" ", "\t", "\n", "\r"):
        at += 1
    return at


def _expect(text: str, at: int, what: str) -> None:
    if text[at:at + 1] != what:
        raise ValueError(f"expected {what!r} at char {at}")


def verdict_prefills(text: str, written: Sequence[str]) -> list[str]:
    """For each verdict of the JSON reply ``text``, the reply up to and with its opening quote: where
    the judge chose it. The reply's string values must be exactly the ``written`` verdicts, in order
    (a verdicts schema's reply: ``{"verdicts": [...]}`` or ``{"verdict": ...}``); else ``ValueError``."""
    offsets = string_value_offsets(text)
    values = [_DECODER.raw_decode(text, o)[0] for o in offsets]
    if values != list(written):
        raise ValueError(f"the reply's strings {values} are not its verdicts {list(written)}")
    return [text[:o + 1] for o in offsets]

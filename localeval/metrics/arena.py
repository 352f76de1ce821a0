"""The arena: which of several outputs for the same input is better, judged pairwise, in both orders.

A case names its outputs in ``contestants`` ({name: output}, at least two). Every
pair is shown to the judge twice, once in each order (A = x, B = y, then A = y,
B = x), against the criteria (or evaluation steps, generated once per run from
the criteria as G-Eval does, and a rubric). The preference for x over y is the
average of the two orders: P(A) when x is shown first and P(B) when it is shown
second. The mean P(first) over both orders is the position bias, reported, not
hidden: 0.5 is a judge that does not care where an output stands.

Scoring methods, recorded in every result:

* ``logprobs`` (default): P(A) against P(B) at the verdict position (after
  ``The better output is Output``: the next token is `` A`` or `` B``), from one
  forward pass, renormalized over the two letters;
  a covered mass below ``min_covered_mass`` is an error.
* ``sampling``: the share of ``samples`` schema-constrained verdicts that say A
  (seeds ``seed``, ``seed + 1``, …, so cacheable); fewer than half valid is an
  error. The fallback for backends without log-probabilities, taken only when
  ``allow_fallback`` is set, and recorded.

Each pair's outcome on a case is one of three: one output preferred, the other,
or a *tie within the judge's noise*. The two orders are the one replicate a case
has: they read the same preference with only the positions changed, so how far
apart they are is the judge's noise on this case. A preference whose side that
spread can flip (0.5 lies between the two orders' readings: they disagree, or one
is indifferent) is a tie; equivalently, a preference no farther from 0.5 than the
case's own position bias. Sampled verdicts carry sampling noise too: there, the
verdicts for one output over both orders must also be a share whose Wilson
interval excludes 0.5 (:func:`pair_winner`).

The score, a number in [0, 1] as every metric's, is the preference for the
*first-named* contestant: against the other one, or, with more, the mean of its
preferences against each of the others. The case's outcome (``details["outcome"]``,
with ``preferred`` naming who) is the first-named preferred (to every other), some
other preferred to it, or a tie. A tie passes, as it is no evidence against the
first-named; otherwise the result passes at ``threshold`` (0.5: the first-named was
preferred). Strict mode: 1 only when the first-named is preferred beyond the noise.
``details`` has every pair with both orders' P(first), the distributions, its
outcome, and, for three or more, the case's own Bradley–Terry ranking. A run ranks
the contestants over all its cases, with intervals, and gives each pair a verdict
(:meth:`Arena.summarize`).
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import Field, model_validator

from localeval.backends.base import Backend, JsonRequest
from localeval.data.case import CASE_FIELDS, TestCase
from localeval.data.results import MetricResult
from localeval.errors import PromptError, SchemaViolation, TruncatedOutput
from localeval.metrics.base import Verdict, field_text
from localeval.metrics.criteria import CriteriaMetric, field_label, read_distribution, sampled_mean
from localeval.metrics.judged import Exchange, Judgement
from localeval.metrics.ranking import Comparison, Outcome, Record, better_side, rank
from localeval.prompts import RenderedPrompt, load_prompt
from localeval.stats import wilson

ArenaScoring = Literal["logprobs", "sampling"]
LETTERS = ("A", "B")
#: What the judge's distribution is read over: the letters as the next token after the prefill
#: ("The better output is Output"), space included, as a tokenizer writes a word after a word.
CANDIDATES = {" A": "A", " B": "B"}
#: Fields the judge may see beside the outputs; the outputs themselves are the contestants.
NOT_PARAMETERS = ("actual_output", "contestants")
#: How an outcome without a winner reads, everywhere: the report, the terminal, the JSON.
TIE = "tie within the judge's noise"
#: How a pair's run-level verdict reads when neither side is significantly better.
NO_DIFFERENCE = "no significant difference"


class Arena(CriteriaMetric):
    """Compare the outputs of a case's ``contestants`` pairwise, in both orders, with a local judge.

    The options it shares with G-Eval (criteria, steps, scoring, sampling) are
    :class:`~localeval.metrics.criteria.CriteriaMetric`'s; it has no ``top`` method.
    """

    kind = "arena"
    prompt_folder = "arena"

    rubric: tuple[str, ...] = Field((), description="What a better output has, one point each.")
    evaluation_params: tuple[str, ...] = Field(
        ("input",), description="The test-case fields the judge sees beside the two outputs."
    )
    scoring: ArenaScoring = Field(
        "logprobs", description="logprobs: P(A) against P(B) at the verdict; sampling: the share of sampled A verdicts."
    )
    compare_prompt: Path | None = Field(None, description="Your own prompt file for the comparison.")

    @classmethod
    def strict_options(cls) -> dict[str, Any]:
        """Strict mode scores 1 only when the first-named is preferred beyond the judge's noise, and passes only then."""
        return {"threshold": 1.0}

    @model_validator(mode="after")
    def _check(self) -> Arena:
        for option, names in (("evaluation_params", self.evaluation_params), ("field_labels", self.field_labels)):
            unknown = [p for p in names if p not in CASE_FIELDS or p in NOT_PARAMETERS]
            if unknown:
                raise ValueError(f"{option} must name test-case fields other than the outputs, got {unknown}")
        return self

    def required_fields(self) -> tuple[str, ...]:
        return ("contestants", *self.evaluation_params)

    def shown_labels(self) -> list[str]:
        """What the judge sees, as the steps prompt names it: the fields, then the two outputs."""
        return [*self._labels(), "Output A", "Output B"]

    def prompt_start(self, case: TestCase) -> str:
        """The first comparison's prompt: the instructions, then the case."""
        names = list(case.contestants or {})
        if len(names) < 2:
            return super().prompt_start(case)
        try:
            prompt = self._prompt(case, names[0], names[1])
        except PromptError:
            return super().prompt_start(case)  # the run reports it when it measures the case
        return "\n".join(m.content for m in prompt.messages)

    def final_score(self, raw: float) -> float:
        """The preference itself: strict mode scores the outcome, not the number (:meth:`verdict`)."""
        return raw

    def verdict(self, case: Any, judge: Backend | None) -> Verdict:
        """The judged preference, passed by the case's outcome: a tie passes, otherwise the threshold
        decides; in strict mode the score is 1.0 only when the first-named was preferred."""
        found = super().verdict(case, judge)
        first, preferred = found.details["contestants"][0], found.details["preferred"]
        if self.strict_mode:
            won = float(preferred == [first])
            return replace(found, score=won, passed=self.passes(won))
        return replace(found, passed=True if not preferred else self.passes(found.score))

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        """Every pair in both orders; the score is the first-named contestant's mean preference."""
        arena = self.prepare(judge)
        method, fallback = self.scoring_on(judge)
        contestants = list(case.contestants or {})
        pairs = [arena._pair(case, a, b, judge, cast(ArenaScoring, method))
                 for a, b in itertools.combinations(contestants, 2)]
        first = contestants[0]
        score = statistics.fmean(p["preference"] for p in pairs if p["a"] == first)
        preferred = _preferred(first, [p["preferred"] for p in pairs if p["a"] == first])
        details: dict[str, Any] = {
            "method": method,
            **({"fallback": fallback} if fallback else {}),
            "contestants": contestants,
            "outcome": outcome_text(first, preferred, len(contestants)),
            "preferred": preferred,
            "pairs": pairs,
            "mean_p_first": statistics.fmean(p for pair in pairs for p in pair["p_first"]),
            "evaluation_steps": list(arena.evaluation_steps or ()),
            "steps_source": arena.steps_source,
        }
        if len(contestants) > 2:
            try:
                details.update(_ranking(contestants, [comparisons(details)], outcomes(details)))
            except ValueError as err:  # the preferences stand without it
                details["ranking_error"] = str(err)
        opening = pairs[0]  # the reason continues the first comparison: the first-named shown as A
        letter = "A" if opening["preference"] >= 0.5 else "B"  # the letter the judge's reply continues with
        return Judgement(
            score=score,
            summary=_summary(details["outcome"], pairs[0], details["mean_p_first"], len(contestants)),
            details=details,
            conversation=Exchange(arena._prompt(case, opening["a"], opening["b"]), f" {letter}"),
            reason_variables={"preferred": letter, "other": "B" if letter == "A" else "A"},
        )

    @classmethod
    def summarize(cls, results: list[MetricResult]) -> dict[str, Any]:
        """The run's arena: every pair's mean preference over the cases, and a Bradley–Terry ranking."""
        return arena_summary(results)

    # -- one pair ------------------------------------------------------------------------

    def _pair(self, case: TestCase, a: str, b: str, judge: Backend, method: ArenaScoring) -> dict[str, Any]:
        """``a`` against ``b``, shown in both orders; the preference for ``a`` averages them."""
        forward = self._verdict(self._prompt(case, a, b), judge, method)
        backward = self._verdict(self._prompt(case, b, a), judge, method)
        p_first = [forward["p_first"], backward["p_first"]]
        orders = [{"first": a, "second": b, **forward}, {"first": b, "second": a, **backward}]
        winner = pair_winner(a, b, p_first, orders)
        return {
            "a": a,
            "b": b,
            "p_first": p_first,
            "preference": (p_first[0] + 1.0 - p_first[1]) / 2,
            "preferred": winner,
            "outcome": TIE if winner is None else f"{winner} preferred",
            "orders": orders,
        }

    def _verdict(self, prompt: RenderedPrompt, judge: Backend, method: ArenaScoring) -> dict[str, Any]:
        """P(A) for one order, with its evidence: the distribution, or the samples."""
        if method == "sampling":
            return self._sample(prompt, judge)
        dist = read_distribution(judge, prompt, CANDIDATES, self.min_covered_mass, what="the letters A and B",
                                 position="verdict", prune_below=self.prune_below)
        probabilities = {CANDIDATES[c]: p for c, p in dist.probabilities.items()}
        return {"p_first": probabilities["A"], "distribution": probabilities, "covered_mass": dist.covered_mass}

    def _sample(self, prompt: RenderedPrompt, judge: Backend) -> dict[str, Any]:
        schema = {
            "type": "object",
            "properties": {"better": {"type": "string", "enum": list(LETTERS)}},
            "required": ["better"],
            "additionalProperties": False,
        }
        verdicts: list[str | None] = []
        for i in range(self.samples):
            request = JsonRequest(messages=prompt.messages, json_schema=schema, max_tokens=16,
                                  temperature=self.temperature, seed=self.seed + i)
            try:
                verdicts.append(str(judge.generate_json(request).value["better"]))
            except (SchemaViolation, TruncatedOutput):
                verdicts.append(None)
        p_first = sampled_mean([None if v is None else float(v == "A") for v in verdicts])
        return {"p_first": p_first, "samples": verdicts, "temperature": self.temperature}

    # -- prompts -------------------------------------------------------------------------

    def _prompt(self, case: TestCase, first: str, second: str) -> RenderedPrompt:
        outputs = case.contestants or {}
        return load_prompt("arena/compare", self.compare_prompt).render(
            fields={label: field_text(case.field_value(p)) for label, p in zip(self._labels(), self.evaluation_params)},
            criteria=self.criteria or "",
            steps=self.evaluation_steps or (),
            rubric=self.rubric,
            output_a=outputs[first],
            output_b=outputs[second],
        )

    def _labels(self) -> list[str]:
        return [field_label(p, self.field_labels) for p in self.evaluation_params]


def pair_winner(a: str, b: str, p_first: list[float], orders: list[dict[str, Any]]) -> str | None:
    """Who of ``a`` and ``b`` the judge preferred beyond its noise on this case; None: a tie.

    ``a``'s preference is read twice, shown first (``p_first[0]``) and second (``1 - p_first[1]``).
    When 0.5 lies between the two readings, where an output stood decided, not the outputs: a tie.
    Sampled verdicts (``samples`` in the orders) must also be, over both orders, a share for one
    side whose Wilson interval excludes 0.5.
    """
    readings = (p_first[0], 1.0 - p_first[1])
    if min(readings) <= 0.5 <= max(readings):
        return None
    sampled = [order.get("samples") for order in orders]
    if all(isinstance(samples, list) for samples in sampled):
        votes = [v for v in cast(list[str | None], sampled[0]) if v is not None]
        back = [v for v in cast(list[str | None], sampled[1]) if v is not None]
        share = wilson(votes.count("A") + back.count("B"), len(votes) + len(back))
        if share is None or not share.excludes(0.5):
            return None
    return a if readings[0] > 0.5 else b


def outcome_text(first: str, preferred: list[str], contestants: int) -> str:
    """A case's outcome in words: "x preferred", "y preferred" (to x, with three or more), or a tie."""
    if not preferred:
        return TIE
    if preferred == [first]:
        return f"{first} preferred" + (" to every other" if contestants > 2 else "")
    return f"{', '.join(preferred)} preferred" + (f" to {first}" if contestants > 2 else "")


def comparisons(details: dict[str, Any]) -> list[Comparison]:
    """The (a, b, preference for a) of every pair an arena result's ``details`` holds."""
    return [(p["a"], p["b"], float(p["preference"])) for p in details.get("pairs", [])]


def outcomes(details: dict[str, Any]) -> list[Outcome]:
    """The (a, b, who was preferred or None) of every pair an arena result's ``details`` holds."""
    return [(p["a"], p["b"], p.get("preferred")) for p in details.get("pairs", [])]


def arena_summary(results: list[MetricResult]) -> dict[str, Any]:
    """Over the scored results: each pair's mean preference, P(first), outcomes and verdict, and the
    ranking (Bradley–Terry strengths and win rates, with their intervals).

    A ranking that cannot be fitted (contestants never compared with the rest) is
    reported as ``ranking_error``; the pairs still are.
    """
    scored = [r for r in results if not r.errored and r.details.get("pairs")]
    names: list[str] = []
    for result in scored:
        names += [n for n in result.details["contestants"] if n not in names]
    if not scored:
        return {}
    pairs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for result in scored:
        for pair in result.details["pairs"]:
            pairs.setdefault((pair["a"], pair["b"]), []).append(pair)
    summary: dict[str, Any] = {
        "cases": len(scored),
        "first": names[0],
        "mean_p_first": statistics.fmean(p for r in scored for pair in r.details["pairs"] for p in pair["p_first"]),
        "pairs": [_pair_summary(a, b, found) for (a, b), found in pairs.items()],
    }
    try:
        summary.update(_ranking(names, [comparisons(r.details) for r in scored],
                                [o for r in scored for o in outcomes(r.details)]))
    except ValueError as err:
        summary["ranking_error"] = str(err)
    return summary


def better_than_first(summary: dict[str, Any]) -> list[str]:
    """The contestants a run's arena (:func:`arena_summary`) found significantly better than its first-named."""
    first = summary.get("first")
    return [p["better"] for p in summary.get("pairs", [])
            if first in (p["a"], p["b"]) and p.get("better") not in (None, first)]


def _pair_summary(a: str, b: str, found: list[dict[str, Any]]) -> dict[str, Any]:
    """One pair over the cases: mean preference and P(first), ``a``'s outcomes, its win rate and the verdict."""
    record = Record()
    for pair in found:
        winner = pair.get("preferred")
        record = record.plus(None if winner is None else winner == a)
    rate = record.win_rate()
    side = better_side(record)
    better = None if side is None else a if side == "first" else b
    return {
        "a": a, "b": b, "cases": len(found),
        "preference": statistics.fmean(p["preference"] for p in found),
        "p_first": [statistics.fmean(p["p_first"][0] for p in found), statistics.fmean(p["p_first"][1] for p in found)],
        "wins": record.wins, "ties": record.ties, "losses": record.losses,
        "win_rate": None if rate is None else rate.estimate,
        "win_rate_low": None if rate is None else rate.low,
        "win_rate_high": None if rate is None else rate.high,
        "better": better,
        "verdict": NO_DIFFERENCE if better is None else f"{better} better",
    }


def _ranking(names: list[str], cases: list[list[Comparison]], found: list[Outcome]) -> dict[str, Any]:
    ranking = rank(names, cases, found)
    return {"ranking": [asdict(s) for s in ranking.standings], "smoothing": ranking.smoothing}


def _preferred(first: str, winners: list[str | None]) -> list[str]:
    """Who a case prefers, as far as the first-named goes: [first] when it won every pair, else the
    contestants preferred to it (none: a tie)."""
    if all(w == first for w in winners):
        return [first]
    return [w for w in winners if w is not None and w != first]


def _summary(outcome: str, pair: dict[str, Any], mean_p_first: float, contestants: int) -> str:
    first, second = pair["p_first"]
    text = (
        f"{outcome}: preference for {pair['a']} over {pair['b']} {pair['preference']:.2f} "
        f"(P(first) {first:.2f} with {pair['a']} first, {second:.2f} with {pair['b']} first)"
    )
    if contestants > 2:
        text += f"; {contestants} contestants, mean P(first) {mean_p_first:.2f} over every pair"
    return text + "."

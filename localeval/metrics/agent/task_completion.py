"""Task completion: from the input, the tool calls and the output, did the agent do what it was asked?"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from localeval.backends.base import Backend, JsonRequest
from localeval.data.case import TestCase
from localeval.distribution import PRUNE_BELOW, scale_to_unit
from localeval.errors import BackendError
from localeval.metrics.agent.calls import MAX_OUTPUT_CHARS, call_views
from localeval.metrics.criteria import PruneBelow, read_distribution
from localeval.metrics.geval import most_likely_score
from localeval.metrics.judged import Exchange, JudgedMetric, Judgement, ask, format_score
from localeval.prompts import RenderedPrompt, load_prompt

#: The completion scale: 1 (not achieved at all) to 5 (fully achieved); each score is one token.
LOW, HIGH = 1, 5
SCORES = {str(s): float(s) for s in range(LOW, HIGH + 1)}
TASK_CHARS, OUTCOME_CHARS = 200, 300

OUTCOME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "minLength": 1, "maxLength": TASK_CHARS},
        "outcome": {"type": "string", "minLength": 1, "maxLength": OUTCOME_CHARS},
    },
    "required": ["task", "outcome"],
    "additionalProperties": False,
}
#: Room for the longest task and outcome at one token a character: a small model's digits and escapes
#: ("\u00d7") cost a token each or more, and a reply cut by the limit is an error, never parsed.
OUTCOME_TOKENS = 64 + TASK_CHARS + OUTCOME_CHARS
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "integer", "enum": list(range(LOW, HIGH + 1))}},
    "required": ["score"],
    "additionalProperties": False,
}

#: ``logprobs``: the expected score under the judge's distribution over 1-5; ``verdict``: the one score
#: it writes (schema-bounded JSON, greedy), for backends without log-probabilities.
Scoring = Literal["logprobs", "verdict"]


class TaskCompletion(JudgedMetric):
    """How completely the agent achieved the task it was given, judged from its whole trace.

    Two judge calls, one conversation. First the judge reads ``input``,
    ``tools_called`` (name, arguments, output cut to ``max_output_chars``; absent
    or empty: no calls) and ``actual_output`` and states, as JSON, the ``task``
    the user gave and the ``outcome`` the agent achieved (kept in details). Then,
    in a follow-up turn, it grades the outcome against the task from 1 (not
    achieved at all) to 5 (fully achieved):

    * ``scoring = "logprobs"`` (default): raw = Σ p(s)·s, the expected score
      under the judge's distribution over 1-5 right after ``Score: ``, read from
      log-probabilities and renormalized over the five scores (their covered mass
      is reported; below ``min_covered_mass`` is an error). A number from a
      distribution, not one sampled digit: a judge torn between 4 and 5 gives 4.5.
    * ``scoring = "verdict"``: raw = the single score the judge writes as
      schema-bounded JSON. The fallback for backends without log-probabilities,
      taken only with ``allow_fallback = true`` and recorded in details.

    Score = (raw − 1) / 4. ``strict_mode``: 1.0 only when raw > 4.5 (the judge
    puts the expected score nearer "fully achieved" than anything else), else
    0.0; threshold 1.0.
    """

    kind = "task_completion"
    prompt_folder = "task_completion"

    scoring: Scoring = "logprobs"
    allow_fallback: bool = Field(
        False, description="Use 'verdict' when the backend has no log-probabilities (recorded)."
    )
    min_covered_mass: float = Field(0.1, ge=0.0, le=1.0, description="Below this, a logprobs score is an error.")
    prune_below: PruneBelow = PRUNE_BELOW
    max_output_chars: int = Field(
        MAX_OUTPUT_CHARS, ge=0, description="The most characters of each tool's output the judge reads."
    )
    outcome_prompt: Path | None = Field(None, description="Your own prompt file for the task and outcome.")
    score_prompt: Path | None = Field(None, description="Your own prompt file for the score (a follow-up turn).")

    def required_fields(self) -> tuple[str, ...]:
        return ("input", "actual_output")

    def final_score(self, raw: float) -> float:
        """Raw (1-5) scaled to [0, 1]; strict mode: 1.0 only when raw > 4.5."""
        return float(raw > HIGH - 0.5) if self.strict_mode else scale_to_unit(raw, LOW, HIGH)

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        calls = call_views(list(case.tools_called or ()), self.max_output_chars)
        first = load_prompt(f"{self.prompt_folder}/outcome", self.outcome_prompt).render(
            input=case.input, calls=calls, actual_output=case.actual_output
        )
        stated = ask(judge, first, OUTCOME_SCHEMA, OUTCOME_TOKENS)
        task, outcome = str(stated.value["task"]).strip(), str(stated.value["outcome"]).strip()
        question = load_prompt(f"{self.prompt_folder}/score", self.score_prompt).render(low=LOW, high=HIGH)
        prompt = Exchange(first, stated.text).continued(question)
        method, fallback = self._method(judge)
        raw, evidence = self._distribution(judge, prompt) if method == "logprobs" else self._verdict(judge, prompt)
        return Judgement(
            score=raw,
            summary=f"Task: {task} Outcome: {outcome} Completion {format_score(raw)} on {LOW}-{HIGH}.",
            details={"task": task, "outcome": outcome, "method": method,
                     **({"fallback": fallback} if fallback else {}), "score_range": [LOW, HIGH], **evidence},
            conversation=Exchange(prompt, format_score(raw)),
            reason_variables={"low": LOW, "high": HIGH},
        )

    def _method(self, judge: Backend) -> tuple[Scoring, str | None]:
        if self.scoring == "verdict" or judge.capabilities.distribution:
            return self.scoring, None
        if not self.allow_fallback:
            raise BackendError(
                f"scoring 'logprobs' needs log-probabilities, which this backend ({judge.fingerprint.kind}) "
                "does not give; set scoring = 'verdict', or allow_fallback = true to fall back to it"
            )
        return "verdict", "logprobs -> verdict: the backend gives no log-probabilities"

    def _distribution(self, judge: Backend, prompt: RenderedPrompt) -> tuple[float, dict[str, Any]]:
        dist = read_distribution(judge, prompt, SCORES, self.min_covered_mass, what=f"the scores {LOW}-{HIGH}",
                                 position="score", prune_below=self.prune_below)
        raw = dist.expected_value(SCORES)
        return raw, {"expected_score": raw, "most_likely_score": most_likely_score(dist.probabilities, SCORES),
                     "distribution": dist.probabilities, "covered_mass": dist.covered_mass,
                     "unread_mass": dist.unread_mass}

    def _verdict(self, judge: Backend, prompt: RenderedPrompt) -> tuple[float, dict[str, Any]]:
        reply = judge.generate_json(JsonRequest(messages=prompt.messages, json_schema=VERDICT_SCHEMA, max_tokens=32))
        score = int(reply.value["score"])
        return float(score), {"verdict": score}

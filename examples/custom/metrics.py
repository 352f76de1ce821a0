"""Two user-defined metrics, loaded by eval.toml's `plugins = ["metrics.py"]`.

* ``token_f1`` — no model: the ROUGE-1-style F1 of the output's words against the
  expected output's, written as a Metric subclass.
* ``answers_the_question`` — an LLM metric written as a decorated function: it
  asks the judge a yes/no question through schema-constrained JSON, so a small
  model cannot answer anything but {"verdict": "yes"} or {"verdict": "no"}; the
  call goes through the run's cache like a built-in metric's.

Run: localeval run --config examples/custom/eval.toml
"""

from __future__ import annotations

import re
from collections import Counter

from localeval import JsonRequest, Message, Metric, TestCase, Verdict, metric, register_metric


@register_metric
class TokenF1(Metric):
    """Unigram F1 of actual_output against expected_output (case-folded words)."""

    kind = "token_f1"

    def required_fields(self) -> tuple[str, ...]:
        return ("actual_output", "expected_output")

    def verdict(self, case: TestCase, judge: object) -> Verdict:
        got, want = words(case.actual_output or ""), words(case.expected_output or "")
        overlap = sum((Counter(got) & Counter(want)).values())
        if overlap == 0:
            return Verdict(score=0.0, reason="no word in common with the expected output")
        precision, recall = overlap / len(got), overlap / len(want)
        f1 = 2 * precision * recall / (precision + recall)
        return Verdict(score=f1, reason=f"precision {precision:.2f}, recall {recall:.2f}",
                       details={"precision": precision, "recall": recall, "overlap": overlap})


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


VERDICT = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}


@metric("answers_the_question", required=("input", "actual_output"))
def answers_the_question(case: TestCase, judge, strict: bool = False) -> tuple[float, str]:
    """1 when the judge says the output answers the question asked, else 0."""
    question = (
        f"Question: {case.input}\nAnswer: {case.actual_output}\n\n"
        "Does the answer respond to the question (whether or not it is correct)? "
        'Reply in JSON: {"verdict": "yes"} or {"verdict": "no"}.'
    )
    if strict:
        question += " Say yes only if the answer is direct and complete."
    request = JsonRequest(messages=[Message(role="user", content=question)], json_schema=VERDICT, max_tokens=16)
    verdict = judge.generate_json(request).value["verdict"]
    return (1.0 if verdict == "yes" else 0.0), f"the judge says {verdict!r}"

"""prompt_alignment against a scripted judge: one verdict per instruction, the prompt, the score."""

from __future__ import annotations

from pathlib import Path

import pytest

from localeval.backends.base import JsonRequest
from localeval.config import RunConfig
from localeval.data.case import TestCase
from localeval.errors import ConfigError
from localeval.metrics import PromptAlignment, build_metric
from localeval.metrics.items import verdicts_schema, verdicts_tokens
from localeval.testing import ScriptedJudge

CASE = TestCase(input="What if these shoes don't fit?", actual_output="We offer a 30-day full refund at no extra cost.")
INSTRUCTIONS = ["Reply in all uppercase.", "Mention the refund period.", "End with a question."]


def test_each_instruction_gets_a_verdict_and_the_score_is_the_share_followed() -> None:
    judge = ScriptedJudge(json_values=[{"verdicts": ["no", "yes", "no"]}, {"reason": "Not uppercase, no question."}])
    result = PromptAlignment(instructions=INSTRUCTIONS).measure(CASE, judge)
    verdicts, reason = judge.requests
    assert isinstance(verdicts, JsonRequest) and isinstance(reason, JsonRequest)
    assert (verdicts.json_schema, verdicts.max_tokens) == (verdicts_schema(3, ["yes", "no"]), verdicts_tokens(3))
    assert verdicts.messages[-1].content.startswith(
        f"Input:\n{CASE.input}\n\nResponse:\n{CASE.actual_output}\n\nInstructions:\n"
        "1. Reply in all uppercase.\n2. Mention the refund period.\n3. End with a question.\n"
    )
    assert "Write exactly 3 verdicts." in verdicts.messages[-1].content
    assert reason.messages[-1].content.startswith(
        "Your verdicts, instruction by instruction: 1. no; 2. yes; 3. no.\n"
        "With them, the response's prompt alignment score is 0.33,"
    )
    assert (result.score, result.passed) == (pytest.approx(1 / 3, rel=1e-12), False)
    assert result.reason == "Not uppercase, no question."
    assert result.details == {
        "verdicts": [
            {"instruction": "Reply in all uppercase.", "verdict": "no"},
            {"instruction": "Mention the refund period.", "verdict": "yes"},
            {"instruction": "End with a question.", "verdict": "no"},
        ],
        "counts": {"yes": 1, "no": 2},
    }
    assert result.raw_score == pytest.approx(1 / 3, rel=1e-12)


def test_strict_mode_needs_every_instruction_followed() -> None:
    metric = PromptAlignment(instructions=INSTRUCTIONS[:2], strict_mode=True, include_reason=False)
    assert metric.threshold == 1.0
    assert metric.measure(CASE, ScriptedJudge([{"verdicts": ["yes", "no"]}])).score == 0.0
    assert metric.measure(CASE, ScriptedJudge([{"verdicts": ["yes", "yes"]}])).score == 1.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "prompt_alignment.instructions: Field required"),
        ({"instructions": []}, "prompt_alignment.instructions: List should have at least 1 item"),
        ({"instructions": ["Be brief.", " "]}, "prompt_alignment.instructions: an instruction is blank"),
        ({"instructions": ["Be brief.", "Be brief. "]}, "prompt_alignment.instructions: an instruction is listed twice"),
    ],
)
def test_instructions_are_checked_when_built(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_metric("prompt_alignment", options)


def test_instructions_come_from_the_config(tmp_path: Path) -> None:
    config = tmp_path / "eval.toml"
    config.write_text(
        '[[metrics]]\nmetric = "prompt_alignment"\ninstructions = ["Answer in French.", "Use one sentence."]\n'
    )
    [metric] = RunConfig.load(config).build_metrics()
    assert isinstance(metric, PromptAlignment)
    assert metric.instructions == ["Answer in French.", "Use one sentence."]

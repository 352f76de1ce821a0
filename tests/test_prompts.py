"""Prompt files: sections, the prefill, strict rendering, the shipped prompts, overrides."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from localeval.backends.base import Message
from localeval.errors import PromptError
from localeval.metrics.geval import MAX_STEPS
from localeval.prompts import PromptTemplate, load_prompt

# --- sections --------------------------------------------------------------------------


def test_sections_by_role() -> None:
    text = "[[system]]\nBe brief.\n[[user]]\nHello\n[[assistant]]\nHi!\n[[user]]\nAgain\n"
    template = PromptTemplate.from_text(text)
    assert template.sections == (
        ("system", "Be brief.\n", 2),
        ("user", "Hello\n", 4),
        ("assistant", "Hi!\n", 6),
        ("user", "Again\n", 8),
    )
    rendered = template.render()
    assert rendered.messages == (
        Message(role="system", content="Be brief."),
        Message(role="user", content="Hello"),
        Message(role="assistant", content="Hi!"),
        Message(role="user", content="Again"),
    )
    assert rendered.prefill == ""


def test_text_before_any_marker_is_a_user_message() -> None:
    template = PromptTemplate.from_text("Question first\n[[assistant]]\nAnswer: ")
    assert template.sections == (("user", "Question first\n", 1), ("assistant", "Answer: ", 3))
    rendered = template.render()
    assert rendered.messages == (Message(role="user", content="Question first"),)
    assert rendered.prefill == "Answer: "


def test_a_file_without_markers_is_one_user_message() -> None:
    rendered = PromptTemplate.from_text("Just {{ x }}.\n").render(x="this")
    assert rendered.messages == (Message(role="user", content="Just this."),)
    assert rendered.prefill == ""


def test_a_marker_must_be_alone_on_its_line() -> None:
    template = PromptTemplate.from_text("say [[system]]\nhere\n")
    assert template.sections == (("user", "say [[system]]\nhere\n", 1),)


def test_the_prefill_keeps_its_trailing_space() -> None:
    rendered = PromptTemplate.from_text("[[user]]\nGrade it.\n[[assistant]]\nScore: \n").render()
    assert rendered.prefill == "Score: "
    assert rendered.messages == (Message(role="user", content="Grade it."),)


def test_a_continued_chat_is_the_chat_its_reply_and_the_follow_up() -> None:
    first = PromptTemplate.from_text("[[system]]\nJudge.\n[[user]]\nCase\n[[assistant]]\nScore: ").render()
    follow_up = PromptTemplate.from_text("[[user]]\nWhy?\n[[assistant]]\n{").render()
    continued = first.continued("4", follow_up)
    assert continued.messages == (
        Message(role="system", content="Judge."),
        Message(role="user", content="Case"),
        Message(role="assistant", content="Score: 4"),  # the prefill and the reply, as the judge saw them
        Message(role="user", content="Why?"),
    )
    assert continued.prefill == "{"
    assert first.continued("4", follow_up).continued("}", follow_up).messages[4] == Message(
        role="assistant", content="{}"
    )


def test_an_empty_prompt_is_an_error() -> None:
    with pytest.raises(PromptError, match=r"^empty\.txt: the prompt is empty$"):
        PromptTemplate.from_text("  \n\n", "empty.txt")


def test_a_prefill_alone_is_an_error() -> None:
    with pytest.raises(PromptError, match=r"^p\.txt: the prompt has no message before the prefill$"):
        PromptTemplate.from_text("[[assistant]]\nScore: ", "p.txt").render()


# --- strict rendering ------------------------------------------------------------------


def test_a_missing_variable_names_the_file_and_the_variable(tmp_path: Path) -> None:
    path = tmp_path / "mine.txt"
    path.write_text("[[user]]\nCriteria: {{ criteria }}\nSteps: {{ steps }}\n", encoding="utf-8")
    template = PromptTemplate.from_file(path)
    with pytest.raises(PromptError) as info:
        template.render(criteria="be right")
    assert str(info.value) == f"{path}: 'steps' is undefined"


def test_a_missing_variable_is_an_error_even_in_a_condition() -> None:
    with pytest.raises(PromptError, match="'flag' is undefined"):
        PromptTemplate.from_text("{% if flag %}x{% endif %}y").render()


def test_a_syntax_error_is_a_prompt_error() -> None:
    template = PromptTemplate.from_text("[[user]]\nHello {{ name \n", "broken.txt")
    with pytest.raises(PromptError, match=r"^broken\.txt:\d+: "):
        template.render(name="x")


def test_a_syntax_error_names_the_line_of_the_file() -> None:
    text = "[[system]]\nBe fair.\n[[user]]\nline 4\nline 5\n{% if %}\n"
    with pytest.raises(PromptError, match=r"^f\.txt:6: "):
        PromptTemplate.from_text(text, "f.txt").render()


def test_values_are_not_html_escaped() -> None:
    rendered = PromptTemplate.from_text("{{ x }}").render(x="<b> & 'q'")
    assert rendered.messages[0].content == "<b> & 'q'"


def test_a_missing_file_is_a_prompt_error(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match="cannot read prompt"):
        PromptTemplate.from_file(tmp_path / "absent.txt")


# --- the shipped prompts ---------------------------------------------------------------


def test_the_shipped_score_prompt_renders_with_what_geval_passes() -> None:
    template = load_prompt("geval/score")
    rendered = template.render(
        fields={"Input": "What is 2+2?", "Actual Output": "4"},
        criteria="The answer is correct.",
        steps=("Read the input.", "Check the output."),
        rubric=[],
        parameters="Input and Actual Output",
        layout="case_first",
        low=1,
        high=5,
    )
    assert rendered.prefill == "Score: "
    assert [m.role for m in rendered.messages] == ["system", "user"]
    user = rendered.messages[1].content
    assert user.startswith("Input:\nWhat is 2+2?\n\nActual Output:\n4\n\n---\n")
    assert "Evaluation criteria:\nThe answer is correct.\n" in user
    assert "Evaluation steps:\n1. Read the input.\n2. Check the output.\n" in user
    assert "Rubric" not in user  # an empty rubric leaves no heading
    assert user.endswith(
        "grade the Input and Actual Output above on a scale from 1 (worst) to 5 (best). "
        "Reply with the score only."
    )


def test_the_score_prompt_puts_the_criteria_first_or_the_case_first() -> None:
    variables = {"fields": {"Source Document": "The doc.", "Summary": "The sum."}, "criteria": "Consistent.",
                 "steps": ("Compare.",), "rubric": [], "parameters": "Source Document and Summary", "low": 1,
                 "high": 5}
    case = "Source Document:\nThe doc.\n\nSummary:\nThe sum.\n\n"
    instructions = "Evaluation criteria:\nConsistent.\n\nEvaluation steps:\n1. Compare.\n\n"
    ending = ("Following the steps, grade the Source Document and Summary above on a scale from 1 (worst) to "
              "5 (best). Reply with the score only.")
    first = load_prompt("geval/score").render(layout="criteria_first", **variables).messages[1].content
    assert first == instructions + "---\n" + case + ending
    second = load_prompt("geval/score").render(layout="case_first", **variables).messages[1].content
    assert second == case + "---\n" + instructions + ending


def test_the_shipped_score_prompt_needs_every_variable() -> None:
    with pytest.raises(PromptError, match="'low' is undefined"):
        load_prompt("geval/score").render(
            fields={}, criteria="c", steps=["s"], rubric=[], parameters="Input", layout="case_first", high=5
        )
    with pytest.raises(PromptError, match="'rubric' is undefined"):
        load_prompt("geval/score").render(
            fields={}, criteria="c", steps=["s"], parameters="Input", layout="case_first", low=1, high=5
        )
    with pytest.raises(PromptError, match="'layout' is undefined"):
        load_prompt("geval/score").render(fields={}, criteria="c", steps=["s"], rubric=[], parameters="Input",
                                          low=1, high=5)


def test_the_shipped_steps_prompt_renders_with_what_geval_passes() -> None:
    rendered = load_prompt("geval/steps").render(
        criteria="The answer is correct.", parameters="Input and Actual Output", max_steps=MAX_STEPS
    )
    assert rendered.prefill == ""
    assert [m.role for m in rendered.messages] == ["system", "user"]
    user = rendered.messages[1].content
    assert user.startswith("Criteria for the evaluation:\nThe answer is correct.\n")
    assert f"at most {MAX_STEPS} short, concrete steps" in user
    assert "using only: Input and Actual Output." in user


def test_the_shipped_reason_prompt_renders_with_what_geval_passes() -> None:
    rendered = load_prompt("geval/reason").render(
        fields={"Input": "What is 2+2?", "Actual Output": "4"},
        criteria="The answer is correct.",
        steps=("Read the input.",),
        rubric=[],
        parameters="Input and Actual Output",
        low=1,
        high=5,
        score="4.5",
    )
    assert rendered.prefill == ""
    # a follow-up question: the case is in the score prompt's messages that come before it
    assert [(m.role, m.content) for m in rendered.messages] == [(
        "user",
        "In one or two sentences, say why the Input and Actual Output above received the score 4.5 on the "
        "scale from 1 to 5, citing what in the text supports it.\n"
        'Answer in JSON: {"reason": "..."}',
    )]


def test_the_shipped_reason_prompt_needs_the_score() -> None:
    with pytest.raises(PromptError, match="'score' is undefined"):
        load_prompt("geval/reason").render(
            fields={}, criteria="c", steps=["s"], rubric=[], parameters="Input", low=1, high=5
        )


def test_an_override_file_replaces_the_shipped_prompt(tmp_path: Path) -> None:
    mine = tmp_path / "score.txt"
    mine.write_text("[[user]]\nRate {{ criteria }}.\n[[assistant]]\nRating: \n", encoding="utf-8")
    template = load_prompt("geval/score", mine)
    assert template.source == str(mine)
    rendered = template.render(criteria="tone")
    assert rendered.messages == (Message(role="user", content="Rate tone."),)
    assert rendered.prefill == "Rating: "


def test_an_unknown_shipped_prompt_is_a_prompt_error() -> None:
    with pytest.raises(PromptError, match=r"no-such\.txt: cannot read prompt"):
        load_prompt("geval/no-such")


# --- identity --------------------------------------------------------------------------


def test_sha256_is_the_hash_of_the_text() -> None:
    text = "[[user]]\nHello {{ name }}\n"
    assert PromptTemplate.from_text(text).sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_sha256_changes_with_the_text() -> None:
    a = PromptTemplate.from_text("[[user]]\nHello\n")
    b = PromptTemplate.from_text("[[user]]\nHello \n")
    assert a.sha256 != b.sha256
    assert PromptTemplate.from_text("[[user]]\nHello\n", "other.txt").sha256 == a.sha256


def test_the_shipped_prompt_hash_matches_its_file(tmp_path: Path) -> None:
    shipped = load_prompt("geval/score")
    copy = tmp_path / "score.txt"
    copy.write_bytes(Path(shipped.source).read_bytes())
    assert load_prompt("geval/score", copy).sha256 == shipped.sha256

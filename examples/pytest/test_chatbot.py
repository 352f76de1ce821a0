"""Testing a support chatbot's replies with pytest and a local judge model.

Run from the repository root (examples/ is not among the project's test paths,
so name the folder)::

    pytest examples/pytest -q                      # every test; the judge loads once
    pytest examples/pytest -q -m "not localeval"   # only the checks that need no model
    pytest examples/pytest -q -m localeval         # only the judged tests
    pytest examples/pytest -q --localeval-model gemma-3-270m   # another judge

The tests that take the ``localeval_judge`` fixture are marked ``localeval``
automatically; ``test_politeness_score_is_in_range`` also carries the marker by
hand, as a test that gets its judge some other way would.

The default judge, SmolLM2-135M, is tiny: its G-Eval scores for good and bad
replies alike lie between 0.45 and 0.65. The thresholds of the judged metrics
below are loose, to show the API with a model that runs anywhere; with a
stronger judge, set them where your data needs them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from localeval import AnswerRelevancy, Backend, ExactMatch, GEval, OutputLength, TestCase
from localeval.testing import (
    Expect,
    assert_evaluation,
    assert_fails,
    assert_passes,
    assert_score,
    assert_test,
    cases,
)

DATA = Path(__file__).with_name("chatbot.jsonl")

REPLIES = {
    "Hello!": "Hello! How can I help you today?",
    "When is the store open?": "The store is open from 9am to 5pm, Monday to Friday.",
    "Can I get a refund?": "Yes, you can return any item within 30 days for a full refund.",
}

# Metrics are configuration: define them once, use them in many tests. G-Eval
# writes its evaluation steps from the criteria once per session, not per test.
CORRECT = GEval(
    name="correctness",
    evaluation_params=("input", "actual_output", "expected_output"),
    evaluation_steps=(
        "Check whether the actual output states the same facts as the expected output.",
        "Give a low score if the actual output contradicts the expected output.",
    ),
    threshold=0.3,
)
POLITE = GEval(name="politeness", criteria="The reply is polite and friendly.", include_reason=False)
SHORT = OutputLength(max_words=50)  # score = words / 50


def chatbot(question: str) -> str:
    """The application under test: a support bot with canned replies."""
    return REPLIES.get(question, "Sorry, I do not know.")


def answered(case: TestCase) -> TestCase:
    """The case with the chatbot's reply as its actual output."""
    return case.model_copy(update={"actual_output": chatbot(case.input)})


# -- checks that need no model ----------------------------------------------------------


def test_greeting_matches_exactly() -> None:
    case = TestCase(input="Hello!", actual_output=chatbot("Hello!"),
                    expected_output="hello! how can I help you today?")
    result = assert_passes(case, ExactMatch(ignore_case=True))
    assert result.score == 1.0


def test_a_paraphrase_is_not_an_exact_match() -> None:
    case = TestCase(input="When is the store open?",
                    actual_output="We open at 9am and close at 5pm on weekdays.",
                    expected_output=chatbot("When is the store open?"))
    assert_fails(case, ExactMatch())


@pytest.mark.parametrize("case", cases(DATA))
def test_replies_are_short(case: TestCase) -> None:
    # At most 25 words: OutputLength's score is words / max_words.
    assert_score(answered(case), SHORT, max=0.5)


# -- judged by the local model ------------------------------------------------------------


@pytest.mark.parametrize("case", cases(DATA))
def test_replies_are_correct(case: TestCase, localeval_judge: Backend) -> None:
    assert_test(answered(case), [ExactMatch(), CORRECT], localeval_judge)


def test_the_judge_accepts_a_paraphrase(localeval_judge: Backend) -> None:
    case = TestCase(input="When is the store open?",
                    actual_output="We open at 9am and close at 5pm on weekdays.",
                    expected_output=chatbot("When is the store open?"))
    assert_passes(case, CORRECT, localeval_judge)


@pytest.mark.localeval
def test_politeness_score_is_in_range(localeval_judge: Backend) -> None:
    case = TestCase(input="Hello!", actual_output=chatbot("Hello!"))
    result = assert_score(case, POLITE, localeval_judge, min=0.3, max=0.9)
    assert result.details["method"] == "logprobs"  # the result's evidence is there to inspect


def test_refund_reply_meets_several_expectations(localeval_judge: Backend) -> None:
    question = "Can I get a refund?"
    case = TestCase(input=question, actual_output=chatbot(question),
                    expected_output="Yes, within 30 days.")
    results = assert_evaluation(
        case,
        [
            Expect(ExactMatch(), passed=False),  # a longer reply than the expected one
            Expect(SHORT, max=0.5),
            Expect(POLITE, min=0.3, max=0.9),
            AnswerRelevancy(threshold=0.3, include_reason=False),  # a bare metric: it must pass
        ],
        localeval_judge,
    )
    relevancy = results[-1]  # the results come back in order, to inspect
    assert relevancy.details["statements"]  # what the judge found in the reply

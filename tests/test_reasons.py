"""Loops cut out of a judge's reason (localeval/metrics/reasons.py), and recorded when they are."""

from __future__ import annotations

from localeval.data.case import TestCase
from localeval.metrics.geval import GEval
from localeval.metrics.reasons import cut_loop
from localeval.testing import ScriptedJudge

LOOP = ("The answer is correct, a perfect 3.71, and the score is a perfect 3.71, and the score is a perfect "
        "3.71, and the score is a perfect 3.71")


def test_a_loop_is_cut_where_it_starts_repeating() -> None:
    text, cut = cut_loop(LOOP)
    assert text == "The answer is correct, a perfect 3.71, and the score is…"
    assert cut == len(LOOP) - len("The answer is correct, a perfect 3.71, and the score is")


def test_ordinary_prose_is_kept_whole() -> None:
    prose = ("The output states the capital correctly. It also gives the population, which the question did not ask "
             "for, but the answer to the question is right and stated first.")
    assert cut_loop(prose) == (prose, 0)


def test_short_repeated_phrases_are_not_loops() -> None:
    text = "The answer is right. The answer is short. The answer is polite."
    assert cut_loop(text) == (text, 0)


def test_a_phrase_said_twice_in_prose_is_not_a_loop() -> None:
    prose = ("The actual output contradicts the expected output: it says that Sydney is the capital of Australia, "
             "while the expected output says that Canberra is the capital of Australia. The actual output "
             "contradicts the expected output, so the score is low.")
    assert cut_loop(prose) == (prose, 0)  # "the actual output contradicts the expected output" comes back: 7 words


#: Two of Qwen2.5-Coder-1.5B's quick-start reasons (2026-11-25): a phrase of theirs comes back at the very end.
QWEN_REASONS = (
    "The actual output contradicts the expected output. The actual output states that plants absorb oxygen for "
    "photosynthesis, while the expected output states that plants absorb carbon dioxide. This contradicts the "
    "information provided in the input, which states that plants absorb oxygen for photosynthesis. The actual "
    "output is not supported by the information provided in the input.",
    "The Input and Actual Output are both short and to the point, but the Actual Output contains unnecessary words. "
    "The Input is clear and easy to understand, while the Actual Output is concise and to the point, but it is not "
    "well-structured and follows the guidelines. The Input is correct and relevant to the question, but the Actual "
    "Output is not well-structured and follows the guidelines.",
)


def test_a_phrase_that_comes_back_at_the_end_of_prose_is_not_a_loop() -> None:
    for reason in QWEN_REASONS:
        assert cut_loop(reason) == (reason, 0)


def test_a_sentence_that_comes_back_to_the_end_is_a_loop() -> None:
    reason = ("The score 3.79 is a testament to the importance of the input and the expected output. It compares "
              "them well. The score 3.79 is a testament to the importance of the input and the expected")
    text, cut = cut_loop(reason)  # cut short by the length limit while repeating its first sentence
    assert text == "The score 3.79 is a testament to the importance of the input and the expected output. It compares them well…"
    assert cut == len(reason) - len(text) + 1


def test_a_reason_that_is_nothing_but_a_loop_stays_as_it_is() -> None:
    loop = "yes yes yes yes yes yes yes yes"
    assert cut_loop(loop) == ("yes…", len(loop) - 3)


def test_a_metric_records_how_much_of_its_reason_was_a_loop() -> None:
    judge = ScriptedJudge(logprobs=[{"1": -5.0, "2": -5.0, "3": -5.0, "4": -5.0, "5": -0.1}],
                          json_values=[{"reason": LOOP}])
    metric = GEval(name="correctness", criteria="Correct.", evaluation_steps=["Check it."])
    result = metric.measure(TestCase(input="q", actual_output="a"), judge)
    assert result.reason == "The answer is correct, a perfect 3.71, and the score is…"
    assert result.details["reason_loop_cut"] == len(LOOP) - len(result.reason) + 1


def test_a_reason_without_a_loop_records_nothing() -> None:
    judge = ScriptedJudge(logprobs=[{"1": -5.0, "2": -5.0, "3": -5.0, "4": -5.0, "5": -0.1}],
                          json_values=[{"reason": "It states the right city."}])
    metric = GEval(name="correctness", criteria="Correct.", evaluation_steps=["Check it."])
    result = metric.measure(TestCase(input="q", actual_output="a"), judge)
    assert result.reason == "It states the right city."
    assert "reason_loop_cut" not in result.details

"""Finding the score position in a server's token stream, and reading the candidates there."""

from __future__ import annotations

import math
import threading
import time

import pytest

from localeval.backends.base import Message
from localeval.backends.scan import (
    ScoredToken,
    candidate_logprobs,
    position_capabilities,
    prefill_grammar,
    prefill_instruction,
    prefill_messages,
    read_distribution,
    require_single_characters,
    score_position,
    whole_answer_distribution,
)
from localeval.errors import BackendError, CandidateError

DIGITS = tuple("12345")

# Recorded from llama-cpp-python's server (0.3.36, SmolLM2-135M-Instruct Q4_1) with
# grammar `root ::= "Score: " ("1" | ... | "5")`, top_logprobs=6: the sampler spelled
# the prefill S|co|re|:|" ", and the k+1-th entry is the sampled token, appended.
GRAMMAR_STREAM = [
    {"token": "S", "logprob": -4.6665, "top_logprobs": [
        {"token": "1", "logprob": -1.8248}, {"token": "2", "logprob": -2.1846}, {"token": "The", "logprob": -2.3335},
        {"token": "To", "logprob": -2.8641}, {"token": "A", "logprob": -2.8763}, {"token": "I", "logprob": -3.0553},
        {"token": "S", "logprob": -4.6665}]},
    {"token": "co", "logprob": -7.6455, "top_logprobs": [
        {"token": "lightly", "logprob": -2.6538}, {"token": "ame", "logprob": -2.9778}, {"token": "co", "logprob": -7.6455}]},
    {"token": "re", "logprob": -15.3918, "top_logprobs": [
        {"token": "op", "logprob": -1.1269}, {"token": "re", "logprob": -15.3918}]},
    {"token": ":", "logprob": -2.753, "top_logprobs": [
        {"token": " ", "logprob": -1.9513}, {"token": ",", "logprob": -1.9702}, {"token": ":", "logprob": -2.753}]},
    {"token": " ", "logprob": -0.3065, "top_logprobs": [
        {"token": " ", "logprob": -0.3065}, {"token": " Very", "logprob": -3.9145}, {"token": " Excellent", "logprob": -4.5748},
        {"token": " I", "logprob": -4.69}, {"token": "1", "logprob": -4.7666}, {"token": " A", "logprob": -5.021}]},
    {"token": "1", "logprob": -0.9125, "top_logprobs": [
        {"token": "1", "logprob": -0.9125}, {"token": "2", "logprob": -1.3949}, {"token": "4", "logprob": -2.0768},
        {"token": "3", "logprob": -2.3768}, {"token": "5", "logprob": -2.5875}, {"token": "0", "logprob": -3.8954}]},
]
# Recorded the same way without a grammar: the model did not write the prefill.
UNFOLLOWED_STREAM = [
    {"token": "1", "logprob": -1.8248, "top_logprobs": [{"token": "1", "logprob": -1.8248}]},
    {"token": ".", "logprob": -0.404, "top_logprobs": [{"token": ".", "logprob": -0.404}]},
    {"token": " The", "logprob": -2.0713, "top_logprobs": [{"token": " The", "logprob": -2.0713}]},
]


def tokens(items: list[dict]) -> list[ScoredToken]:
    return [ScoredToken.from_json(item) for item in items]


def plain(*texts: str, top: tuple[tuple[str, float], ...] = ()) -> list[ScoredToken]:
    return [ScoredToken(t, -0.1, top) for t in texts]


def test_the_recorded_grammar_stream_is_read_at_the_digit():
    stream = tokens(GRAMMAR_STREAM)
    assert score_position(stream, "Score: ") == 5
    dist = read_distribution(stream, "Score: ", DIGITS)
    raw = {"1": -0.9125, "2": -1.3949, "3": -2.3768, "4": -2.0768, "5": -2.5875}
    assert dist.logprobs == raw
    covered = sum(math.exp(v) for v in raw.values())
    assert dist.covered_mass == pytest.approx(covered, rel=1e-12)
    assert dist.probabilities["1"] == pytest.approx(math.exp(-0.9125) / covered, rel=1e-12)


def test_a_code_fence_before_the_prefill_is_skipped():
    # The shape llama.cpp's server gives under json_schema: a fence in the tokens, not in the message.
    top = (("4", -0.5), ("3", -1.5), (" ", -3.0))
    stream = plain("```", "json", "\n", '{"', "Score", ":", " ") + [ScoredToken("4", -0.5, top)]
    assert score_position(stream, "Score: ") == 7
    assert read_distribution(stream, "Score: ", ("3", "4")).logprobs == {"3": -1.5, "4": -0.5}


def test_whitespace_may_be_split_either_way_around_the_answer():
    spaced = plain("Score", ":", " 3")
    assert score_position(spaced, "Score: ") == 2
    assert score_position(plain("Score", ": ", "3"), "Score: ") == 2
    assert score_position(plain("Score:", "\n", "3"), "Score: ") == 2  # a whitespace-only token is passed over


def test_continued_prefill_starts_at_the_first_token():
    assert score_position(plain("4", "\n"), "Score: ", preceding="Score: ") == 0
    assert score_position(plain(" ", "4"), "", preceding="") == 1  # empty prefill: first visible token


def test_the_first_occurrence_of_the_prefill_counts():
    stream = plain("Sure", ". ", "Score", ": ", "2", " (", "Score", ": ", "5")
    assert score_position(stream, "Score: ") == 4


def test_variants_of_a_candidate_are_summed_and_absent_ones_get_minus_inf():
    token = ScoredToken("3", -0.7, (("3", -0.7), (" 3", -1.5), ("4", -2.0), ("Three", -3.0)))
    found = candidate_logprobs(token, ("3", "4", "5"))
    assert found["3"] == pytest.approx(math.log(math.exp(-0.7) + math.exp(-1.5)), rel=1e-12)
    assert (found["4"], found["5"]) == (-2.0, -math.inf)
    dist = read_distribution([token], "", ("3", "4", "5"))
    assert dist.probabilities["5"] == 0.0
    assert dist.covered_mass == pytest.approx(math.exp(-0.7) + math.exp(-1.5) + math.exp(-2.0), rel=1e-12)


def test_two_tokens_for_one_score_add_up_in_the_expected_score():
    """Issue 13's example: "3" = 0.3, " 3" = 0.3, "4" = 0.4 is 3 with 0.6, so 3.4 (the larger variant gave 3.571)."""
    top = (("4", math.log(0.4)), ("3", math.log(0.3)), (" 3", math.log(0.3)))
    dist = read_distribution([ScoredToken("4", math.log(0.4), top)], "", ("3", "4"))
    assert dist.expected_value({"3": 3.0, "4": 4.0}) == pytest.approx(3.4, rel=1e-12)
    assert dist.covered_mass == pytest.approx(1.0, rel=1e-12)


def test_the_sampled_token_listed_among_the_alternatives_counts_once():
    token = ScoredToken("3", math.log(0.5), (("3", math.log(0.5)), ("4", math.log(0.25))))
    assert candidate_logprobs(token, ("3", "4")) == {"3": math.log(0.5), "4": math.log(0.25)}


def test_a_server_distribution_says_it_is_not_of_whole_answers():
    """One position gives no P(the answer ends | c): the distribution must not claim it."""
    dist = read_distribution(tokens(GRAMMAR_STREAM), "Score: ", DIGITS)
    assert dist.whole_answers is False


def test_the_sampled_token_counts_even_when_missing_from_the_alternatives():
    token = ScoredToken("2", -3.0, (("1", -0.1),))
    assert candidate_logprobs(token, ("1", "2")) == {"1": -0.1, "2": -3.0}


def test_server_quirks_null_and_positive_logprobs_are_tolerated():
    token = ScoredToken.from_json({"token": "1", "logprob": 1e-7, "top_logprobs": [{"token": "2", "logprob": None}]})
    assert (token.logprob, token.top) == (0.0, (("2", -math.inf),))


def test_a_reply_that_never_writes_the_prefill_is_an_error_with_the_text():
    with pytest.raises(BackendError, match=r"never reached the prefill 'Score: '.*'1. The'"):
        read_distribution(tokens(UNFOLLOWED_STREAM), "Score: ", DIGITS)


def test_no_candidate_in_the_top_k_is_an_error_naming_what_was_there():
    stream = plain("Score", ": ") + [ScoredToken("N", -0.1, (("N", -0.1), ("Not", -1.0)))]
    with pytest.raises(BackendError, match=r"none of the candidates.*\['N', 'Not'\]"):
        read_distribution(stream, "Score: ", DIGITS)


def test_only_single_character_candidates_are_accepted_where_one_position_is_read():
    require_single_characters(DIGITS, "vllm", "grammar")
    with pytest.raises(CandidateError, match=r"'instruction' prefill scores single-character candidates only, "
                                             r"got \['10'\].*use the 'continue' or 'completion' prefill"):
        require_single_characters(("9", "10"), "vllm", "instruction")


def test_capabilities_say_where_whole_answers_and_multi_token_candidates_are_read():
    for mode, whole in (("continue", True), ("completion", True), ("grammar", False), ("instruction", False)):
        caps = position_capabilities({}, 20, 1, mode)
        assert caps.multi_token_candidates is whole
        assert ("top 20 alternatives" if whole else "single-character") in caps.notes["multi_token_candidates"]


# -- whole answers through continuation requests (scripted servers) --------------------------


def scripted_server(positions: dict[str, dict[str, float]], stops: int = 0):
    """``first_token`` for :func:`whole_answer_distribution`: each prefix's alternatives (probabilities);
    the first ``stops`` calls the server stops at once. The prefixes asked are recorded."""
    asked: list[tuple[str, int]] = []

    def first_token(prefix: str, seed: int) -> ScoredToken | None:
        asked.append((prefix, seed))
        if len(asked) <= stops:
            return None
        top = tuple((t, math.log(p)) for t, p in positions[prefix].items())
        return ScoredToken("~", -20.0, top)  # the drawn token, not among the alternatives

    return first_token, asked


ZERO_TO_TEN = {str(s): float(s) for s in range(11)}


def test_the_counterexample_over_http_scores_6_904():
    """Issue 13's counterexample as a server would give it: "15" is not a candidate and is not "1"."""
    first_token, asked = scripted_server({
        "": {"1": 0.4, "7": 0.5, "3": 0.05, " I": 0.05},
        "1": {"0": 0.5, "5": 0.3, "\n": 0.2}, "10": {"\n": 1.0}, "7": {"\n": 1.0}, "3": {"\n": 1.0},
    })
    dist, requests = whole_answer_distribution(tuple(ZERO_TO_TEN), first_token, 20, "http://judge")
    assert dist.whole_answers is True
    assert dist.expected_value(ZERO_TO_TEN) == pytest.approx(5.73 / 0.83, rel=1e-12)
    assert round(dist.expected_value(ZERO_TO_TEN), 3) == 6.904
    assert dist.covered_mass == pytest.approx(0.83, rel=1e-12)
    # The score position, then after each candidate with a probability: "1", "10", "3", "7". Nothing else.
    assert (requests, sorted(p for p, _ in asked)) == (5, ["", "1", "10", "3", "7"])


def test_token_variants_of_one_answer_are_summed_over_http():
    first_token, _ = scripted_server({"": {"3": 0.3, " 3": 0.3, "4": 0.4},
                                      "3": {"\n": 1.0}, " 3": {"\n": 1.0}, "4": {"\n": 1.0}})
    dist, _ = whole_answer_distribution(("3", "4"), first_token, 20, "http://judge")
    assert dist.expected_value({"3": 3.0, "4": 4.0}) == pytest.approx(3.4, rel=1e-12)


def test_a_full_stop_ends_the_answer_and_a_decimal_point_does_not():
    first_token, asked = scripted_server({"": {"3": 1.0}, "3": {".": 0.5, "\n": 0.5}, "3.": {"5": 0.4, " It": 0.6}})
    dist, _ = whole_answer_distribution(("3",), first_token, 20, "http://judge")
    assert dist.covered_mass == pytest.approx(0.5 + 0.5 * 0.6, rel=1e-12)
    assert [p for p, _ in asked] == ["", "3", "3."]


def test_only_the_top_k_alternatives_count_and_what_they_leave_out_ends_the_number():
    """A server that appends the drawn token to its list (llama-cpp-python) has it dropped beyond k. What
    the top k leave out after a score counts as its end (issue 28), and ``unlisted_mass`` says how much."""
    first_token, _ = scripted_server({"": {"3": 0.5, "4": 0.3, "5": 0.01}, "3": {"\n": 0.6, "0": 0.2, "!": 0.1},
                                      "4": {"\n": 0.9}})
    dist, _ = whole_answer_distribution(("3", "4", "5"), first_token, 2, "http://judge")
    # After "3" the top 2 are "\n" (.6) and "0" (.2): the end is 1 - .2, of which .2 unlisted; after "4": 1 - 0.
    assert dist.logprobs == {"3": pytest.approx(math.log(0.5 * 0.8)), "4": pytest.approx(math.log(0.3 * 1.0)),
                             "5": -math.inf}
    assert dist.covered_mass == pytest.approx(0.7, rel=1e-12)
    assert dist.unlisted_mass == pytest.approx(0.5 * 0.2 + 0.3 * 0.1, rel=1e-12)


def test_a_server_that_stops_at_once_is_asked_again_with_the_next_seed():
    positions = {"": {"3": 1.0}, "3": {"\n": 1.0}}
    first_token, asked = scripted_server(positions, stops=2)
    dist, requests = whole_answer_distribution(("3",), first_token, 20, "http://judge")
    assert dist.covered_mass == pytest.approx(1.0) and requests == 2
    assert asked == [("", 0), ("", 1), ("", 2), ("3", 0)]
    always, _ = scripted_server(positions, stops=99)
    with pytest.raises(BackendError, match=r"stopped at once 3 times after the prefill \+ ''"):
        whole_answer_distribution(("3",), always, 20, "http://judge")


def test_no_candidate_that_ends_is_an_error_naming_the_top_tokens():
    first_token, _ = scripted_server({"": {"N": 0.9, "1": 0.1}, "1": {"0": 1.0}})
    with pytest.raises(BackendError, match=r"none of the candidates \['1', '2'\].*\['N', '1'\]"):
        whole_answer_distribution(("1", "2"), first_token, 20, "http://judge")


MESSAGES = (Message(role="system", content="Be strict."), Message(role="user", content="Rate it."))


def test_prefill_messages_for_each_mode():
    assert prefill_messages(MESSAGES, "Score: ", "continue")[-1] == {"role": "assistant", "content": "Score: "}
    instructed = prefill_messages(MESSAGES, "Score: ", "instruction")
    assert instructed[-1]["content"] == 'Rate it.\n\nBegin your reply with exactly "Score: " and then the answer.'
    assert prefill_messages(MESSAGES, "Score: ", "grammar") == [m.model_dump() for m in MESSAGES]
    assert prefill_messages(MESSAGES, "", "continue") == [m.model_dump() for m in MESSAGES]
    only_system = prefill_messages(MESSAGES[:1], "A", "instruction")
    assert only_system[-1] == {"role": "user", "content": prefill_instruction("A")}


def test_prefill_grammar_escapes_the_literal():
    assert prefill_grammar("Score: ", ("1", "2")) == 'root ::= "Score: " ("1" | "2")'
    assert prefill_grammar('a"b\\\n', ("x",)) == 'root ::= "a\\"b\\\\\\n" ("x")'
    assert prefill_grammar("", ("x",)) == 'root ::= ("x")'


def test_one_scores_requests_go_back_to_back_while_others_wait():
    """Two scores at once on one endpoint: each one's requests in one run, none of the other's between."""
    sent: list[tuple[str, str]] = []

    def server(name: str):
        def first_token(prefix: str, seed: int) -> ScoredToken | None:
            sent.append((name, prefix))
            time.sleep(0.01)  # room for the other thread to cut in, were it not held off
            return ScoredToken("~", -20.0, tuple((t, math.log(p)) for t, p in
                                                 {"": {"3": 0.5, "4": 0.5}}.get(prefix, {"\n": 1.0}).items()))
        return first_token

    threads = [threading.Thread(target=whole_answer_distribution, args=(("3", "4"), server(name), 20, "http://one"))
               for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    names = [name for name, _ in sent]
    assert sorted(names) == ["a"] * 3 + ["b"] * 3
    assert names in (["a"] * 3 + ["b"] * 3, ["b"] * 3 + ["a"] * 3)
    assert [prefix for _, prefix in sent] == ["", "3", "4"] * 2  # each in preorder

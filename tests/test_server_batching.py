"""A whole-answer score's continuations a depth at a time, each depth in one request (issue 28, item 2).

The pure parts: the walk with ``read_ahead``, the order of a depth's prompts (:func:`with_parents`),
:func:`whole_answer_distribution` over a scripted server that takes a list of prompts, the option's
check and the reply's choices. The same against a real llama-server: tests/test_http_backends.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence

import pytest

from localeval.backends.openai_compat import OpenAICompatOptions
from localeval.backends.openai_shapes import choices_in_order
from localeval.backends.presets import KINDS
from localeval.backends.scan import FirstTokens, ScoredToken, whole_answer_distribution, with_parents
from localeval.distribution import ListedTokens, read_whole_answers
from localeval.errors import BackendError, ConfigError

ZERO_TO_TEN = tuple(str(s) for s in range(11))
#: A 0-10 score's next-token distributions by prefix: "1" and "3" may end or go on with "."; "1" may be "10".
POSITIONS = {
    "": {"1": 0.4, "7": 0.3, "3": 0.2, " 3": 0.05, "I": 0.05},
    "1": {"0": 0.5, ".": 0.2, "\n": 0.3}, "1.": {"5": 0.5, " It": 0.5}, "10": {".": 0.1, "\n": 0.9},
    "10.": {"\n": 1.0}, "7": {"\n": 1.0}, "3": {".": 0.4, "/": 0.6}, "3.": {" It": 1.0}, " 3": {"\n": 1.0},
    "7.": {"\n": 1.0}, " 3.": {"\n": 1.0},
}


def view(prefix: str) -> ListedTokens:
    return ListedTokens({t: math.log(p) for t, p in POSITIONS[prefix].items()})


def test_read_ahead_reads_each_whole_candidate_with_its_full_stop_one_depth_sooner() -> None:
    depths: dict[bool, list[list[str]]] = {False: [], True: []}
    results = {}
    for ahead in (False, True):
        def by_depth(prefixes: Sequence[str], ahead: bool = ahead) -> list[ListedTokens]:
            depths[ahead].append(list(prefixes))
            return [view(p) for p in prefixes]

        results[ahead] = read_whole_answers(ZERO_TO_TEN, view, by_depth=by_depth, read_ahead=ahead)
    assert depths[False] == [[""], [" 3", "1", "3", "7"], ["1.", "10", "3."], ["10."]]
    # "7." is read for nothing ("." is not among "7"'s next tokens); the numbers are the same.
    assert depths[True] == [[""], [" 3", " 3.", "1", "1.", "3", "3.", "7", "7."], ["10", "10."]]
    assert results[True] == results[False] == read_whole_answers(ZERO_TO_TEN, view)


def test_each_prompt_of_a_depth_comes_right_after_its_parent() -> None:
    # Depth 1 extends the prompt alone; deeper, a parent is sent again where the prompt before does not extend it.
    assert with_parents(["1", "1.", "3", "3."], []) == ["1", "1.", "3", "3."]
    assert with_parents(["10", "10.", "11", "20"], ["1", "1.", "2"]) == ["1", "10", "10.", "11", "2", "20"]
    assert with_parents(["100", "100."], ["1", "10", "10.", "99."]) == ["1", "10", "100", "100."]


Reads = tuple[Callable[[str, int], "ScoredToken | None"], FirstTokens, list[list[str]]]


def scripted(stopped: Collection[tuple[str, int]] = ()) -> Reads:
    """``first_token`` and ``first_tokens`` over :data:`POSITIONS`; each request's prompts recorded.
    The server stops at once for the (prefix, seed) pairs in ``stopped``."""
    sent: list[list[str]] = []

    def token(prefix: str, seed: int) -> ScoredToken | None:
        if (prefix, seed) in stopped:
            return None
        return ScoredToken("~", -20.0, tuple((t, math.log(p)) for t, p in POSITIONS[prefix].items()))

    def first_token(prefix: str, seed: int) -> ScoredToken | None:
        sent.append([prefix])
        return token(prefix, seed)

    def first_tokens(prefixes: Sequence[str], seed: int) -> list[ScoredToken | None]:
        sent.append(list(prefixes))
        return [token(p, seed) for p in prefixes]

    return first_token, first_tokens, sent


def test_a_zero_to_ten_score_is_three_requests_when_the_server_takes_a_list() -> None:
    first_token, first_tokens, sent = scripted()
    batched, requests = whole_answer_distribution(ZERO_TO_TEN, first_token, 20, "http://judge",
                                                  first_tokens=first_tokens)
    assert requests == len(sent) == 3
    assert sent == [[""], [" 3", " 3.", "1", "1.", "3", "3.", "7", "7."], ["1", "10", "10."]]
    first_token, _, one_each = scripted()
    assert whole_answer_distribution(ZERO_TO_TEN, first_token, 20, "http://judge") == (batched, len(one_each))
    assert len(one_each) == 9


def test_prompts_where_the_server_stopped_are_sent_again_together_with_the_next_seed() -> None:
    first_token, first_tokens, sent = scripted({("1.", 0), ("7", 0), ("7", 1)})
    dist, requests = whole_answer_distribution(ZERO_TO_TEN, first_token, 20, "http://judge",
                                               first_tokens=first_tokens)
    assert sent[2:4] == [["1", "1.", "7"], ["7"]]  # seed 1, then seed 2 for what stopped again
    assert requests == 5 and dist == whole_answer_distribution(ZERO_TO_TEN, scripted()[0], 20, "http://judge")[0]
    always = {(p, seed) for p in POSITIONS for seed in range(3) if p == "3."}
    first_token, first_tokens, _ = scripted(always)
    with pytest.raises(BackendError, match=r"stopped at once 3 times after the prefill \+ '3\.'"):
        whole_answer_distribution(ZERO_TO_TEN, first_token, 20, "http://judge", first_tokens=first_tokens)


def test_a_server_that_answers_fewer_prompts_than_sent_is_an_error() -> None:
    first_token, _, _ = scripted()
    with pytest.raises(BackendError, match="answered 1 of the 8 prompts sent together"):
        whole_answer_distribution(ZERO_TO_TEN, first_token, 20, "http://judge",
                                  first_tokens=lambda prefixes, seed: [first_token(prefixes[0], seed)])
    with pytest.raises(BackendError, match="reply has 1 choices, indexed \\[0\\]: this server does not take a list"):
        choices_in_order({"choices": [{"index": 0, "text": "1"}]}, 3)
    reply = {"choices": [{"index": 1, "text": "b"}, {"index": 0, "text": "a"}]}
    assert [c["text"] for c in choices_in_order(reply, 2)] == ["a", "b"]


def test_batch_continuations_needs_the_completion_prefill() -> None:
    with pytest.raises(ConfigError, match="option batch_continuations: .*needs prefill = 'completion'"):
        OpenAICompatOptions.parse("openai-compatible", {"base_url": "http://judge/v1", "batch_continuations": True})
    llama_server = next(kind for kind in KINDS if kind.name == "llama-server").options
    with pytest.raises(ConfigError, match="needs prefill = 'completion'"):  # the preset's prefill is 'continue'
        llama_server.parse("llama-server", {"batch_continuations": True})
    options = llama_server.parse("llama-server", {"batch_continuations": True, "prefill": "completion"})
    assert options.model_dump()["batch_continuations"] is True
    assert llama_server.parse("llama-server", {}).model_dump()["batch_continuations"] is False

"""Score distributions read from a server's top log-probabilities. Pure functions, no I/O.

A chat API cannot be asked for "the distribution right after this prefill"
directly. The server generates a few tokens and returns, for each, its top-k
alternatives with their log-probabilities; the score is read where the
generated text reaches the prefill. Four ways to make the model write the
prefill (:data:`PrefillMode`):

* ``continue`` — the prefill is sent as a final assistant message that the
  server continues (Ollama, llama.cpp's ``llama-server``, vLLM with
  ``continue_final_message``). The model reads exactly what the in-process
  backend reads, so the scores agree.
* ``grammar`` — a GBNF grammar forces the prefill then one candidate
  (llama.cpp servers). The sampler picks how the prefill is split into tokens,
  which may differ from how the tokenizer splits it, and so may shift the scores.
* ``instruction`` — the last user message asks the model to begin its reply
  with the prefill. Works on any server, for models that follow the instruction.
* ``completion`` — the client renders the chat with the model's template, ends
  it with the prefill and posts the raw prompt to the legacy completions
  endpoint (llama.cpp's servers; :mod:`localeval.backends.completions`). The
  model reads what the in-process backend reads, and the first position is the
  score position: no scan.

In the ``continue`` and ``completion`` modes the score position is the first
token after the prefill, and any text can be appended to the prefill: each
candidate's probability is that of the *whole* answer, read as the in-process
backend reads it (:func:`whole_answer_distribution`, one continuation request
per prefix a candidate needs, or per depth of them where the server takes a list
of prompts: ``batch_continuations``). In ``grammar`` and ``instruction`` modes the
model, not the client, writes the prefill, so nothing can be appended: one
position is read, candidates must be single characters, and each probability is
that the reply *starts with* the candidate.

The token stream is scanned, never the message text: llama.cpp's server may
put a code fence in the tokens that the message does not show.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from localeval.backends.base import Capabilities, Message
from localeval.backends.sequence import endpoint_order
from localeval.distribution import (
    PRUNE_BELOW,
    CandidateDistribution,
    ListedTokens,
    log_sum_exp,
    read_whole_answers,
    renormalize,
)
from localeval.errors import BackendError, CandidateError

PrefillMode = Literal["continue", "grammar", "instruction", "completion"]
#: The prefill modes in which the client can append text to the prefill, so whole answers can be read.
APPENDABLE: tuple[PrefillMode, ...] = ("continue", "completion")


@dataclass(frozen=True)
class ScoredToken:
    """One generated token, its log-probability, and the top alternatives at its position."""

    text: str
    logprob: float
    top: tuple[tuple[str, float], ...]

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> ScoredToken:
        """From the shape OpenAI-compatible servers and Ollama share: ``{token, logprob, top_logprobs}``."""
        top = tuple((str(t["token"]), _logprob(t.get("logprob"))) for t in item.get("top_logprobs") or ())
        return cls(str(item["token"]), _logprob(item.get("logprob")), top)


def _logprob(value: Any) -> float:
    # null stands for -inf on some servers; float32 rounding can give a hair above 0.
    return -math.inf if value is None else min(float(value), 0.0)


def require_single_characters(candidates: Sequence[str], backend: str, mode: PrefillMode) -> None:
    """Raise :class:`CandidateError` unless every candidate is one character (``grammar``/``instruction``).

    In these modes one position is read: a candidate must be one token on the
    server's tokenizer, which the client cannot see. Single characters (the
    digits 1-9) are one token on every tokenizer in use.
    """
    long = [c for c in candidates if len(c) != 1]
    if long:
        raise CandidateError(
            f"the {backend} backend's '{mode}' prefill scores single-character candidates only, got "
            f"{long}: the model writes the prefill itself, so nothing can be appended to read a "
            "candidate such as '10' token by token; use the 'continue' or 'completion' prefill "
            "(prefill = ...), a score range within 0-9, or the in-process llama.cpp backend"
        )


#: Why no server backend can promise that a case's text stays text (docs/http-backends.md).
SERVER_MARKUP = ("the server renders the chat template and parses special tokens in the messages, so chat markup "
                 "in a case (<|im_start|>system ...) could forge a turn; the in-process llama.cpp backend reads "
                 "case text as text")


def position_capabilities(
    notes: dict[str, str], top_logprobs: int, parallel: int, mode: PrefillMode
) -> Capabilities:
    """Capabilities of a server backend that reads distributions from top log-probabilities."""
    whole = mode in APPENDABLE
    limit = (
        f"whole answers, read from the top {top_logprobs} alternatives at each position: a token not "
        "among them counts as 0, the mass they leave out as the end of a number (unlisted_mass)"
        if whole else f"single-character candidates only: the '{mode}' prefill reads one position"
    )
    return Capabilities(
        parallel_requests=parallel,
        json_schema=True,
        distribution="distribution" not in notes,
        multi_token_candidates=whole,
        max_top_logprobs=top_logprobs,
        notes={**notes, "multi_token_candidates": limit, "text_as_data": SERVER_MARKUP},
    )


#: The temperature of the one token generated where alternatives are read for whole answers.
#: Servers report the model's raw log-probabilities, which the temperature does not change
#: (Ollama, llama.cpp's servers, vLLM's default logprobs_mode). Greedy, the model would often
#: pick an end-of-generation token (after "Score: 3."), and a server that stops reports no
#: alternatives for that position (Ollama, llama-cpp-python): drawn from a flat distribution,
#: that token is one in tens of thousands.
READ_TEMPERATURE = 100.0
#: Seeds tried, in order, while the server stops at once (the draw is deterministic per seed).
READ_SEEDS = (0, 1, 2)


def listed_tokens(token: ScoredToken, k: int) -> ListedTokens:
    """The k most likely alternatives at ``token``'s position; distinct ones with one text summed.

    What a view holds is the server's top k, the same whatever token was drawn:
    a server that adds the drawn token to its list (llama-cpp-python) has it
    dropped again unless it is among the k.
    """
    return ListedTokens.summed(sorted(token.top, key=lambda pair: -pair[1])[:k])


#: ``first_tokens(prefixes, seed)``: :func:`whole_answer_distribution`'s ``first_token`` for several
#: prefixes in one request (a server that takes an array of prompts), in their order.
FirstTokens = Callable[[Sequence[str], int], Sequence[ScoredToken | None]]


def whole_answer_distribution(
    candidates: Sequence[str], first_token: Callable[[str, int], ScoredToken | None], k: int, endpoint: str,
    *, first_tokens: FirstTokens | None = None, prune_below: float = PRUNE_BELOW,
) -> tuple[CandidateDistribution, int]:
    """Whole-answer probabilities read through continuation requests; and how many gave
    alternatives (a try where the server stopped at once is not counted).

    ``first_token(prefix, seed)`` asks the server for one token after the
    prefill with ``prefix`` appended ("" for the score position), drawn at
    :data:`READ_TEMPERATURE` with ``seed``, and returns it with its top
    alternatives; None when the server stopped at once and gave none (then the
    next seed is tried); ``k`` the alternatives asked for. The arithmetic is
    :func:`localeval.distribution.read_whole_answers`, the in-process backend's
    own; only what a server does not list differs: a token not listed counts as
    0, and the mass left out as the end of a number (:class:`ListedTokens`;
    ``unlisted_mass`` says how much it added). The requests go to ``endpoint`` back to
    back, the score position's first, nothing else from this process in between
    (:mod:`localeval.backends.sequence`).

    ``first_tokens``, where given, reads the continuations one depth of the trie
    at a time, each depth in one request (each prefix that writes a candidate
    with its "." child: ``read_ahead``); the score position is still read alone,
    by ``first_token``. Prefixes where the server stopped are asked again, together,
    with the next seed. ``prune_below``: the request's (a prefix less likely is not asked for).
    """
    asked: list[ScoredToken] = []
    read: list[str] = []  # the continuations read
    requests = 0

    def after(prefix: str) -> ListedTokens:
        nonlocal requests
        for seed in READ_SEEDS:
            token = first_token(prefix, seed)
            if token is not None:
                requests += 1
                asked.append(token)
                return listed_tokens(token, k)
        raise _stopped(prefix)

    def by_depth(prefixes: Sequence[str]) -> list[ListedTokens]:
        nonlocal requests
        if first_tokens is None or list(prefixes) == [""]:
            return [after(prefix) for prefix in prefixes]
        found: dict[str, ScoredToken] = {}
        pending = list(prefixes)
        for seed in READ_SEEDS:
            sent = with_parents(pending, [*read, *prefixes])  # a retry's parents may be of this depth
            tokens = first_tokens(sent, seed)
            if len(tokens) != len(sent):
                raise BackendError(f"the server answered {len(tokens)} of the {len(sent)} prompts sent together")
            requests += any(token is not None for token in tokens)
            found.update((prefix, token) for prefix, token in zip(sent, tokens, strict=True)
                         if token is not None and prefix in pending)
            pending = [prefix for prefix in pending if prefix not in found]
            if not pending:
                read.extend(prefixes)
                asked.extend(found[prefix] for prefix in prefixes)
                return [listed_tokens(found[prefix], k) for prefix in prefixes]
        raise _stopped(pending[0])

    with endpoint_order(endpoint).exclusive():
        if first_tokens is None:
            whole = read_whole_answers(candidates, after, prune_below)
        else:
            whole = read_whole_answers(candidates, after, prune_below, by_depth=by_depth, read_ahead=True)
    if all(v == -math.inf for v in whole.logprobs.values()):
        seen = [text for text, _ in sorted(asked[0].top, key=lambda kv: -kv[1])][:10]
        raise BackendError(
            f"none of the candidates {list(candidates)} is among the top {len(asked[0].top)} tokens at "
            f"the score position, or none of them ends there; the top ones were {seen}"
        )
    return whole.distribution(), requests


def with_parents(prefixes: Sequence[str], read: Sequence[str]) -> list[str]:
    """``prefixes`` in order, each right after its parent, itself after its own, and so on up to
    the first ancestor that the prompt before it extends (the ancestors: the prefixes of ``read``
    and of those before it, longest first).

    A server that reads a list of prompts in order on one KV cache, each on the part it shares
    with the one before (llama-server, one slot, ``cache_prompt``), then reads each prefix as one
    token on its parent, as one request per prefix in preorder does. Without its parent again,
    "10" read after "9." would be two tokens read in one batch, whose logits differ (by 4e-4 in a
    0-10 score: docs/http-backends.md). An ancestor's reply is read for nothing: one one-token
    pass each, a few per depth.
    """
    known = ["", *read]
    sent: list[str] = []
    for prefix in prefixes:
        chain: list[str] = []
        ancestor = prefix
        while True:
            ancestor = max((p for p in known if ancestor.startswith(p) and p != ancestor), key=len)
            if not ancestor or (sent and sent[-1].startswith(ancestor)):
                break
            chain.append(ancestor)
        sent += [*reversed(chain), prefix]
        known.append(prefix)
    return sent


def _stopped(prefix: str) -> BackendError:
    return BackendError(
        f"the server stopped at once {len(READ_SEEDS)} times after the prefill + {prefix!r} "
        "and listed no alternatives there"
    )


def score_position(tokens: Sequence[ScoredToken], prefill: str, preceding: str = "") -> int | None:
    """Index of the first token that carries text after the prefill; None if never reached.

    ``preceding`` is text the model already had before the first token (the
    prefill itself in ``continue`` mode). Whitespace between the prefill and the
    answer is allowed in any split: "Score:" + " 3" and "Score: " + "3" both find "3".
    """
    anchor = prefill.rstrip()
    text = preceding
    for index, token in enumerate(tokens):
        reached = text.rstrip().endswith(anchor) if anchor else not text.strip()
        if reached and token.text.strip():
            return index
        text += token.text
    return None


def candidate_logprobs(token: ScoredToken, candidates: Sequence[str]) -> dict[str, float]:
    """Each candidate's log-probability among the alternatives at ``token``'s position.

    An alternative matches a candidate when its text, stripped of surrounding
    whitespace, equals it. Where the tokenizer has several tokens for the same
    answer ("3" and " 3"), they are different ways of writing it, disjoint
    events: the candidate's probability is their sum (in log space), not the
    larger one. Alternatives are told apart by their text, so the sampled token,
    which servers also list among the alternatives, counts once. A candidate not
    among the alternatives gets -inf: its probability is below the k-th's.
    """
    seen = dict(token.top)
    seen.setdefault(token.text, token.logprob)
    found: dict[str, list[float]] = {c: [] for c in candidates}
    for text, logprob in seen.items():
        key = text.strip()
        if key in found:
            found[key].append(logprob)
    return {c: log_sum_exp(variants) for c, variants in found.items()}


def read_distribution(
    tokens: Sequence[ScoredToken], prefill: str, candidates: Sequence[str], preceding: str = ""
) -> CandidateDistribution:
    """The candidates' distribution at the score position, renormalized.

    ``covered_mass`` is the candidates' raw probability among the top-k
    alternatives: a lower bound on their true mass, since candidates outside the
    top k count as 0. (A server that reports post-grammar probabilities, as vLLM
    does under a grammar, makes it 1 whatever the model wanted to write.)
    """
    generated = "".join(t.text for t in tokens)
    index = score_position(tokens, prefill, preceding)
    if index is None:
        raise BackendError(
            f"the judge's reply never reached the prefill {prefill!r}, so there is no score "
            f"position; it wrote {generated[:200]!r}"
        )
    return distribution_at(tokens[index], candidates, f"after {generated[:200]!r}")


def distribution_at(token: ScoredToken, candidates: Sequence[str], where: str) -> CandidateDistribution:
    """The candidates' distribution among the alternatives at ``token``'s position, renormalized.

    ``where`` describes the position for the error raised when no candidate is there.
    Each probability is that the reply *starts with* the candidate (``whole_answers``
    False): the alternatives at one position say nothing about the token after it,
    so the factor P(the answer ends | c) cannot be read here (the ``grammar`` and
    ``instruction`` modes; the others use :func:`whole_answer_distribution`).
    """
    logprobs = candidate_logprobs(token, candidates)
    if all(v == -math.inf for v in logprobs.values()):
        seen = [text for text, _ in token.top][:10]
        raise BackendError(
            f"none of the candidates {list(candidates)} is among the top {len(token.top)} "
            f"tokens at the score position ({where}); the top ones were {seen}"
        )
    return renormalize(logprobs, whole_answers=False)


# -- how the prefill reaches the model -------------------------------------------------


def prefill_messages(messages: Sequence[Message], prefill: str, mode: PrefillMode) -> list[dict[str, str]]:
    """The chat to send so that the model's reply starts with ``prefill``."""
    chat = [m.model_dump() for m in messages]
    if not prefill:
        return chat
    if mode == "continue":
        return [*chat, {"role": "assistant", "content": prefill}]
    if mode == "instruction":
        users = [i for i, m in enumerate(chat) if m["role"] == "user"]
        if not users:
            return [*chat, {"role": "user", "content": prefill_instruction(prefill)}]
        last = chat[users[-1]]
        chat[users[-1]] = {**last, "content": last["content"] + "\n\n" + prefill_instruction(prefill)}
    return chat


def prefill_instruction(prefill: str) -> str:
    """The sentence that asks the model to begin its reply with the prefill (quoted as JSON)."""
    return f"Begin your reply with exactly {json.dumps(prefill)} and then the answer."


def prefill_grammar(prefill: str, candidates: Sequence[str]) -> str:
    """A GBNF grammar that accepts the prefill followed by exactly one candidate."""
    options = " | ".join(_gbnf_literal(c) for c in candidates)
    head = f"{_gbnf_literal(prefill)} " if prefill else ""
    return f"root ::= {head}({options})"


def _gbnf_literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"'

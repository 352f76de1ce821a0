"""Pure arithmetic on probability distributions. No I/O, no model."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict


class CandidateDistribution(BaseModel):
    """The probability of each candidate continuation at one position.

    ``probabilities`` are renormalized over the candidates (they sum to 1);
    ``covered_mass`` is how much of the model's raw probability the candidates
    had before renormalizing — a low value means the model wanted to write
    something else there, and the renormalized numbers mean little.

    ``whole_answers`` says what each candidate's probability is. True: that the
    candidate is the whole answer, P(c) · P(the answer ends | c) (see
    :func:`read_whole_answers`), read from the next-token distributions after
    the candidate's prefixes: the whole vocabulary in-process, a server's top
    alternatives over HTTP. False: that the reply *starts with* it, all a
    backend that reads one position can see (a server in the ``grammar`` or
    ``instruction`` prefill mode), so "1" on a 0-10 range also holds "10"-"19".

    ``unlisted_mass`` is the part of ``covered_mass`` that a top-k list did not
    show: where a number ends, what the list leaves out counts as an end (see
    :class:`ListedTokens`), and this is how much that added. The candidates' mass
    as listed is ``covered_mass - unlisted_mass``; a score, as a fraction of its
    range, is within ``unlisted_mass / (covered_mass - unlisted_mass)`` of the
    one read from whole vocabularies whose top k are those lists. 0 where the
    whole vocabulary is read.

    ``unread_mass`` is the probability of the reply prefixes that were not read
    because each was less likely than the request's ``prune_below`` (see
    :func:`read_whole_answers`): the candidates' mass beyond them is missing from
    ``covered_mass``, and a score, as a fraction of its range, is within
    ``unread_mass / covered_mass`` of the one every prefix would give.
    """

    # A candidate outside a server's top-k has log-probability -inf: keep it -inf
    # through JSON (as "-Infinity"), so cached and reported distributions round-trip.
    model_config = ConfigDict(frozen=True, ser_json_inf_nan="strings")

    probabilities: dict[str, float]
    logprobs: dict[str, float]
    covered_mass: float
    whole_answers: bool = False
    unlisted_mass: float = 0.0
    unread_mass: float = 0.0

    def expected_value(self, values: Mapping[str, float]) -> float:
        """Σ p(c)·v(c) over the candidates."""
        return expected_value(self.probabilities, values)

    def most_likely(self) -> str:
        """The candidate with the highest probability (the first one on a tie)."""
        return max(self.probabilities, key=lambda c: self.probabilities[c])


def log_softmax(logits: Sequence[float]) -> list[float]:
    """Log-probabilities from raw logits, computed stably."""
    if not logits:
        raise ValueError("log_softmax of an empty sequence")
    top = max(logits)
    log_total = top + math.log(sum(math.exp(x - top) for x in logits))
    return [x - log_total for x in logits]


def renormalize(
    logprobs: Mapping[str, float], *, whole_answers: bool = False, unlisted_mass: float = 0.0,
    unread_mass: float = 0.0,
) -> CandidateDistribution:
    """Renormalize candidates' raw log-probabilities so they sum to 1.

    Works in log space so candidates far in the tail (log p ≈ -100) still get
    an exact relative weight instead of underflowing to 0/0. ``whole_answers``,
    ``unlisted_mass`` and ``unread_mass`` record what the log-probabilities are (see
    :class:`CandidateDistribution`).
    """
    if not logprobs:
        raise ValueError("renormalize needs at least one candidate")
    values = list(logprobs.values())
    if any(math.isnan(v) or v > 1e-6 for v in values):
        raise ValueError(f"log-probabilities must be finite and <= 0, got {values}")
    top = max(values)
    if top == -math.inf:
        raise ValueError("every candidate has probability 0")
    log_covered = top + math.log(sum(math.exp(v - top) for v in values))
    return CandidateDistribution(
        probabilities={c: math.exp(v - log_covered) for c, v in logprobs.items()},
        logprobs={c: float(v) for c, v in logprobs.items()},
        covered_mass=min(1.0, math.exp(log_covered)),
        whole_answers=whole_answers,
        unlisted_mass=unlisted_mass,
        unread_mass=unread_mass,
    )


def log_sum_exp(logprobs: Iterable[float]) -> float:
    """log Σ exp(x), computed stably; -inf for no terms or only -inf terms.

    Probabilities of disjoint events add: two tokens that spell the same answer
    ("3" and " 3"), or every token after which a number has ended. Adding them in
    log space keeps tail values (log p ≈ -1000) exact instead of underflowing to 0.
    """
    values = list(logprobs)
    top = max(values, default=-math.inf)
    if top == -math.inf:
        return -math.inf
    return top + math.log(sum(math.exp(v - top) for v in values))


def whole_answer_logprobs(
    sequence_logprobs: Mapping[str, float], end_logprobs: Mapping[str, float]
) -> dict[str, float]:
    """Each candidate's log-probability of being the *whole* answer.

    ``sequence_logprobs[c]`` is log P(the reply starts with c); ``end_logprobs[c]``
    is log P(the answer ends | c): the mass of the next tokens that do not carry it
    on. P(c is the answer) = P(c) · P(end | c), which is why no score absorbs the
    longer answers that begin with it: on a 0-10 range P("1") also holds "10",
    "15", "1.5" and "19", candidates or not, and only the end factor removes
    them all. Candidates that begin one another ("1" and "10") need nothing more:
    "10" is among the continuations of "1", so its mass is not in "1"'s.
    """
    if set(sequence_logprobs) != set(end_logprobs):
        raise ValueError(
            f"end log-probabilities are for {sorted(end_logprobs)}, the candidates are {sorted(sequence_logprobs)}"
        )
    if any(math.isnan(v) or v > 1e-6 for v in end_logprobs.values()):
        raise ValueError(f"end log-probabilities must be <= 0, got {dict(end_logprobs)}")
    return {c: log_p + min(end_logprobs[c], 0.0) for c, log_p in sequence_logprobs.items()}


# -- reading whole answers from next-token distributions ------------------------------

#: What a token does to a number it follows: carries it on ("0", "05", ".5"), may be a
#: decimal point or a full stop (a bare "."), or ends it (" ", "/", "\n", " 5", "", ...).
NumberRole = Literal["continues", "point", "ends"]
#: The token classes whose total mass a next-token distribution reports (:class:`NextTokens`).
TokenClass = Literal["ends", "point", "no_digit"]
_DIGITS = frozenset("0123456789")


def number_role(text: str) -> NumberRole:
    """What a token with this text does to a number written just before it.

    Only ASCII digits carry a number on ("²" does not), and "." only when a digit
    follows within the token: a bare "." may be a full stop ("Score: 3. It is"),
    so the token after it decides (see :func:`read_whole_answers`).
    """
    if text[:1] in _DIGITS or (text[:1] == "." and text[1:2] in _DIGITS):
        return "continues"
    return "point" if text == "." else "ends"


def in_class(text: str, token_class: TokenClass) -> bool:
    """Whether a token with this text is in ``token_class``: ``ends`` and ``point`` as
    :func:`number_role` says; ``no_digit``: it does not begin with a digit (after a ".")."""
    if token_class == "no_digit":
        return text[:1] not in _DIGITS
    return number_role(text) == token_class


class NextTokens(Protocol):
    """The distribution of the next token at one position, as a backend can read it.

    In-process it is the whole vocabulary; a server gives its top alternatives
    only (:class:`ListedTokens`), and what is not among them is estimated: a
    token that is not listed counts as probability 0, but the mass left out
    counts towards the classes that end a number.
    """

    def texts(self, answer: str) -> Iterable[str]:
        """Distinct token texts among which are all that may write the start of ``answer``
        (more do no harm: :func:`answer_pieces` picks)."""
        ...

    def logprob(self, text: str) -> float:
        """log P(the next token's text is ``text``): every token with that text; -inf if none."""
        ...

    def class_logprob(self, token_class: TokenClass, *, listed_only: bool = False) -> float:
        """log P(the next token is in ``token_class``); ``listed_only``: without the estimated
        part (the same where the whole distribution is known)."""
        ...


#: The classes whose tokens are too many to be listed: after a number, what ends it ("\n", " ",
#: ",", " It", "/", end of text, ...) is spread over thousands of tokens; what continues it is
#: ten digits and a point, nearly always among a server's top 20.
ENDING_CLASSES: frozenset[TokenClass] = frozenset({"ends", "no_digit"})


@dataclass(frozen=True)
class ListedTokens:
    """A next-token distribution given as texts and log-probabilities (a server's top k).

    Tokens that share a text are summed (they are different ways of writing it).
    The mass the list leaves out (:attr:`unlisted`) is counted as an end: the end
    of a number is estimated as the complement of what continues it, which the
    list holds (item 3 of issue 28). Summing only the listed ending tokens gave
    P(the number ends | "3") ≈ 0.36 on SmolLM2 where the whole vocabulary gives
    ≈ 0.55, unevenly across digits. ``class_logprob(..., listed_only=True)``
    gives the listed sum, a lower bound; the estimate is an upper bound, and the
    two are ``unlisted`` apart.
    """

    logprobs: Mapping[str, float]

    @classmethod
    def summed(cls, pairs: Iterable[tuple[str, float]]) -> ListedTokens:
        """From (text, log-probability) pairs, one per token; tokens with one text summed."""
        found: dict[str, list[float]] = {}
        for text, logprob in pairs:
            found.setdefault(text, []).append(logprob)
        return cls({text: log_sum_exp(values) for text, values in found.items()})

    @property
    def unlisted(self) -> float:
        """The probability of the tokens the list leaves out: 1 - Σ listed, at least 0."""
        return max(0.0, 1.0 - math.fsum(math.exp(v) for v in self.logprobs.values()))

    def texts(self, answer: str) -> Iterable[str]:
        return self.logprobs.keys()

    def logprob(self, text: str) -> float:
        return self.logprobs.get(text, -math.inf)

    def class_logprob(self, token_class: TokenClass, *, listed_only: bool = False) -> float:
        listed = log_sum_exp(v for t, v in self.logprobs.items() if in_class(t, token_class))
        if listed_only or token_class not in ENDING_CLASSES or self.unlisted == 0.0:
            return listed
        return log_sum_exp((listed, math.log(self.unlisted)))


def answer_pieces(texts: Iterable[str], remaining: str, first: bool) -> list[tuple[str, str | None]]:
    """The token texts that write the start of ``remaining``, each with what is left after it.

    A piece writes a non-empty start of ``remaining``; at the answer's first
    token (``first``) it may begin with whitespace (" 3" and "3" write the same
    answer: item 2 of issue 13). A token that writes all of ``remaining`` and then
    whitespace ("3 ") has ended the answer itself: None is left.
    """
    pieces: list[tuple[str, str | None]] = []
    for text in texts:
        body = text.lstrip() if first else text
        core = body.rstrip()
        if not core:
            continue
        if core == body and remaining.startswith(core):
            pieces.append((text, remaining[len(core):]))
        elif core != body and core == remaining:
            pieces.append((text, None))
    return pieces


#: A reply prefix less likely than this is not read further (no forward pass, no request), by
#: default (a request's ``prune_below`` sets another). Every answer that begins with it has less
#: probability than this, so each prefix left out lowers ``covered_mass`` by less than this; all
#: of them together by ``unread_mass``, and a score (as a fraction of its range) moves by less
#: than ``unread_mass / covered_mass``. The same rule on every backend: the numbers agree
#: wherever the distributions read agree.
PRUNE_BELOW = 1e-9
#: The highest ``prune_below`` a request, a metric or ``[metrics_defaults]`` may set: above it a
#: score's stated bound (``unread_mass / covered_mass``) grows past what a score is read for.
MAX_PRUNE_BELOW = 0.01
#: What a prefix is read for: the text still to write before the answer ends ("" when the
#: answer must end here), or :data:`NO_DIGIT` after a bare "." (a full stop unless a digit follows).
Need = str | None
NO_DIGIT: Need = None
#: A log-probability as estimated and as listed only (see :class:`ListedTokens`).
_Bounds = tuple[float, float]
#: What a prefix's view leads to: (the need there, the next token's text, the need after it).
_Step = tuple[Need, str, Need]


@dataclass(frozen=True)
class WholeAnswers:
    """Each candidate's log-probability of being the whole answer (:func:`read_whole_answers`).

    ``logprobs`` is the estimate every score uses; ``listed`` counts only the
    ending tokens the views listed (equal to ``logprobs`` where they are whole
    vocabularies), a lower bound. ``unread`` is the probability of the prefixes
    left unread (pruned), which the candidates may lack.
    """

    logprobs: dict[str, float]
    listed: dict[str, float]
    unread: float = 0.0

    def distribution(self) -> CandidateDistribution:
        """The candidates renormalized (``whole_answers``), with the mass the lists left out."""
        listed = math.fsum(math.exp(v) for v in self.listed.values())
        estimated = math.fsum(math.exp(v) for v in self.logprobs.values())
        return renormalize(self.logprobs, whole_answers=True, unlisted_mass=max(0.0, estimated - listed),
                           unread_mass=self.unread)


def _reading(view: NextTokens, prefix: str, needs: Iterable[Need]) -> tuple[dict[Need, list[_Bounds]], list[_Step]]:
    """What ``view`` (after ``prefix``) gives each need at once, and the steps to read further."""
    terms: dict[Need, list[_Bounds]] = {need: [] for need in needs}
    steps: list[_Step] = []
    for need in terms:
        if need is NO_DIGIT or not need:
            token_class: TokenClass = "no_digit" if need is NO_DIGIT else "ends"
            terms[need].append((view.class_logprob(token_class), view.class_logprob(token_class, listed_only=True)))
            if need is not NO_DIGIT:
                steps.append((need, ".", NO_DIGIT))
            continue
        for text, rest in answer_pieces(view.texts(need), need, first=not prefix):
            if rest is None:  # the token ended the answer itself ("3 ")
                terms[need].append((view.logprob(text), view.logprob(text)))
            else:
                steps.append((need, text, rest))
    return terms, steps


def _children(
    view: NextTokens, log_p: float, steps: list[_Step], log_prune: float
) -> tuple[dict[str, dict[Need, None]], list[float]]:
    """The next tokens worth reading after a prefix of log-probability ``log_p``, in text order,
    each with the needs it is read for (ordered, not sets: sums in the same order in every process);
    and the log-probabilities of the prefixes the others would make, left unread as below ``log_prune``
    (in the order the steps first name them; a token of probability 0 is neither)."""
    children: dict[str, dict[Need, None]] = {}
    pruned: dict[str, float] = {}
    for _, text, there in steps:
        logprob = view.logprob(text)
        if logprob == -math.inf:
            continue
        if log_p + logprob >= log_prune:
            children.setdefault(text, {})[there] = None
        else:
            pruned.setdefault(text, log_p + logprob)
    return {text: children[text] for text in sorted(children)}, list(pruned.values())


def read_whole_answers(
    candidates: Sequence[str],
    after: Callable[[str], NextTokens],
    prune_below: float = PRUNE_BELOW,
    *,
    by_depth: Callable[[Sequence[str]], Sequence[NextTokens]] | None = None,
    read_ahead: bool = False,
) -> WholeAnswers:
    """Each candidate's log-probability of being the whole answer, from next-token distributions.

    ``after(prefix)`` is the next-token distribution once the reply has written
    ``prefix`` after the prefill ("" for the score position itself). A candidate
    is written by one or more tokens — every way of writing it counts, summed:
    "10" as "1" then "0", or as one token "10" where the vocabulary has one, or
    " 10" — and then the answer must end: P(c) · P(the answer ends | c) (see
    :func:`whole_answer_logprobs`). P(end | c) is the mass of the tokens that
    end a number, plus P(".") · P(no digit follows | c + "."), since a bare "."
    is a full stop unless a digit follows it. A candidate's surrounding
    whitespace is not part of the answer (the arena's " A" is "A", written
    with or without a space at the first token).

    One general mechanism for every backend: the in-process backend reads each
    ``after`` from the whole vocabulary, a server from its top alternatives
    (a continuation request with the prefix appended to the prefill), where the
    end is estimated (:class:`ListedTokens`). The
    prefixes are asked for in *preorder* of their trie, children in text order:
    each right after its parent or after a sibling's subtree, so a model that
    keeps the last text it read (llama.cpp's prefix reuse) reads each new prefix
    as one token on top of its parent, as it does when it generates. Each
    prefix is asked for once; one with probability 0, or below ``prune_below``
    (:data:`PRUNE_BELOW`), is not asked for, and the probability of those below
    ``prune_below`` is summed (``WholeAnswers.unread``).

    ``by_depth``, where given, reads the prefixes instead, one depth of the trie
    at a time (all first tokens, then all second ones, ...): it gets a depth's
    new prefixes and returns their distributions in that order (a backend that
    reads them as one batch); ``after`` is then never called. The same prefixes
    are read and the arithmetic is the same. ``read_ahead`` (with ``by_depth``)
    reads a prefix that writes a whole candidate together with its "." child,
    which the walk needs unless "." is unlikely there: one depth fewer (three
    reads for a 0-10 score instead of four), perhaps a few prefixes read for
    nothing, never one more needed.
    """
    log_prune = math.log(prune_below) if prune_below > 0.0 else -math.inf
    answers = {c: c.strip() or c for c in candidates}  # " A" is the answer "A", however it is spaced
    needs: dict[Need, None] = dict.fromkeys(answers.values())
    views = _read_by_depth(needs, by_depth, log_prune, read_ahead) if by_depth is not None else {}
    unread: list[float] = []  # the log-probabilities of the prefixes pruned

    def walk(prefix: str, log_p: float, needs: dict[Need, None]) -> dict[Need, _Bounds]:
        if prefix not in views:
            views[prefix] = after(prefix)
        view = views[prefix]
        terms, steps = _reading(view, prefix, needs)
        children, pruned = _children(view, log_p, steps, log_prune)
        unread.extend(pruned)
        read = {text: walk(prefix + text, log_p + view.logprob(text), there) for text, there in children.items()}
        for need, text, there in steps:
            if text in read:
                logprob = view.logprob(text)
                estimate, listed = read[text][there]
                terms[need].append((logprob + estimate, logprob + listed))
        return {need: (log_sum_exp(e for e, _ in found), log_sum_exp(low for _, low in found))
                for need, found in terms.items()}

    found = walk("", 0.0, needs)
    return WholeAnswers(logprobs={c: found[answer][0] for c, answer in answers.items()},
                        listed={c: found[answer][1] for c, answer in answers.items()},
                        unread=math.exp(log_sum_exp(unread)))


def _read_by_depth(
    needs: dict[Need, None], by_depth: Callable[[Sequence[str]], Sequence[NextTokens]], log_prune: float,
    read_ahead: bool = False,
) -> dict[str, NextTokens]:
    """The views :func:`read_whole_answers`'s walk asks for, read one depth of the trie at a time
    (``read_ahead``: with the "." after each prefix that ends a candidate, the prefix first)."""
    views: dict[str, NextTokens] = {}
    level: list[tuple[str, float, dict[Need, None]]] = [("", 0.0, needs)]
    while level:
        wanted = (p for prefix, _, there in level
                  for p in ((prefix, prefix + ".") if read_ahead and "" in there else (prefix,)))
        new = [prefix for prefix in dict.fromkeys(wanted) if prefix not in views]
        read = by_depth(new) if new else []
        if len(read) != len(new):
            raise ValueError(f"{len(read)} distributions read for the {len(new)} prefixes {new}")
        views.update(zip(new, read, strict=True))
        deeper: list[tuple[str, float, dict[Need, None]]] = []
        for prefix, log_p, there in level:
            view = views[prefix]
            _, steps = _reading(view, prefix, there)
            deeper += [(prefix + text, log_p + view.logprob(text), next_needs)
                       for text, next_needs in _children(view, log_p, steps, log_prune)[0].items()]
        level = deeper
    return views


def expected_value(probabilities: Mapping[str, float], values: Mapping[str, float]) -> float:
    """Σ p(c)·v(c); every candidate with a probability must have a value."""
    missing = set(probabilities) - set(values)
    if missing:
        raise ValueError(f"no value for candidates {sorted(missing)}")
    return sum(p * values[c] for c, p in probabilities.items())


def scale_to_unit(value: float, low: float, high: float) -> float:
    """Map a value on [low, high] linearly onto [0, 1]."""
    if high <= low:
        raise ValueError(f"empty range [{low}, {high}]")
    if not low - 1e-9 <= value <= high + 1e-9:
        raise ValueError(f"{value} is outside [{low}, {high}]")
    return min(1.0, max(0.0, (value - low) / (high - low)))

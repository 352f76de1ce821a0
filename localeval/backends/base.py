"""What every judge backend offers: the two operations metrics need, capabilities, identity.

A backend answers two kinds of request:

* :class:`JsonRequest` — generate JSON that conforms to a JSON Schema;
* :class:`DistributionRequest` — the probability of each candidate continuation
  right after a given start of the assistant's reply, from one forward pass.

Requests and replies are plain data (pydantic, frozen), so the cache can key on
them and reports can record them.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from localeval.distribution import MAX_PRUNE_BELOW, PRUNE_BELOW, CandidateDistribution


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class JsonRequest(BaseModel):
    """Generate a JSON value conforming to ``json_schema`` as the assistant's reply."""

    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...] = Field(min_length=1)
    json_schema: dict[str, Any]
    max_tokens: int = Field(512, gt=0)
    temperature: float = Field(0.0, ge=0.0)
    seed: int | None = 0

    @property
    def deterministic(self) -> bool:
        """Greedy decoding, or sampling with a fixed seed: the same request gives the same reply."""
        return self.temperature == 0.0 or self.seed is not None


class DistributionRequest(BaseModel):
    """The probability of each candidate at the position right after ``prefill``.

    ``prefill`` is the start of the assistant's reply (for example ``"Score: "``),
    written into the prompt so the next token is where the answer must be.
    Candidates may be several tokens long and may begin one another ("1" and
    "10"). A backend that can see past the candidate gives each the probability
    of being the *whole* answer, P(c) · P(the answer ends | c), so "1" holds
    neither "10" nor "15" (:func:`localeval.distribution.read_whole_answers`:
    in-process, and over HTTP in the ``continue`` and ``completion`` prefill modes).
    One that reads a single position gives P(the reply starts with c) (the
    ``grammar`` and ``instruction`` modes). ``CandidateDistribution.whole_answers`` says which.

    ``prune_below``: where whole answers are read, a reply prefix less likely than
    this is not read; the probability of those left out is the distribution's
    ``unread_mass``, which bounds how far the score is from the one every prefix
    would give. The default leaves out only prefixes below 1e-9.
    """

    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...] = Field(min_length=1)
    prefill: str = ""
    candidates: tuple[str, ...] = Field(min_length=1)
    prune_below: float = Field(PRUNE_BELOW, ge=0.0, le=MAX_PRUNE_BELOW)

    @model_serializer(mode="wrap")
    def _default_prune_left_out(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # At the default threshold a request dumps as it did before the option existed, so a cache
        # keyed on it keeps every reply it holds.
        data: dict[str, Any] = handler(self)
        if self.prune_below == PRUNE_BELOW:
            data.pop("prune_below", None)
        return data

    @model_validator(mode="after")
    def _distinct_candidates(self) -> DistributionRequest:
        if len(set(self.candidates)) != len(self.candidates) or "" in self.candidates:
            raise ValueError(f"candidates must be distinct and non-empty: {self.candidates}")
        return self


class Usage(BaseModel):
    """Tokens a call cost: read from the prompt, and generated or scored."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0


def summed(usages: list[Usage]) -> Usage:
    """What several calls cost together (a distribution read through several requests)."""
    return Usage(prompt_tokens=sum(u.prompt_tokens for u in usages),
                 completion_tokens=sum(u.completion_tokens for u in usages))


class JudgeUsage(BaseModel):
    """What judging cost: calls that reached the model, calls answered by the cache, and the
    tokens the model read (prompt) and wrote or scored (completion) in the calls it made."""

    model_config = ConfigDict(frozen=True)

    model_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: JudgeUsage) -> JudgeUsage:
        return JudgeUsage(**{name: getattr(self, name) + getattr(other, name) for name in JudgeUsage.model_fields})

    def __sub__(self, other: JudgeUsage) -> JudgeUsage:
        return JudgeUsage(**{name: getattr(self, name) - getattr(other, name) for name in JudgeUsage.model_fields})


class JsonReply(BaseModel):
    """A validated JSON value, with the raw text it was parsed from."""

    model_config = ConfigDict(frozen=True)

    value: Any
    text: str
    finish_reason: str
    usage: Usage = Usage()


class DistributionReply(BaseModel):
    """A distribution over the request's candidates."""

    model_config = ConfigDict(frozen=True)

    distribution: CandidateDistribution
    usage: Usage = Usage()


class TextRequest(BaseModel):
    """Generate free text as the assistant's reply: what a target model writes for a golden."""

    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...] = Field(min_length=1)
    max_tokens: int = Field(256, gt=0)
    temperature: float = Field(0.0, ge=0.0)
    seed: int | None = 0
    stop: tuple[str, ...] = ()

    @property
    def deterministic(self) -> bool:
        """Greedy decoding, or sampling with a fixed seed: the same request gives the same reply."""
        return self.temperature == 0.0 or self.seed is not None


class TextReply(BaseModel):
    """Generated text; ``finish_reason`` is "length" when the token limit cut it."""

    model_config = ConfigDict(frozen=True)

    text: str
    finish_reason: str
    usage: Usage = Usage()


class Capabilities(BaseModel):
    """What a backend can do, as data: metrics and the CLI check these, never the class."""

    model_config = ConfigDict(frozen=True)

    json_schema: bool = Field(description="Generation is constrained to a JSON Schema.")
    distribution: bool = Field(description="Candidate distributions from log-probabilities.")
    multi_token_candidates: bool = Field(
        description="Candidates of several tokens get their exact joint probability."
    )
    text: bool = Field(
        False, description="Free-text generation (generate_text): the backend can be a target."
    )
    max_top_logprobs: int | None = Field(
        None, description="Cap on log-probabilities per position; None when unlimited."
    )
    parallel_requests: int = Field(
        1, ge=1, description="Requests it serves at once; a run keeps this many in flight."
    )
    text_as_data: bool = Field(
        False, description="A message's text is tokenized as text: chat markup in a case (a special-token string) "
        "stays text and cannot forge a turn. False where the backend cannot promise it (a server parses it).",
    )
    notes: dict[str, str] = Field(
        default_factory=dict,
        description="Why a capability is missing or limited, by capability name (for people, not code).",
    )


class Fingerprint(BaseModel):
    """Everything about a backend that can change its output. Part of every cache key."""

    model_config = ConfigDict(frozen=True)

    kind: str
    model: str
    model_sha256: str | None = None
    runtime: str
    settings: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    """A judge model. Implementations: :mod:`localeval.backends.llamacpp`, ``ollama``,
    ``openai_compat``, and any kind a package registers (:mod:`localeval.backends.registry`);
    the cache wraps any."""

    @property
    def capabilities(self) -> Capabilities: ...

    @property
    def fingerprint(self) -> Fingerprint: ...

    def generate_json(self, request: JsonRequest) -> JsonReply: ...

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply: ...

    def close(self) -> None:
        """Free what the backend holds (a loaded model, connections); it is not used afterwards."""
        ...


@runtime_checkable
class TextBackend(Protocol):
    """A backend that also writes free text (:class:`TextRequest`): what a target needs.

    Optional beside :class:`Backend`; ``capabilities.text`` says whether a backend offers it.
    """

    def generate_text(self, request: TextRequest) -> TextReply: ...

"""The synthesizer's options: the ``[synthesizer]`` table of a config, checked key by key.

Defaults suit the shipped small judges: greedy decoding (so every call is cached and
a second run makes no model call), short chunks, a few inputs per context.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Evolution = Literal["reasoning", "multi_context", "comparison", "hypothetical"]
Grouping = Literal["adjacent", "lexical"]

#: What the quality filter's G-Eval judges an input by, unless the config says otherwise.
QUALITY_CRITERIA = (
    "The input is a clear, self-contained request that a user could send, and it can be "
    "answered from the context alone."
)


class Styling(BaseModel):
    """What the generated goldens look like; each is told to the judge when given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_format: str | None = Field(None, description="What inputs look like, e.g. 'a short question'.")
    expected_output_format: str | None = Field(None, description="What expected outputs look like.")
    task: str | None = Field(None, description="The task of the application under test.")
    scenario: str | None = Field(None, description="Who sends the inputs, and why.")


class SynthesizerOptions(BaseModel):
    """How ``localeval synthesize`` turns documents (or contexts) into goldens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chunk_size: int = Field(200, ge=16, le=8192, description="Tokens per chunk.")
    chunk_overlap: int = Field(20, ge=0, description="Tokens a chunk shares with the one before it.")
    context_size: int = Field(2, ge=1, le=16, description="Chunks per context.")
    grouping: Grouping = Field(
        "adjacent", description="adjacent: consecutive chunks of one document; lexical: the chunks sharing most words."
    )
    max_contexts_per_document: int = Field(4, ge=1, description="At most this many contexts from one document.")
    inputs_per_context: int = Field(2, ge=1, le=10, description="Inputs the judge writes from each context.")
    evolutions: tuple[Evolution, ...] = Field((), description="Rewrites applied to each input, in turn.")
    evolution_rounds: int = Field(1, ge=0, le=5, description="How many rewrites each input gets (with evolutions).")
    expected_output: bool = Field(True, description="Have the judge write an expected_output from the context.")
    quality_filter: bool = Field(True, description="Score each input with G-Eval and drop those below the threshold.")
    quality_threshold: float = Field(0.5, ge=0.0, le=1.0, description="Keep inputs scoring at least this (0-1).")
    quality_criteria: str = Field(QUALITY_CRITERIA, min_length=1)
    quality_scoring: Literal["logprobs", "top", "sampling"] = "logprobs"
    allow_fallback: bool = Field(False, description="Score by sampling when the judge gives no log-probabilities.")
    temperature: float = Field(0.0, ge=0.0, description="0: greedy; above, sampled with seed (both cached).")
    seed: int = 0
    styling: Styling = Field(default_factory=Styling)

    @model_validator(mode="after")
    def _check(self) -> SynthesizerOptions:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be below chunk_size ({self.chunk_size})")
        return self

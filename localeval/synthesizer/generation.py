"""The synthesizer's judge calls: inputs from a context, their evolutions, expected outputs.

Each call is a schema-constrained :class:`JsonRequest` (validated by the backend;
a reply cut off by the token limit is an error, never parsed), at the options'
temperature and seed: greedy by default, so the cache answers a second run. The
schemas bound every string, so a small model that starts repeating itself must stop,
and ``max_tokens`` leaves room for the longest reply at one character a token.
"""

from __future__ import annotations

from typing import Any

from localeval.backends.base import Backend, JsonRequest
from localeval.errors import BackendError
from localeval.prompts import RenderedPrompt, load_prompt
from localeval.synthesizer.contexts import Context
from localeval.synthesizer.options import Evolution, SynthesizerOptions

#: The shortest and longest input the judge may write, and the longest expected output.
INPUT_MIN_CHARS = 12
INPUT_CHARS = 200
OUTPUT_CHARS = 400


def text_schema(key: str, min_chars: int, max_chars: int) -> dict[str, Any]:
    """``{key: "..."}``: one string of ``min_chars`` to ``max_chars`` characters."""
    return {
        "type": "object",
        "properties": {key: {"type": "string", "minLength": min_chars, "maxLength": max_chars}},
        "required": [key],
        "additionalProperties": False,
    }


def inputs_schema(count: int) -> dict[str, Any]:
    """``{"inputs": [...]}``: exactly ``count`` strings of :data:`INPUT_MIN_CHARS` to :data:`INPUT_CHARS`."""
    item = {"type": "string", "minLength": INPUT_MIN_CHARS, "maxLength": INPUT_CHARS}
    inputs = {"type": "array", "items": item, "minItems": count, "maxItems": count}
    return {"type": "object", "properties": {"inputs": inputs}, "required": ["inputs"], "additionalProperties": False}


def tokens_for(chars: int, count: int = 1) -> int:
    """Room for ``count`` strings of ``chars`` characters at one character a token: a small model
    that repeats itself runs to the schema's ``maxLength``, often a character at a time."""
    return 32 + count * (chars + 16)


def generate_inputs(judge: Backend, context: Context, options: SynthesizerOptions) -> list[str]:
    """``options.inputs_per_context`` inputs written from ``context`` (blank ones dropped)."""
    count = options.inputs_per_context
    prompt = load_prompt("synthesizer/inputs").render(context=context.texts, count=count, **_styling(options))
    value = _ask(judge, prompt, inputs_schema(count), tokens_for(INPUT_CHARS, count), options)
    return [text.strip() for text in value["inputs"] if text.strip()]


def evolve(judge: Backend, text: str, evolution: Evolution, context: Context, options: SynthesizerOptions) -> str:
    """``text`` rewritten by ``evolution`` (more reasoning, several parts of the context, ...)."""
    prompt = load_prompt("synthesizer/evolve").render(
        context=context.texts, input=text, evolution=evolution, **_styling(options)
    )
    schema = text_schema("input", INPUT_MIN_CHARS, INPUT_CHARS)
    return _text(_ask(judge, prompt, schema, tokens_for(INPUT_CHARS), options), "input")


def write_expected_output(judge: Backend, text: str, context: Context, options: SynthesizerOptions) -> str:
    """The ideal output for input ``text``, from ``context`` alone."""
    prompt = load_prompt("synthesizer/expected_output").render(context=context.texts, input=text, **_styling(options))
    schema = text_schema("expected_output", 1, OUTPUT_CHARS)
    return _text(_ask(judge, prompt, schema, tokens_for(OUTPUT_CHARS), options), "expected_output")


def evolutions_for(index: int, options: SynthesizerOptions) -> list[Evolution]:
    """The evolutions input number ``index`` gets: round-robin through ``options.evolutions``,
    starting one further for each input, so a context's inputs are evolved differently."""
    chosen = options.evolutions
    if not chosen:
        return []
    return [chosen[(index + step) % len(chosen)] for step in range(options.evolution_rounds)]


def _ask(
    judge: Backend, prompt: RenderedPrompt, schema: dict[str, Any], max_tokens: int, options: SynthesizerOptions
) -> Any:
    request = JsonRequest(
        messages=prompt.messages, json_schema=schema, max_tokens=max_tokens,
        temperature=options.temperature, seed=options.seed,
    )
    return judge.generate_json(request).value


def _text(value: Any, key: str) -> str:
    text = str(value[key]).strip()
    if not text:
        raise BackendError(f"the judge wrote a blank {key.replace('_', ' ')}")
    return text


def _styling(options: SynthesizerOptions) -> dict[str, str | None]:
    return options.styling.model_dump()

"""The wire shapes of OpenAI-compatible servers: request fragments and reply readers. Pure functions."""

from __future__ import annotations

from typing import Any

from localeval.backends.base import Usage
from localeval.backends.http import HttpStatusError
from localeval.backends.scan import ScoredToken
from localeval.errors import BackendError


def response_format(dialect: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The ``response_format`` field of a chat request in ``dialect``."""
    if dialect == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": True}}
    return {"type": "json_object", "schema": schema}


def rejects_json_schema(err: HttpStatusError) -> bool:
    """Whether an error says the server does not know the json_schema response format."""
    body = err.body.lower()
    return err.status != 429 and ("json_schema" in body or "response_format" in body)


def server_runtime(props: Any, version: Any, entry: dict[str, Any]) -> str:
    """What the server says it is: llama-server's build (/props), a version (/version, vLLM), owned_by."""
    parts = [
        f"llama.cpp {props['build_info']}" if isinstance(props, dict) and props.get("build_info") else "",
        f"version {version['version']}" if isinstance(version, dict) and version.get("version") else "",
        f"owned_by {entry['owned_by']}" if entry.get("owned_by") else "",
    ]
    return ", ".join(p for p in parts if p) or "unknown"


def chat_tokens(choice: dict[str, Any]) -> list[ScoredToken] | None:
    """The generated tokens of a chat choice (``logprobs.content``); None when it has none."""
    stream = (choice.get("logprobs") or {}).get("content")
    if not isinstance(stream, list) or not stream:
        return None
    return [ScoredToken.from_json(item) for item in stream]


def completion_tokens(choice: dict[str, Any]) -> list[ScoredToken] | None:
    """The generated tokens of a completions choice; None when it has no log-probabilities.

    Two shapes: OpenAI's legacy one (llama-cpp-python), ``{tokens, token_logprobs,
    top_logprobs: [{text: logprob}]}``, and the chat one that llama-server uses for
    this endpoint too, ``{content: [{token, logprob, top_logprobs: [{token, logprob}]}]}``.
    """
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        return None
    content = logprobs.get("content")
    if isinstance(content, list) and content:
        return [ScoredToken.from_json(item) for item in content]
    texts, values, tops = (logprobs.get(k) for k in ("tokens", "token_logprobs", "top_logprobs"))
    if not (isinstance(texts, list) and texts and isinstance(values, list) and isinstance(tops, list)):
        return None
    return [
        ScoredToken.from_json({"token": text, "logprob": value,
                               "top_logprobs": [{"token": t, "logprob": v} for t, v in (top or {}).items()]})
        for text, value, top in zip(texts, values, tops)
    ]


def choices_in_order(reply: Any, count: int) -> list[dict[str, Any]]:
    """The ``count`` choices of a reply to as many prompts sent as a list, ordered by ``index``.

    :class:`BackendError` when there are not exactly one for each prompt: a server that
    takes one prompt only would otherwise be read as if it had answered them all.
    """
    choices = reply.get("choices") if isinstance(reply, dict) else None
    listed = [c for c in choices if isinstance(c, dict)] if isinstance(choices, list) else []
    indexed = {c.get("index"): c for c in listed}
    if len(listed) != count or set(indexed) != set(range(count)):
        raise BackendError(
            f"{count} prompts were sent in one request and the reply has {len(listed)} choices, indexed "
            f"{[c.get('index') for c in listed][:10]}: this server does not take a list of prompts; "
            "set batch_continuations = false"
        )
    return [indexed[index] for index in range(count)]


def reply_usage(reply: dict[str, Any]) -> Usage:
    """The token counts of a reply's ``usage``; zeros where the server leaves them out."""
    usage = reply.get("usage") or {}
    return Usage(
        prompt_tokens=usage.get("prompt_tokens") or 0, completion_tokens=usage.get("completion_tokens") or 0
    )

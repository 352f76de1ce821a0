"""The scripted judge under the name the tests have always used for it.

It is public now, as :class:`localeval.testing.ScriptedJudge`; tests import
``from scripted import ScriptedBackend``: ``tests/`` has no ``__init__.py``, so
pytest's default (prepend) import mode puts ``tests/`` on ``sys.path``.
"""

from typing import Any

from localeval.backends.base import JsonRequest
from localeval.testing.scripted import FULL_CAPABILITIES, ScriptedJudge, ScriptExhausted

ScriptedBackend = ScriptedJudge

__all__ = ["FULL_CAPABILITIES", "ScriptExhausted", "ScriptedBackend", "json_requests", "request_shape"]


def json_requests(judge: ScriptedJudge) -> list[JsonRequest]:
    """What the judge was asked, in order, checked to be JSON requests only."""
    assert all(isinstance(r, JsonRequest) for r in judge.requests)
    return judge.requests  # type: ignore[return-value]


def request_shape(request: JsonRequest) -> tuple[dict[str, Any], int]:
    """What bounds a reply: the request's schema and token limit."""
    return request.json_schema, request.max_tokens

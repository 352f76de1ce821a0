"""localeval's judges as a deepeval model: ``LocalevalModel``, for the ``model=`` of any deepeval metric.

::

    from deepeval.metrics import GEval
    from localeval.integrations.deepeval import LocalevalModel

    judge = LocalevalModel({"model": "qwen2.5-coder-1.5b-instruct", "n_threads": 4})
    metric = GEval(name="correctness", criteria="...", evaluation_params=[...], model=judge)

The judge is any localeval backend, described by a ``[backend]`` table as the CLI takes it (or a model
name: the in-process llama.cpp backend), loaded once per process behind localeval's cache
(:func:`localeval.integrations.promptfoo.process_judge`), so a rerun of the same metrics makes no model call.

* ``generate(prompt, schema)``: ``schema``'s JSON Schema constrains the judge's reply, which is validated
  before the pydantic instance is made; no invalid JSON reaches deepeval, and a reply that cannot be had
  (cut off by ``max_tokens``) is localeval's error, raised into the metric.
* ``generate_raw_response(prompt, top_logprobs)``: G-Eval's score with the judge's real log-probabilities at
  the score's position (:mod:`localeval.integrations.deepeval_replies`). A judge without log-probabilities
  raises ``AttributeError``, on which deepeval falls back to the raw score, and says so in one line (a
  ``RuntimeWarning``).

deepeval is an optional extra (``pip install 'localeval[deepeval]'``) imported when ``LocalevalModel`` is
first looked up, never at ``import localeval``. Set ``DEEPEVAL_TELEMETRY_OPT_OUT=1`` before deepeval is
imported, or it sends telemetry (docs/deepeval.md).
"""

from __future__ import annotations

import asyncio
import functools
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from localeval.backends.base import Backend, Capabilities, DistributionRequest, TextBackend, summed
from localeval.backends.registry import parse_backend
from localeval.config import CacheConfig
from localeval.errors import BackendError, ConfigError, first_problem
from localeval.integrations.deepeval_replies import (
    DEFAULT_MAX_CHARS,
    ONE_CHARACTER_SCORES,
    SCORES,
    RawResponse,
    json_request,
    raw_response,
    score_request,
    score_start,
    text_request,
)
from localeval.integrations.promptfoo import process_judge

__all__ = ["DEFAULT_MAX_CHARS", "DEFAULT_MAX_TOKENS", "DeepevalBridge", "LocalevalModel"]

#: Tokens a reply may take: deepeval's truths and claims lists are long, and a cut-off reply is an error.
DEFAULT_MAX_TOKENS = 1024
MISSING_DEEPEVAL = ("localeval's deepeval model needs deepeval 4 in this environment: "
                    "pip install 'localeval[deepeval]'")


class DeepevalBridge:
    """What ``LocalevalModel`` does, without deepeval's base class: deepeval's model calls answered by a
    localeval judge.

    ``backend``: a ``[backend]`` table (``{"kind": "ollama", "model": "qwen2.5:7b"}``) or a model name
    (in-process llama.cpp); None: the default model. ``cache``: a ``[cache]`` table (``enabled``, ``dir``);
    the CLI's folder unless it says otherwise. ``judge``: a localeval backend you made (a scripted judge in
    a test) instead of ``backend``, used as it is. ``max_tokens``: the most tokens a reply may take (a reply cut
    off there is an error). ``max_chars``: the most characters of a string the schema leaves unbounded (None:
    unbounded).
    """

    def __init__(self, backend: Mapping[str, Any] | str | None = None, *, judge: Backend | None = None,
                 cache: Mapping[str, Any] | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
                 max_chars: int | None = DEFAULT_MAX_CHARS) -> None:
        if judge is not None and (backend is not None or cache is not None):
            raise ValueError("give a backend table (and a cache table) or a judge, not both")
        self.judge = judge if judge is not None else loaded_judge(backend, cache)
        self.max_tokens, self.max_chars = max_tokens, max_chars

    # -- deepeval's model interface ----------------------------------------------------

    def load_model(self) -> Backend:
        return self.judge

    def get_model_name(self) -> str:
        fingerprint = self.judge.fingerprint
        return f"{fingerprint.model} (localeval {fingerprint.kind})"

    def generate(self, prompt: str, schema: type[BaseModel] | None = None) -> BaseModel | str:
        """An instance of ``schema`` from the judge's constrained, validated JSON; free text without one."""
        if schema is None:
            return self._text(prompt)
        reply = self.judge.generate_json(json_request(prompt, schema, self.max_tokens, self.max_chars))
        return schema.model_validate(reply.value)

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None) -> BaseModel | str:
        return await asyncio.to_thread(self.generate, prompt, schema)

    def generate_raw_response(self, prompt: str, top_logprobs: int = 20) -> tuple[RawResponse, float]:
        """G-Eval's reply and the judge's log-probabilities at its score, with its cost (0: a local judge)."""
        capabilities = self.judge.capabilities
        if not capabilities.distribution:
            message = no_logprobs_message(self.get_model_name(), capabilities)
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            raise AttributeError(message)  # deepeval's G-Eval catches it and keeps the raw score
        request = score_request(prompt, self.max_tokens, self.max_chars)
        reply = self.judge.generate_json(request)
        candidates = SCORES if capabilities.multi_token_candidates else ONE_CHARACTER_SCORES
        read = self.judge.candidate_distribution(DistributionRequest(
            messages=request.messages, prefill=reply.text[:score_start(reply)], candidates=candidates))
        usage = summed([reply.usage, read.usage])
        return raw_response(reply, read.distribution, top_logprobs, self.get_model_name(), usage), 0.0

    async def a_generate_raw_response(self, prompt: str, top_logprobs: int = 20) -> tuple[RawResponse, float]:
        return await asyncio.to_thread(self.generate_raw_response, prompt, top_logprobs)

    def supports_log_probs(self) -> bool:
        return self.judge.capabilities.distribution

    def supports_structured_outputs(self) -> bool:
        return self.judge.capabilities.json_schema

    def supports_json_mode(self) -> bool:
        return self.judge.capabilities.json_schema

    def supports_multimodal(self) -> bool:
        return False

    def _text(self, prompt: str) -> str:
        judge = self.judge
        if not (isinstance(judge, TextBackend) and judge.capabilities.text):
            raise BackendError(f"{self.get_model_name()} cannot write free text; deepeval asked for it without a "
                               "schema")
        return judge.generate_text(text_request(prompt, self.max_tokens)).text


def loaded_judge(backend: Mapping[str, Any] | str | None, cache: Mapping[str, Any] | None) -> Backend:
    """The judge a ``[backend]`` table or a model name describes, loaded once per process behind the cache."""
    table = {"model": backend} if isinstance(backend, str) else dict(backend or {})
    options = parse_backend(table, "backend")
    try:
        settings = CacheConfig.model_validate(dict(cache or {}))
    except ValidationError as err:
        where, problem = first_problem(err)
        raise ConfigError(f"cache.{where}: {problem}") from err
    return process_judge(options, settings, "backend")


def no_logprobs_message(model: str, capabilities: Capabilities) -> str:
    """The one line said when deepeval's G-Eval asks a judge without log-probabilities for them."""
    why = capabilities.notes.get("distribution")
    return (f"deepeval's G-Eval: {model} gives no token log-probabilities" + (f" ({why})" if why else "")
            + "; G-Eval keeps the raw score it wrote")


# -- the deepeval model class, made when first looked up -------------------------------

if TYPE_CHECKING:
    LocalevalModel = DeepevalBridge


def __getattr__(name: str) -> Any:
    if name == "LocalevalModel":
        return model_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def model_class() -> type[DeepevalBridge]:
    """``LocalevalModel``: :class:`DeepevalBridge` as a subclass of deepeval's ``DeepEvalBaseLLM``."""
    try:
        from deepeval.models import DeepEvalBaseLLM  # type: ignore[import-not-found]
    except ImportError as err:
        raise ImportError(MISSING_DEEPEVAL) from err

    class LocalevalModel(DeepevalBridge, DeepEvalBaseLLM):  # type: ignore[misc]
        __doc__ = DeepevalBridge.__doc__

        def __init__(self, backend: Mapping[str, Any] | str | None = None, *, judge: Backend | None = None,
                     cache: Mapping[str, Any] | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
                     max_chars: int | None = DEFAULT_MAX_CHARS) -> None:
            DeepevalBridge.__init__(self, backend, judge=judge, cache=cache, max_tokens=max_tokens, max_chars=max_chars)
            DeepEvalBaseLLM.__init__(self, self.get_model_name())  # deepeval's: the name, load_model()

    LocalevalModel.__module__, LocalevalModel.__qualname__ = __name__, "LocalevalModel"
    return LocalevalModel

"""A stand-in for the default judge, for code that loads it as a user's would (docs/python-api.md's
walkthrough, run in a notebook's kernel by tests/test_python_api_docs.py): :func:`install` puts it
where :func:`localeval.api.evaluate` loads a judge's model."""

from __future__ import annotations

from contextlib import ExitStack

from rich.console import Console

from localeval.backends.base import Backend, DistributionReply, DistributionRequest, JsonReply, JsonRequest
from localeval.backends.cache import CachedBackend, open_cache
from localeval.backends.options import BackendOptions
from localeval.config import CacheConfig
from localeval.paths import Paths
from localeval.testing import ScriptedJudge

#: The ``[backend]`` table of every judge loaded since :func:`install`.
LOADED: list[BackendOptions] = []


class StandIn(ScriptedJudge):
    """Every score alike (the candidates equally likely) and every reason the same sentence: the
    walkthrough's mechanics, not a model's judgement."""

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        self.logprobs.append(dict.fromkeys(request.candidates, 0.0))
        return super().candidate_distribution(request)

    def generate_json(self, request: JsonRequest) -> JsonReply:
        self.json_values.append({"reason": "The stand-in judge scores every answer alike."})
        return super().generate_json(request)


def load_judge(table: BackendOptions, cache: CacheConfig, paths: Paths, environ: object, stack: ExitStack,
               status: Console, *, where: str) -> Backend:
    """localeval.judge.load_judge, with the stand-in where the model would load (behind the same cache,
    saying so on the same console)."""
    LOADED.append(table)
    store = stack.enter_context(open_cache(cache.dir or paths.cache)) if cache.enabled else None
    with status.status("loading the stand-in judge"):
        judge = StandIn()
    return CachedBackend(judge, store) if store is not None else judge


def install() -> None:
    """From now on in this process, every judge :func:`localeval.api.evaluate` loads is the stand-in."""
    import localeval.api.judges

    localeval.api.judges.load_judge = load_judge  # type: ignore[assignment]

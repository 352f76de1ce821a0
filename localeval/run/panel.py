"""The judges of a run: the default one and the named ones, and which metric asks which.

A metric asks the judge its ``judge`` option names (a ``[judges.NAME]`` table in a
config), or the default judge (``[backend]``) when it names none. Each judge is
counted on its own (calls, cache hits, tokens: :class:`~localeval.backends.cache.CachedBackend`),
keeps its own cache keys (its fingerprint is part of them) and its own number of
requests in flight.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from localeval.backends.base import Backend, Fingerprint, JudgeUsage
from localeval.backends.cache import CachedBackend
from localeval.errors import ConfigError
from localeval.metrics.base import Metric

#: The key of the default judge among the named ones.
DEFAULT_JUDGE: str | None = None


@dataclass(frozen=True)
class JudgePanel:
    """Every judge a run may ask, each behind a counting wrapper, by name (None: the default)."""

    judges: Mapping[str | None, CachedBackend]

    @classmethod
    def of(
        cls, metrics: Sequence[Metric], default: Backend | None, named: Mapping[str, Backend] | None = None
    ) -> JudgePanel:
        """The panel for ``metrics``; a :class:`ConfigError` for a metric whose judge is not there."""
        given: dict[str | None, Backend] = {name: judge for name, judge in (named or {}).items()}
        if default is not None:
            given[DEFAULT_JUDGE] = default
        for metric in metrics:
            if metric.needs_judge and metric.judge_name not in given:
                raise ConfigError(_missing(metric, sorted(n for n in given if n is not None)))
        return cls({name: _counted(judge) for name, judge in given.items()})

    def judge_of(self, metric: Metric) -> CachedBackend | None:
        """The judge ``metric`` asks (None for a metric that needs none and names none)."""
        return self.judges.get(metric.judge_name)

    def usage(self) -> JudgeUsage:
        """What every judge has cost so far, added up."""
        return sum((j.stats.usage() for j in self.judges.values()), JudgeUsage())

    def thread_usage(self) -> JudgeUsage:
        """What every judge has cost on this thread so far, added up."""
        return sum((j.thread_stats().usage() for j in self.judges.values()), JudgeUsage())

    def fingerprints(self) -> dict[str, Fingerprint]:
        """The named judges' fingerprints (the default judge's is the report's ``backend``)."""
        return {name: judge.fingerprint for name, judge in self.judges.items() if name is not None}

    @property
    def default(self) -> CachedBackend | None:
        return self.judges.get(DEFAULT_JUDGE)


def _counted(judge: Backend) -> CachedBackend:
    """``judge`` behind a counting wrapper: the cache is one; a judge without it gets one that caches nothing."""
    return judge if isinstance(judge, CachedBackend) else CachedBackend(judge, None)


def _missing(metric: Metric, names: list[str]) -> str:
    if metric.judge_name is None:
        return f"metric '{metric.display_name}' needs a judge, and the run has no default judge"
    known = ", ".join(names) or "none"
    return f"metric '{metric.display_name}': judge {metric.judge_name!r} is not configured (judges: {known})"

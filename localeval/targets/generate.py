"""Generation: a target writes ``actual_output`` for every golden that lacks it, once.

Each output (or the error that stopped it) is a :class:`Generation`, handed to
``record`` as soon as it exists: a run journals it, so a resumed run never
generates twice. A failure for one golden (the server timed out, the prompt does
not fit) is that golden's error; the others go on.

A target that serves several requests at once (``capabilities.parallel_requests``:
an HTTP backend's ``max_concurrency``) gets that many in flight, on a pool of
threads, as the runner does for a judge; one that serves one (the in-process
llama.cpp model) runs on the calling thread, in dataset order. Either way
``record`` and ``progress`` are called on the calling thread, one output at a time,
in the order they finish (the journal keys each by its golden's index, so the order
does not matter on resume); the dataset keeps its order. A request is the same
whoever sends it, so its cache key is too. On Ctrl-C nothing new starts, and the
requests in flight are waited for and recorded: a resumed run does not repeat them; a second
Ctrl-C stops at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from pydantic import BaseModel, ConfigDict

from localeval.backends.base import Backend, JudgeUsage, Message, TextBackend
from localeval.backends.cache import CachedBackend
from localeval.data.case import Case, TestCase
from localeval.data.dataset import Dataset
from localeval.data.results import TargetRecord
from localeval.errors import BackendError, ConfigError
from localeval.inflight import InFlight, ctrl_c_held
from localeval.targets.options import TargetOptions
from localeval.targets.template import PromptTemplate, render_all


class Generation(BaseModel):
    """What the target wrote for one golden, or why it could not."""

    model_config = ConfigDict(frozen=True)

    output: str | None = None
    error: str | None = None
    finish_reason: str | None = None
    duration_s: float = 0.0


@dataclass
class Outputs:
    """The dataset with the generated outputs in place, the cases the target failed, and the record."""

    dataset: Dataset
    failed: dict[int, str]
    record: TargetRecord


def needing_output(dataset: Dataset) -> list[int]:
    """The indexes of the single-turn cases without an ``actual_output`` (goldens); conversations
    have their turns already."""
    return [i for i, case in enumerate(dataset.cases) if isinstance(case, TestCase) and case.actual_output is None]


def planned(dataset: Dataset, todo: list[int]) -> Dataset:
    """``dataset`` as it will be once generated: a stand-in output where one will be, so metrics'
    input checks run before any model call."""
    cases: list[Case] = [c.model_copy(update={"actual_output": "<generated>"}) if i in set(todo) else c
                         for i, c in enumerate(dataset.cases)]
    return Dataset(cases, dataset.locations, dataset.source)


def generate_outputs(
    dataset: Dataset,
    options: TargetOptions,
    template: PromptTemplate,
    target: Backend,
    *,
    done: Mapping[int, Generation] | None = None,
    record: Callable[[int, Generation], None] = lambda index, generation: None,
    progress: Callable[[int, int], None] = lambda finished, total: None,
    interrupted: Callable[[int], object] = lambda in_flight: None,
) -> Outputs:
    """Fill every missing ``actual_output``; ``done`` holds generations already journaled.

    Every prompt is rendered first (a missing field raises before any model call).
    ``record`` and ``progress`` are called on this thread as each output finishes
    (see the module's docstring for the order); ``interrupted`` with the number of requests in
    flight when Ctrl-C came (they are waited for; a second Ctrl-C stops at once).
    """
    todo = needing_output(dataset)
    prompts = render_all(template, dataset, todo)
    if not isinstance(target, TextBackend) or not target.capabilities.text:
        raise ConfigError(f"target {options.name!r}: the {target.fingerprint.kind} backend does not generate free text")
    target = _counted(target)  # its usage is reported with the cache off too
    done = dict(done or {})
    resumed = sum(1 for i in todo if i in done)
    before = _usage(target)
    start = time.perf_counter()
    finished = resumed
    progress(finished, len(todo))

    def finish(index: int, generation: Generation) -> None:
        nonlocal finished
        done[index] = generation
        record(index, generation)
        finished += 1
        progress(finished, len(todo))

    missing = {i: prompts[i] for i in todo if i not in done}
    _generate_all(target, options, missing, target.capabilities.parallel_requests, finish, interrupted)
    after = _usage(target)
    failed = {i: f"the target failed: {done[i].error}" for i in todo if done[i].error is not None}
    cases: list[Case] = [_filled(case, done.get(i)) for i, case in enumerate(dataset.cases)]
    return Outputs(
        dataset=Dataset(cases, dataset.locations, dataset.source),
        failed=failed,
        record=TargetRecord(
            name=options.name, fingerprint=target.fingerprint, template_sha256=template.sha256,
            settings={"temperature": options.temperature, "max_tokens": options.max_tokens,
                      "seed": options.seed, "stop": options.stop},
            generated=len(todo) - resumed - len(failed), resumed=resumed, errored=len(failed),
            given=len(dataset) - len(todo), duration_s=time.perf_counter() - start,
            usage=after - before if after is not None and before is not None else None,
            errors={i: done[i].error or "" for i in failed},
        ),
    )


def _generate_all(target: TextBackend, options: TargetOptions, prompts: Mapping[int, tuple[Message, ...]],
                  parallel: int, finish: Callable[[int, Generation], None],
                  interrupted: Callable[[int], object]) -> None:
    """Generate for every golden of ``prompts`` (in their order), up to ``parallel`` requests in
    flight; ``finish`` gets each on this thread as it is written.

    On Ctrl-C nothing new starts; ``interrupted`` is told how many requests are in flight, and
    they are waited for (the server works on them anyway) and what they write is still handed
    to ``finish``, so a resumed run does not ask for them again (:mod:`localeval.inflight`).
    """
    if parallel <= 1 or len(prompts) <= 1:
        for index, messages in prompts.items():
            generation = _generate(target, options, messages)
            with ctrl_c_held():  # journaled and counted together, or not at all
                finish(index, generation)
        return
    pending = iter(prompts.items())
    calls: InFlight[int, Generation] = InFlight("localeval-target")
    try:
        while True:
            while len(calls) < parallel and (item := next(pending, None)) is not None:
                calls.start(item[0], partial(_generate, target, options, item[1]))
            if not calls:
                return
            calls.hand_next(finish)
    except KeyboardInterrupt:
        calls.drain(finish, interrupted)
        raise


def _generate(target: TextBackend, options: TargetOptions, messages: tuple[Message, ...]) -> Generation:
    start = time.perf_counter()
    try:
        reply = target.generate_text(options.request(messages))
    except BackendError as err:
        return Generation(error=str(err), duration_s=time.perf_counter() - start)
    return Generation(output=reply.text, finish_reason=reply.finish_reason, duration_s=time.perf_counter() - start)


def _filled(case: Case, generation: Generation | None) -> Case:
    if not isinstance(case, TestCase) or generation is None or generation.output is None:
        return case
    return case.model_copy(update={"actual_output": generation.output})


def _counted(target: Backend) -> CachedBackend:
    """``target`` behind a counting wrapper: the cache is one; without it, one that caches nothing."""
    return target if isinstance(target, CachedBackend) else CachedBackend(target, None)


def _usage(target: Backend) -> JudgeUsage | None:
    return target.stats.usage() if isinstance(target, CachedBackend) else None

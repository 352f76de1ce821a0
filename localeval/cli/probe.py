"""``localeval backends check``: what a config's judges and targets support, found by asking them.

A judge is probed with what metrics ask (schema-constrained JSON, a score distribution);
a target with what it is asked (free text).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import Any, Literal

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from localeval.backends.base import Backend, DistributionRequest, JsonRequest, Message, TextBackend, TextRequest
from localeval.backends.options import BackendOptions
from localeval.config import CacheConfig
from localeval.errors import BackendError
from localeval.judge import load_judge
from localeval.paths import Paths
from localeval.reports.terminal import print_line, print_table

_QUESTION = (Message(role="user", content="Is 2 + 2 = 4? Rate the statement's truth from 1 to 5."),)
_JSON = JsonRequest(
    messages=_QUESTION,
    json_schema={"type": "object", "properties": {"true": {"type": "boolean"}}, "required": ["true"]},
    max_tokens=32,
)
_SCORES = DistributionRequest(messages=_QUESTION, prefill="Score: ", candidates=tuple("12345"))
_ANSWER = TextRequest(messages=(Message(role="user", content="What is the capital of France?"),), max_tokens=16)

#: What a backend table is for: a judge ([backend], [judges.NAME]) or a target ([target], [[targets]]).
Purpose = Literal["judge", "target"]


def check_all(
    tables: Mapping[str, tuple[BackendOptions, Purpose]], paths: Paths, environ: Mapping[str, str], out: Console,
    err: Console,
) -> int:
    """:func:`check` each backend table of a config, by where it is (``backend``, ``judges.NAME``,
    ``targets.NAME.backend``); 0 if all worked."""
    codes = []
    for where, (table, purpose) in tables.items():
        if len(tables) > 1:
            print_line(out, "[bold]" + escape(f"[{where}]") + "[/]")
        codes.append(check(table, paths, environ, out, err, where=where, purpose=purpose))
    return max(codes, default=0)


def check(
    backend: BackendOptions, paths: Paths, environ: Mapping[str, str], out: Console, err: Console,
    where: str = "backend", purpose: Purpose = "judge",
) -> int:
    """Print the backend's identity, capabilities and a live probe of each operation its purpose
    needs; 0 if all worked."""
    with ExitStack() as stack:
        judge = load_judge(backend, CacheConfig(enabled=False), paths, environ, stack, err, where=where)
        print_table(out, _identity(judge))
        probes = [("free text", lambda: _text_probe(judge))] if purpose == "target" else [
            ("schema-constrained JSON", lambda: _json_probe(judge)),
            ("score distribution", lambda: _distribution_probe(judge)),
        ]
        results = [(name, *_timed(run)) for name, run in probes]
    table = Table(title="Live probes")
    for column in ("operation", "result", "seconds"):
        table.add_column(column)
    for name, ok, text, seconds in results:
        table.add_row(name, ("[green]" if ok else "[red]") + escape(text) + "[/]", f"{seconds:.2f}")
    print_table(out, table)
    return 0 if all(ok for _, ok, _, _ in results) else 1


def _identity(judge: Backend) -> Table:
    fingerprint, caps = judge.fingerprint, judge.capabilities
    table = Table(title="Backend", show_header=False)
    rows: list[tuple[str, Any]] = [
        ("kind", fingerprint.kind), ("model", fingerprint.model),
        ("model sha256", fingerprint.model_sha256 or "unknown"), ("runtime", fingerprint.runtime),
        *[(f"setting {k}", v) for k, v in fingerprint.settings.items()],
        ("JSON Schema constraint", caps.json_schema), ("log-probabilities", caps.distribution),
        ("multi-token candidates", caps.multi_token_candidates),
        ("top log-probabilities", caps.max_top_logprobs or "unlimited"),
        *[(f"note on {k}", v) for k, v in caps.notes.items()],
    ]
    for key, value in rows:
        table.add_row(key, escape(str(value)))
    return table


def _timed(run: Callable[[], str]) -> tuple[bool, str, float]:
    start = time.perf_counter()
    try:
        text, ok = run(), True
    except BackendError as error:
        text, ok = f"{type(error).__name__}: {error}", False
    return ok, text, time.perf_counter() - start


def _json_probe(judge: Backend) -> str:
    return f"valid: {judge.generate_json(_JSON).text.strip()}"


def _distribution_probe(judge: Backend) -> str:
    dist = judge.candidate_distribution(_SCORES).distribution
    shown = ", ".join(f"{c}: {p:.2f}" for c, p in dist.probabilities.items())
    return f"{shown} (covered mass {dist.covered_mass:.0%})"


def _text_probe(backend: Backend) -> str:
    if not isinstance(backend, TextBackend) or not backend.capabilities.text:
        raise BackendError(f"the {backend.fingerprint.kind} backend does not generate free text")
    reply = backend.generate_text(_ANSWER)
    return f"{reply.text.strip()!r} (finish: {reply.finish_reason})"

"""The HTML report: one self-contained file that opens from disk with no network.

The page is built here as escaped HTML fragments and poured into the template
``assets/report.html``, with ``assets/report.css`` and ``assets/report.js``
inlined. Nothing refers to a URL, so the file works on an air-gapped machine,
and everything shows without JavaScript (the script only filters, sorts, and
opens the case named in the address: ``report.html#case-3``).
"""

from __future__ import annotations

import json
from html import escape
from importlib.resources import files
from pathlib import PurePath
from string import Template

from localeval.data.results import MetricResult, MetricSummary, RunReport
from localeval.reports.arena_html import render_arena
from localeval.reports.cases_html import render_cases
from localeval.reports.figures import Figure, mean_score, pass_rate
from localeval.reports.rules import pass_rule
from localeval.reports.svg import histogram
from localeval.reports.targets_html import render_targets
from localeval.reports.trust import trust_lines


def render_html(report: RunReport) -> str:
    """The report as one HTML page with its styles and script inline."""
    template = Template(_asset("report.html"))
    return template.substitute(
        title=escape(f"localeval report · run {report.run_id}"),
        style=_asset("report.css"),
        script=_asset("report.js"),
        header=_header(report),
        trust=_trust(report),
        summary=_summary(report),
        arena=_arena(report) + render_targets(report),
        cases=render_cases(report),
        version=escape(report.localeval_version),
    )


def _trust(report: RunReport) -> str:
    """The banner: each judge's check on the families the run used; its loudest line sets its colour."""
    lines = trust_lines(report.trust)
    if not lines:
        return ""
    level = next(lvl for lvl in ("alarm", "warn", "ok") if any(line[0] == lvl for line in lines))
    body = "".join(f'<p class="{lvl}">{escape(text)}</p>' for lvl, text in lines)
    return f'<section class="trust {level}" role="status" aria-label="how far to trust the judges">{body}</section>'


def _arena(report: RunReport) -> str:
    articles = render_arena(report)
    return f'<section class="arena" aria-label="pairwise comparisons">{articles}</section>' if articles else ""


def _asset(name: str) -> str:
    return files("localeval.reports").joinpath("assets", name).read_text(encoding="utf-8")


def _header(report: RunReport) -> str:
    """What a reader wants first (the run, its size and cost, the dataset), then the fingerprints folded
    under one line that names the judge: the hashes and settings are for reproducing a run, not reading it."""
    stats = report.stats
    facts: list[tuple[str, str]] = [
        ("run", report.run_id),
        ("created", report.created_at),
        ("duration", f"{stats.duration_s:.1f} s"),
        ("cases", str(len(report.cases))),
    ]
    if stats.model_calls is not None:
        facts.append(("model calls", str(stats.model_calls)))
    if stats.cache_hits is not None:
        facts.append(("cache hits", str(stats.cache_hits)))
    if stats.prompt_tokens is not None:
        facts.append(("tokens", f"{stats.prompt_tokens} prompt, {stats.completion_tokens} completion"))
    if report.dataset is not None:
        facts.append(("dataset", PurePath(report.dataset.path).name))  # its whole path is in the fold
    if stats.resumed:
        facts.append(("resumed", f"{stats.resumed} results"))
    config = ""
    if report.config:
        text = json.dumps(report.config, indent=2, ensure_ascii=False, default=str)
        config = ('<details class="config"><summary>configuration</summary>'
                  f'<pre class="json">{escape(text)}</pre></details>')
    return f'<dl class="meta">{_facts(facts)}</dl>{_fingerprints(report)}{config}'


def _fingerprints(report: RunReport) -> str:
    """The dataset's sha256 and every judge's fingerprint, in a ``<details>`` whose summary names the judge."""
    facts = [("dataset", report.dataset.path), ("dataset sha256", report.dataset.sha256)] if report.dataset is not None else []
    judges = ({"": report.backend} if report.backend is not None else {}) | report.judges
    for name, fingerprint in judges.items():
        prefix = f"judge {name}: " if name else ""
        facts += [(f"{prefix}backend", fingerprint.kind), (f"{prefix}model", fingerprint.model),
                  (f"{prefix}runtime", fingerprint.runtime)]
        if fingerprint.model_sha256:
            facts.append((f"{prefix}model sha256", fingerprint.model_sha256))
        facts += [(f"{prefix}setting {k}", _text(v)) for k, v in fingerprint.settings.items()]
    if not facts:
        return ""
    said = [f"judge {report.backend.model} ({report.backend.kind})"] if report.backend is not None else []
    if report.judges:
        said.append(f"{len(report.judges)} named judge{'' if len(report.judges) == 1 else 's'}")
    line = ", ".join(said) or "no judge"
    return (f'<details class="fingerprints"><summary>{escape(line)} · fingerprints</summary>'
            f'<dl class="meta">{_facts(facts)}</dl></details>')


def _facts(facts: list[tuple[str, str]]) -> str:
    return "".join(f'<div><dt>{escape(k)}</dt><dd{_long(v)}>{escape(v)}</dd></div>' for k, v in facts)


def _summary(report: RunReport) -> str:
    cards = [_card(s, [r for c in report.cases for r in c.results if r.metric == s.metric]) for s in report.summary]
    return "".join(cards) or '<p class="empty">No metrics.</p>'


def _card(summary: MetricSummary, results: list[MetricResult]) -> str:
    kinds = sorted({r.kind for r in results} - {summary.metric})
    kind = f' <span class="kind">{escape(", ".join(kinds))}</span>' if kinds else ""
    threshold = results[0].threshold if results else None
    rule = pass_rule(results[0]) if results else ">="
    scores = [r.score for r in results if r.score is not None]
    counts = (
        f'<span class="pass">{summary.passed} passed</span> · <span class="fail">{summary.failed} failed</span>'
        f' · <span class="error">{summary.errored} errored</span> · <span>{summary.cases} cases</span>'
    )
    chart = "" if threshold is None else histogram(scores, threshold)
    symbol = "≤" if rule == "<=" else "≥"
    passes = "" if threshold is None else f'<div class="rule">passes at score {symbol} {threshold:g}</div>'
    return (
        f'<article class="card"><h3>{escape(summary.metric)}{kind}</h3>'
        f'<div class="figures">{_figure(pass_rate(summary, "–"), "pass rate")}'
        f'{_figure(mean_score(summary, "–"), "mean score")}</div>'
        f'<div class="counts">{counts}</div>{chart}{passes}</article>'
    )


def _figure(figure: Figure, what: str) -> str:
    """A figure big, its 95% interval (when the report has one) small beside it."""
    ci = f'<span class="ci" title="{escape(figure.note)}">{escape(figure.interval)}</span>' if figure.interval else ""
    return f"<div><b>{escape(figure.value)}</b>{ci}<small>{what}</small></div>"


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _long(value: str) -> str:
    return ' class="long"' if len(value) > 40 else ""

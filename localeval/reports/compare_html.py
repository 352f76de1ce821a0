"""The comparison of two runs as one self-contained HTML page (``localeval compare --html``).

Drawn from the :class:`~localeval.reports.compare.Comparison` alone, so anything that holds one
(the command, a viewer) renders the same page. Like the run's report (``html.py``) it is
escaped HTML fragments poured into a template, ``assets/compare.html``, with the report's
stylesheet and ``assets/compare.css`` inline: nothing refers to a URL, and there is no script.
Every text from the runs (names, outputs, errors, paths) goes through :func:`html.escape`.

The page: the two runs, a card per metric with its verdict and the numbers it rests on, then
each matched case that changed (its results before and after, its output's word diff with
``<del>`` and ``<ins>``), then the names of the unchanged cases and of those only in one run.

:func:`write_comparison` writes the page and the comparison's JSON (``Comparison.to_json``) to files.
"""

from __future__ import annotations

from html import escape
from importlib.resources import files
from pathlib import Path
from string import Template

from localeval.errors import InputError
from localeval.files import write_text_atomically
from localeval.reports.compare import CHANGE_WORDS, CaseComparison, Comparison, ResultChange
from localeval.reports.terminal import visible
from localeval.reports.textdiff import DiffSpan
from localeval.reports.verdict import MetricComparison, signed

_TAGS = {"removed": "del", "added": "ins"}


def comparison_html(comparison: Comparison) -> str:
    """The comparison as one HTML page with its styles inline."""
    return Template(_asset("compare.html")).substitute(
        title=escape(f"localeval comparison · {comparison.run_a} → {comparison.run_b}"),
        style=_asset("report.css") + _asset("compare.css"),
        header=_header(comparison),
        note=_note(comparison),
        metrics="".join(_card(m) for m in comparison.metrics) or '<p class="empty">No metric in both runs.</p>',
        cases=_cases(comparison),
        rest=_rest(comparison),
        version=escape(comparison.localeval_version),
    )


def write_comparison(comparison: Comparison, *, json_path: Path | None = None,
                     html_path: Path | None = None) -> list[Path]:
    """Write the comparison's JSON and its HTML page where given, each atomically, its folder created;
    the paths written. A file that cannot be written is an ``InputError`` naming it."""
    written = []
    for path, render in ((json_path, comparison.to_json), (html_path, lambda: comparison_html(comparison))):
        if path is None:
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomically(path, render())
        except OSError as err:
            raise InputError(f"{path}: cannot write the comparison ({err.strerror or err})") from err
        written.append(path)
    return written


def _asset(name: str) -> str:
    return files("localeval.reports").joinpath("assets", name).read_text(encoding="utf-8")


def _header(comparison: Comparison) -> str:
    changed = sum(1 for c in comparison.cases if c.changed)
    facts = [
        ("A (before)", comparison.run_a),
        ("B (after)", comparison.run_b),
        ("matched by", comparison.matched_by),
        ("cases compared", str(comparison.cases_compared)),
        ("changed", str(changed)),
    ]
    if comparison.tolerance:
        facts.append(("tolerance", f"{comparison.tolerance:g}"))
    sides = [("A", comparison.dataset_a), ("B", comparison.dataset_b)]
    if comparison.dataset_a == comparison.dataset_b:
        sides = [("", comparison.dataset_a)]  # the same file: said once
    for side, dataset in sides:
        if dataset is not None:
            facts += [(f"dataset {side}".strip(), dataset.path), (f"sha256 {side}".strip(), dataset.sha256)]
    items = "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in facts)
    return f'<dl class="meta">{items}</dl>'


def _note(comparison: Comparison) -> str:
    found = comparison.dataset_note()
    if found is None:
        return ""
    level, text = found
    return f'<p class="dataset-note {level}" role="status">{escape(level.capitalize())}: {escape(text)}</p>'


def _card(metric: MetricComparison) -> str:
    change = metric.mean_change
    delta = "–" if metric.mean_delta is None else signed(metric.mean_delta)
    interval = "too few cases" if change is None else f"95% CI {signed(change.low)} to {signed(change.high)}"
    verdict = metric.verdict
    return (
        f'<article class="card verdict-card {_slug(verdict)}"><h3>{escape(metric.metric)}</h3>'
        f'<p class="verdict {_slug(verdict)}">{escape(verdict)}</p>'
        f'<div class="figures"><div><b>{_score(metric.mean_a)} → {_score(metric.mean_b)}</b><small>mean score</small></div>'
        f"<div><b>{delta}</b><small>{interval}</small></div>"
        f"<div><b>{_rate(metric.pass_rate_a)} → {_rate(metric.pass_rate_b)}</b><small>pass rate</small></div></div>"
        f'<div class="counts"><span class="fail">{metric.regressions} pass → fail</span> · '
        f'<span class="pass">{metric.fixes} fail → pass</span> · <span>McNemar p = {metric.mcnemar_p:.3g}</span>'
        f" · <span>{metric.scored} cases scored in both</span></div>"
        f'<p class="why">{escape(metric.reason())}</p></article>'
    )


def _cases(comparison: Comparison) -> str:
    changed = [c for c in comparison.cases if c.changed]
    if not changed:
        return '<p class="empty">No case changed: every output and every result is as it was.</p>'
    return "".join(_case(c) for c in changed)


def _case(case: CaseComparison) -> str:
    tags = ['<span class="tag output">output changed</span>'] if case.output_changed else []
    tags += [f'<span class="tag {r.kind}">{escape(r.metric)}: {CHANGE_WORDS[r.kind]}</span>'
             for r in case.results if r.kind is not None]
    return (
        f'<article class="compared-case" id="case-{case.index_a + 1}">'
        f'<header><h3>{escape(case.label)}</h3>{"".join(tags)}</header>'
        f"{_results(case.results)}{_output(case)}</article>"
    )


def _results(results: list[ResultChange]) -> str:
    if not results:
        return ""
    rows = "".join(
        f'<tr class="{r.kind or "same"}"><td>{escape(r.metric)}</td><td class="n">{_side(r.score_a, r.passed_a, r.error_a)}</td>'
        f'<td class="n">{_side(r.score_b, r.passed_b, r.error_b)}</td>'
        f'<td class="n">{"" if r.delta is None else signed(r.delta)}</td>'
        f"<td>{CHANGE_WORDS[r.kind] if r.kind else ''}</td></tr>"
        for r in results
    )
    return (
        '<table class="scores"><thead><tr><th>metric</th><th>A</th><th>B</th><th>Δ</th><th>change</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def _side(score: float | None, passed: bool | None, error: str | None) -> str:
    if error is not None:
        return f'<span class="error" title="{escape(error)}">error</span>'
    if score is None:
        return "–"
    word = "pass" if passed else "fail"
    return f'<span class="{word}">{score:.3f} {word}</span>'


def _output(case: CaseComparison) -> str:
    if not case.output_changed:
        return ""
    if case.diff:
        return f'<h4>output</h4><div class="text diff">{_diff(case.diff)}</div>'
    sides = (("A", case.output_a), ("B", case.output_b))
    shown = "".join(
        f'<h4>output in {side}</h4>'
        + ('<p class="empty">none</p>' if text is None else f'<div class="text">{escape(text)}</div>')
        for side, text in sides
    )
    return f'<div class="outputs">{shown}</div>'


def _diff(spans: list[DiffSpan]) -> str:
    """``<del>`` and ``<ins>`` around the changed text; a change of whitespace alone is written as its escapes."""
    parts = []
    for span in spans:
        tag = _TAGS.get(span.op)
        if tag is None:
            parts.append(escape(span.text))
            continue
        text = visible(span.text) if span.text.isspace() else span.text
        parts.append(f"<{tag}>{escape(text)}</{tag}>")
    return "".join(parts)


def _rest(comparison: Comparison) -> str:
    unchanged = [c.label for c in comparison.cases if not c.changed]
    groups = [
        ("unchanged", f"{len(unchanged)} unchanged cases", unchanged),
        ("only-a", f"{len(comparison.cases_only_in_a)} cases only in A ({comparison.run_a})", comparison.cases_only_in_a),
        ("only-b", f"{len(comparison.cases_only_in_b)} cases only in B ({comparison.run_b})", comparison.cases_only_in_b),
        ("metrics-only", "metrics only in one run",
         [f"{m} (A)" for m in comparison.metrics_only_in_a] + [f"{m} (B)" for m in comparison.metrics_only_in_b]),
    ]
    return "".join(
        f'<details class="names {key}"><summary>{escape(title)}</summary>'
        f'<ul>{"".join(f"<li>{escape(n)}</li>" for n in names)}</ul></details>'
        for key, title, names in groups if names
    )


def _slug(verdict: str) -> str:
    return "none" if verdict.startswith("no ") else verdict


def _score(score: float | None) -> str:
    return "–" if score is None else f"{score:.3f}"


def _rate(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"

"""The HTML report's targets section: who wrote the outputs, and several targets side by side.

With one target: its identity (model, fingerprint, template hash, what generation cost).
With several: per metric, each target's pass rate and mean score; then a case-by-case
matrix, one row per golden: its input, its expected output, and one column per target, each
cell the target's output and its scores, so the outputs read side by side. The better output
of a row is marked (:func:`better_target`).
"""

from __future__ import annotations

import math
from html import escape

from localeval.data.results import CaseResult, MetricResult, RunReport, TargetRecord


def render_targets(report: RunReport) -> str:
    """The section, or "" when no target wrote the outputs."""
    if not report.targets:
        return ""
    body = _identities(report.targets)
    if report.target_summaries:
        body += _by_metric(report) + _matrix(report)
    return f'<section class="targets" aria-label="targets"><h2>Targets</h2>{body}</section>'


def _identities(records: list[TargetRecord]) -> str:
    rows = "".join(
        f"<tr><td>{escape(r.name)}</td><td>{escape(r.fingerprint.kind)}</td><td>{escape(r.fingerprint.model)}</td>"
        f'<td class="hash">{escape((r.fingerprint.model_sha256 or "–")[:16])}</td>'
        f'<td class="hash">{escape(r.template_sha256[:16])}</td>'
        f'<td class="n">{r.generated}</td><td class="n">{r.resumed}</td><td class="n">{r.errored}</td>'
        f'<td class="n">{_per_output(r)}</td></tr>'
        for r in records
    )
    return (
        '<table class="identities"><caption>Who wrote the outputs</caption><thead><tr><th>target</th><th>kind</th>'
        '<th>model</th><th>model sha256</th><th>template sha256</th><th class="n">generated</th>'
        '<th class="n">resumed</th><th class="n">failed</th><th class="n">s per output</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def _per_output(record: TargetRecord) -> str:
    return f"{record.duration_s / record.generated:.2f}" if record.generated else "–"


def _by_metric(report: RunReport) -> str:
    names = list(report.target_summaries)
    head = "".join(f'<th class="n">{escape(n)}</th>' for n in names)
    rows = ""
    for i, summary in enumerate(report.summary):
        cells = ""
        for name in names:
            mine = report.target_summaries[name][i]
            rate = "–" if mine.pass_rate is None else f"{mine.pass_rate:.0%}"
            mean = "–" if mine.mean_score is None else f"{mine.mean_score:.3f}"
            errors = f' <span class="error">{mine.errored} errored</span>' if mine.errored else ""
            cells += f'<td class="n">{rate} · {mean}{errors}</td>'
        rows += f"<tr><td>{escape(summary.metric)}</td>{cells}</tr>"
    return (f'<table class="by-target"><caption>Pass rate · mean score, per target</caption>'
            f"<thead><tr><th>metric</th>{head}</tr></thead><tbody>{rows}</tbody></table>")


def _matrix(report: RunReport) -> str:
    names = list(report.target_summaries)
    goldens: dict[str, dict[str, CaseResult]] = {}
    for case in report.cases:  # golden-major: the same golden's cases are adjacent, one per target
        key = case.location or case.name or str(case.index)
        goldens.setdefault(key, {})[case.target or ""] = case
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    rows = ""
    for by_target in goldens.values():
        first = next(iter(by_target.values()))
        label = escape(first.name or first.location or "")
        question = escape(str(first.inputs.get("input", "")))
        expected = first.inputs.get("expected_output")
        expected_cell = f'<td class="expected">{escape(str(expected))}</td>' if expected is not None else "<td>–</td>"
        better = better_target(by_target)
        cells = "".join(_cell(by_target.get(name), better == name) for name in names)
        rows += f'<tr><th scope="row">{label}<div class="input">{question}</div></th>{expected_cell}{cells}</tr>'
    return (f'<table class="matrix"><caption>Case by case: each target\'s output and scores; '
            "<span class=\"better-mark\">better</span> marks the output with the highest mean score on the row's "
            "metrics</caption>"
            f"<thead><tr><th>golden</th><th>expected output</th>{head}</tr></thead><tbody>{rows}</tbody></table>")


def better_target(by_target: dict[str, CaseResult]) -> str | None:
    """The target whose output did best on one golden: the highest mean over the golden's metrics of each
    score, taken as 1 − score where lower is better (hallucination). Only targets with every metric scored
    compete (an error says nothing of the output); None with fewer than two of them, or a tie at the top."""
    means: dict[str, float] = {}
    for name, case in by_target.items():
        scores = [_goodness(r.score, r.lower_is_better) for r in case.results if r.score is not None]
        if case.results and len(scores) == len(case.results):
            means[name] = math.fsum(scores) / len(scores)
    ranked = sorted(means.values(), reverse=True)
    if len(ranked) < 2 or ranked[0] == ranked[1]:
        return None
    return next(name for name, mean in means.items() if mean == ranked[0])


def _goodness(score: float, lower_is_better: bool) -> float:
    return 1.0 - score if lower_is_better else score


def _cell(case: CaseResult | None, better: bool) -> str:
    if case is None:
        return "<td>–</td>"
    output = case.inputs.get("actual_output")
    text = f'<div class="output">{escape(str(output))}</div>' if output is not None else ""
    mark = '<span class="better-mark">better</span>' if better else ""
    scores = "".join(_score(r) for r in case.results)
    klass = ' class="better"' if better else ""
    return f'<td id="case-{case.index + 1}-target"{klass}>{mark}{text}<ul class="scores">{scores}</ul></td>'


def _score(result: MetricResult) -> str:
    if result.errored:
        return f'<li class="error">{escape(result.metric)}: {escape(result.error or "")}</li>'
    verdict = "pass" if result.passed else "fail"
    return f'<li class="{verdict}">{escape(result.metric)}: {result.score:.3f} {verdict}</li>'

"""Each metric over the finished runs of one dataset, in the order they started: its mean score and pass
rate as an inline SVG line chart, and the same numbers as a table.

Pure: listed runs in, HTML out. Only finished runs count (an unfinished run's figures are those of the
results it got to). Every text from the runs goes through :func:`html.escape`; the chart draws
nothing it did not compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from urllib.parse import urlencode

from localeval.reports.run_index import MetricFigures, RunEntry
from localeval.viewer.pages import Page, framed, mean_text, rate_text, run_path, started_text

#: The two lines of a metric's chart: the figure each draws and its name.
SERIES = (("mean", "mean score"), ("rate", "pass rate"))


def trends_page(entries: Sequence[RunEntry], sha256: str) -> Page:
    """Each metric's chart over the finished runs of the dataset with this sha256, then their table."""
    runs = dataset_runs(entries, sha256)
    if not runs:
        return framed("trends", "", f'<p class="empty">No finished run of a dataset with sha256 {escape(sha256)}.</p>'
                      '<p><a href="/trends">every dataset</a></p>', status=404)
    files = sorted({Path(r.dataset).name for r in runs if r.dataset})
    header = (f'<p class="count">{len(runs)} finished runs of {escape(", ".join(files) or "a dataset")}, sha256 '
              f'<span class="id">{escape(sha256)}</span>, oldest first. '
              '<span class="legend"><span class="mean">━ mean score</span> · <span class="rate">╌ pass rate</span>'
              "</span>, both from 0 to 1.</p>")
    metrics = metric_names(runs)
    charts = "".join(f'<section class="trend"><h2>{escape(m)}</h2>{trend_chart(m, runs)}</section>' for m in metrics)
    return framed("trends", header, charts + trend_table(metrics, runs))


def datasets_page(entries: Sequence[RunEntry]) -> Page:
    """Every dataset of the finished runs, with how many runs it has and a link to its trends."""
    counts: dict[str, list[RunEntry]] = {}
    for e in entries:
        if e.status == "finished" and e.dataset_sha256:
            counts.setdefault(e.dataset_sha256, []).append(e)
    rows = "".join(
        f'<tr><td><a class="id" href="/trends?{escape(urlencode({"dataset": sha}))}">{escape(sha[:12])}</a></td>'
        f"<td>{escape(', '.join(sorted({Path(r.dataset).name for r in runs if r.dataset})))}</td>"
        f'<td class="n">{len(runs)}</td><td>{started_text(runs[0])}</td></tr>'
        for sha, runs in counts.items()
    )
    main = ('<table class="runs"><thead><tr><th>sha256</th><th>file</th><th>finished runs</th><th>latest (UTC)</th>'
            f"</tr></thead><tbody>{rows}</tbody></table>" if rows else '<p class="empty">No finished runs yet.</p>')
    return framed("trends by dataset", "<p>The datasets of the finished runs, newest first.</p>", main)


def dataset_runs(entries: Sequence[RunEntry], sha256: str) -> list[RunEntry]:
    """The finished runs of the dataset with this sha256, oldest first."""
    runs = [e for e in entries if e.status == "finished" and e.dataset_sha256 == sha256]
    return sorted(runs, key=lambda e: (_started(e), e.run_id))


def metric_names(runs: Sequence[RunEntry]) -> list[str]:
    """Every metric of ``runs``, in the order they first appear."""
    return list(dict.fromkeys(m.metric for run in runs for m in run.metrics))


def figures(run: RunEntry, metric: str) -> MetricFigures | None:
    return next((m for m in run.metrics if m.metric == metric), None)


def trend_chart(metric: str, runs: Sequence[RunEntry], *, width: int = 640, height: int = 160) -> str:
    """A line chart of ``metric``'s mean score and pass rate over ``runs`` (oldest first), both on [0, 1];
    a run without the metric, or with nothing scored, breaks the line."""
    plot_top, plot_bottom = 8, height - 18
    step = width / max(len(runs), 1)

    def point(i: int, value: float) -> tuple[float, float]:
        return (i + 0.5) * step, plot_bottom - value * (plot_bottom - plot_top)

    parts = [
        f'<line class="axis" x1="0" y1="{plot_bottom}" x2="{width}" y2="{plot_bottom}"/>',
        f'<line class="grid" x1="0" y1="{plot_top}" x2="{width}" y2="{plot_top}"/>',
        f'<text class="tick start" x="2" y="{plot_top + 10}">1</text>',
        f'<text class="tick start" x="2" y="{plot_bottom - 2}">0</text>',
    ]
    for kind, label in SERIES:
        values = [_value(figures(run, metric), kind) for run in runs]
        for segment in _segments(values):
            xy = " ".join("{:.1f},{:.1f}".format(*point(i, v)) for i, v in segment)
            parts.append(f'<polyline class="trend {kind}" points="{xy}"/>')
        for i, (run, value) in enumerate(zip(runs, values, strict=True)):
            if value is None:
                continue
            x, y = point(i, value)
            tip = f"{started_text(run)} {run.name or run.run_id}: {label} {_shown(kind, value)}"
            parts.append(f'<circle class="trend {kind}" cx="{x:.1f}" cy="{y:.1f}" r="3">'
                         f"<title>{escape(tip)}</title></circle>")
    parts += [f'<text class="tick middle" x="{(i + 0.5) * step:.1f}" y="{height - 4}">{i + 1}</text>'
              for i in range(len(runs)) if len(runs) <= 30 or i % (len(runs) // 10 + 1) == 0]
    label = f"{metric}: mean score and pass rate over {len(runs)} runs, oldest first"
    # No xmlns: inline SVG in HTML needs none, and the page names no URL.
    return (f'<svg class="chart trend" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            f'role="img" aria-label="{escape(label)}">{"".join(parts)}</svg>')


def trend_table(metrics: Sequence[str], runs: Sequence[RunEntry]) -> str:
    """The runs, oldest first (numbered as the charts' ticks), with each metric's mean score and pass rate."""
    head = "".join(f"<th>{escape(m)}<br><small>mean · pass rate</small></th>" for m in metrics)
    rows = "".join(
        f'<tr><td class="n">{i}</td><td>{escape(started_text(run))}</td>'
        f'<td><a href="{escape(run_path(run.run_id))}">{escape(run.run_id)}</a></td>'
        f"<td>{escape(run.name or '')}</td>"
        + "".join(f'<td class="n">{_cell(figures(run, m))}</td>' for m in metrics) + "</tr>"
        for i, run in enumerate(runs, 1)
    )
    return (f'<table class="runs trend"><thead><tr><th>#</th><th>started (UTC)</th><th>run</th><th>name</th>'
            f"{head}</tr></thead><tbody>{rows}</tbody></table>")


def _value(found: MetricFigures | None, kind: str) -> float | None:
    if found is None:
        return None
    return found.mean_score if kind == "mean" else found.pass_rate


def _segments(values: list[float | None]) -> list[list[tuple[int, float]]]:
    """The runs of consecutive values that are not None, each with its index."""
    segments: list[list[tuple[int, float]]] = [[]]
    for i, value in enumerate(values):
        if value is None:
            segments.append([])
        else:
            segments[-1].append((i, value))
    return [s for s in segments if len(s) > 1]


def _cell(found: MetricFigures | None) -> str:
    return "–" if found is None else f"{mean_text(found.mean_score)} · {rate_text(found.pass_rate)}"


def _shown(kind: str, value: float) -> str:
    return mean_text(value) if kind == "mean" else rate_text(value)


def _started(entry: RunEntry) -> datetime:
    started = entry.started
    if started is None:
        return datetime.min.replace(tzinfo=UTC)
    return started if started.tzinfo else started.replace(tzinfo=UTC)

"""What the viewer answers: a :class:`Page` (status, HTML, the inline scripts it may run), drawn in the
viewer's frame (``assets/page.html``) or taken whole from the reports (a run's report, a comparison) with
the viewer's links put on top.

Every text from the runs goes through :func:`html.escape`. A page names the inline scripts it runs by
their sha256, which the server's Content-Security-Policy allows and nothing else: a script that got into
a page any other way does not run.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from dataclasses import dataclass
from datetime import UTC
from html import escape
from http import HTTPStatus
from importlib.metadata import version
from importlib.resources import files
from string import Template
from urllib.parse import quote

from localeval.data.results import RunReport
from localeval.reports.compare import Comparison
from localeval.reports.compare_html import comparison_html
from localeval.reports.html import render_html
from localeval.reports.run_index import RunEntry

#: The links on top of every page.
NAV = '<nav class="viewer"><a href="/">all runs</a><a href="/trends">trends by dataset</a></nav>'


@dataclass(frozen=True)
class Page:
    """An answer: its HTTP status, its body, and the inline scripts it runs (their CSP hash sources)."""

    status: int
    body: str
    scripts: tuple[str, ...] = ()
    polls: bool = False  #: it fetches /api/version (the list of runs)
    content_type: str = "text/html; charset=utf-8"


def framed(title: str, header: str, main: str, *, status: int = 200, version_tag: str = "",
           script: str | None = None) -> Page:
    """A page in the viewer's frame; ``title`` is text, ``header`` and ``main`` are HTML already escaped;
    ``script`` the name of an asset to run inline."""
    code = _asset("viewer", script) if script else ""
    body = Template(_asset("viewer", "page.html")).substitute(
        title=escape(f"localeval · {title}"), style=_asset("reports", "report.css") + _asset("viewer", "viewer.css"),
        version=escape(version_tag), nav=NAV, heading=escape(title), header=header, main=main,
        localeval=escape(version("localeval")), script=f"<script>{code}</script>" if code else "",
    )
    return Page(status, body, scripts=(script_hash(code),) if code else (), polls=script == "poll.js")


def error_page(status: int, message: str) -> Page:
    """The one line that says what went wrong, under the status's name."""
    main = f'<p class="problem" role="alert">{escape(message)}</p><p><a href="/">all runs</a></p>'
    return framed(f"{status} {HTTPStatus(status).phrase}", "", main, status=status)


def report_page(report: RunReport) -> Page:
    """The run's HTML report, as ``report.html`` has it, its script allowed and the viewer's links on top."""
    page = render_html(report)
    block = f"<script>\n{_asset('reports', 'report.js')}\n</script>"
    scripts = (script_hash(block[len("<script>"):-len("</script>")]),) if block in page else ()
    return Page(200, _with_nav(page), scripts=scripts)


def comparison_page(comparison: Comparison) -> Page:
    """The comparison's HTML page (``localeval compare --html``), the viewer's links on top."""
    return Page(200, _with_nav(comparison_html(comparison)))


def unfinished_page(entry: RunEntry) -> Page:
    """A run that has not written its report: how far it got, each metric's figures so far, how to finish it."""
    facts = [("run", entry.run_id), ("name", entry.name or ""), ("started", entry.created_at or "-"),
             ("status", entry.status), ("results", entry.note), ("dataset", entry.dataset or "")]
    header = '<dl class="meta">' + "".join(
        f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in facts if v) + "</dl>"
    rows = "".join(
        f'<tr><td>{escape(m.metric)}</td><td class="n">{m.passed}</td><td class="n">{m.failed}</td>'
        f'<td class="n">{m.errored}</td><td class="n">{rate_text(m.pass_rate)}</td><td class="n">{mean_text(m.mean_score)}</td></tr>'
        for m in entry.metrics
    )
    main = (
        f'<p class="changed">This run has not finished: it has no report yet. If it has stopped, '
        f"finish it with <code>localeval run --resume {escape(entry.run_id)}</code>.</p>"
        '<table class="runs"><thead><tr><th>metric</th><th>passed</th><th>failed</th><th>errored</th>'
        f"<th>pass rate</th><th>mean score</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return framed(f"run {entry.run_id} ({entry.status})", header, main)


def run_path(run_id: str) -> str:
    """The address of a run's page: its id percent-encoded (a folder name that is not UTF-8 as its bytes)."""
    return "/runs/" + quote(run_id, safe="", errors="surrogateescape")


def script_hash(code: str) -> str:
    """The CSP source that allows the inline script ``code``: ``'sha256-…'``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(code.encode("utf-8")).digest()).decode("ascii") + "'"


def _with_nav(page: str) -> str:
    """A report's page with the viewer's links first in its body (the page's own text is escaped, so its
    first ``<body>`` is its template's)."""
    style = f"<style>{_asset('viewer', 'viewer.css')}</style>"
    return page.replace("<body>", f"<body>\n{style}{NAV}", 1)


@functools.cache
def _asset(package: str, name: str) -> str:
    return files(f"localeval.{package}").joinpath("assets", name).read_text(encoding="utf-8")


def rate_text(value: float | None) -> str:
    """A pass rate as the viewer shows it: ``67%``, ``–`` when nothing was scored."""
    return "–" if value is None else f"{value:.0%}"


def mean_text(value: float | None) -> str:
    """A mean score as the viewer shows it: ``0.667``, ``–`` when nothing was scored."""
    return "–" if value is None else f"{value:.3f}"


def started_text(entry: RunEntry) -> str:
    """When the run started, in UTC to the minute; ``-`` when that cannot be told."""
    started = entry.started
    return started.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if started else "-"

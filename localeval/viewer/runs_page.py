"""The list of runs (``/``): the filters, a table of runs newest first, and two columns of radio buttons
that pick run A and run B for ``/compare``. It reloads itself when the folder changes (``assets/poll.js``).

Filters are query parameters, the fields of :class:`~localeval.reports.run_index.RunFilter`: ``name``
(a part of the name, any case), ``tag``, ``dataset`` (a part of its file name, or the start of its
sha256), ``status``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from urllib.parse import urlencode

from localeval.errors import InputError, unknown_name
from localeval.reports.run_index import STATUSES, RunEntry, RunFilter
from localeval.viewer.catalog import Listing
from localeval.viewer.pages import Page, framed, mean_text, rate_text, run_path, started_text

#: The query parameters that filter the list.
FILTERS = ("name", "tag", "dataset", "status")


def run_filter(query: Mapping[str, str]) -> RunFilter:
    """The filter the query asks for; an unknown status is an ``InputError``."""
    status = query.get("status") or None
    if status is not None and status not in STATUSES:
        raise InputError(f"status: {unknown_name('status', status, STATUSES)}")
    return RunFilter(name=query.get("name") or None, tag=query.get("tag") or None,
                     dataset=query.get("dataset") or None, status=status)


def runs_page(listing: Listing, query: Mapping[str, str], runs: Path) -> Page:
    """The runs ``query`` lets through, newest first, with the filters and the comparison's pickers."""
    wanted = run_filter(query)
    shown = [e for e in listing.entries if wanted.matches(e)]
    count = (f"{len(listing.entries)} runs in {runs}" if len(shown) == len(listing.entries)
             else f"{len(shown)} of {len(listing.entries)} runs in {runs}")
    header = f'<p class="count">{escape(count)}</p>{_filters(query)}'
    changed = ('<p id="changed" class="changed" role="status" hidden>The runs changed since this page was '
               'loaded: <a href="">reload</a> to see them.</p>')
    return framed("runs", header, changed + _table(shown, bool(listing.entries)), version_tag=listing.version,
                  script="poll.js")


def _filters(query: Mapping[str, str]) -> str:
    fields = "".join(
        f'<label>{what}<input type="text" name="{what}" value="{escape(query.get(what, ""))}"></label>'
        for what in ("name", "tag", "dataset")
    )
    options = "".join(f'<option value="{s}"{" selected" if query.get("status", "") == s else ""}>{s or "any"}</option>'
                      for s in ("", *STATUSES))
    return (f'<form class="filters" method="get" action="/">{fields}'
            f'<label>status<select name="status">{options}</select></label>'
            '<button type="submit">filter</button><a href="/">clear</a></form>')


def _table(entries: Sequence[RunEntry], any_run: bool) -> str:
    if not entries:
        return f'<p class="empty">{"No run matches the filters." if any_run else "No runs yet."}</p>'
    heads = ("A", "B", "run", "started (UTC)", "dataset", "judges", "metrics: pass rate, mean", "status", "tags",
             "config")
    rows = "".join(_row(e) for e in entries)
    return (
        '<form class="pick" method="get" action="/compare">'
        "<p>Pick run A (before) and run B (after), then "
        '<button type="submit">compare A → B</button></p>'
        f'<table class="runs"><thead><tr>{"".join(f"<th>{h}</th>" for h in heads)}</tr></thead>'
        f"<tbody>{rows}</tbody></table></form>"
    )


def _row(e: RunEntry) -> str:
    value = escape(e.run_id)
    off = "" if e.status == "finished" else " disabled"  # only finished runs have cases to compare
    picks = "".join(f'<td class="pick"><input type="radio" name="{side}" value="{value}"{off} '
                    f'aria-label="{side}: {value}"></td>' for side in ("a", "b"))
    metrics = "".join(f"<li>{escape(m.metric)} {rate_text(m.pass_rate)} {mean_text(m.mean_score)}</li>" for m in e.metrics)
    note = f' <span class="note">{escape(e.note)}</span>' if e.note else ""
    return (
        f'<tr class="{e.status}" data-run="{value}">{picks}'
        f'<td><a class="run id" href="{escape(run_path(e.run_id))}">{value}</a>'
        f'{f"<br>{escape(e.name)}" if e.name else ""}</td>'
        f"<td>{started_text(e)}</td><td>{_dataset(e)}</td><td>{escape(', '.join(e.judges))}</td>"
        f"<td><ul>{metrics}</ul></td>"
        f'<td><span class="status {e.status}">{e.status}</span>{note}</td>'
        f"<td>{escape(', '.join(e.tags))}</td><td>{_config(e)}</td></tr>"
    )


def _dataset(e: RunEntry) -> str:
    if e.dataset_sha256 is None:
        return escape(Path(e.dataset).name) if e.dataset else ""
    trends = "/trends?" + urlencode({"dataset": e.dataset_sha256})
    name = escape(Path(e.dataset).name) if e.dataset else ""
    return (f'{name} <a class="id" href="{escape(trends)}" title="this dataset\'s runs over time">'
            f"{escape(e.dataset_sha256[:8])}</a>")


def _config(e: RunEntry) -> str:
    if e.config_sha256 is None:
        return ""
    shared = f' <b title="runs of this folder with this dataset and config">×{e.shared}</b>' if e.shared > 1 else ""
    return f'<span class="id">{escape(e.config_sha256[:8])}</span>{shared}'

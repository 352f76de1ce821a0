"""The viewer's addresses, each a function of the runs folder and the query: no HTTP here (``server.py``).

========================= ==========================================================================
``/``                     the runs, newest first, filtered by ``name``, ``tag``, ``dataset``, ``status``
``/runs/ID``              the run's HTML report; an unfinished run: how far it got
``/compare?a=ID&b=ID``    run A against run B, as ``localeval compare --html`` draws it
``/trends?dataset=SHA``   each metric over the finished runs of that dataset; without it, the datasets
``/api/version``          a hash that changes when the runs do: what the list polls
========================= ==========================================================================

A run's id is looked up among the listed runs, never joined to a path: an id that is not a run's
folder name is 404. What cannot be shown (an unreadable run, a comparison with no case in common) is
422 with its one line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from urllib.parse import parse_qs, unquote, urlsplit

from localeval.errors import InputError, LocalevalError
from localeval.reports.compare import compare
from localeval.reports.run_index import RunEntry
from localeval.viewer.catalog import RunCatalog
from localeval.viewer.pages import Page, comparison_page, error_page, report_page, unfinished_page
from localeval.viewer.runs_page import runs_page
from localeval.viewer.trends import datasets_page, trends_page

RUN_PREFIX = "/runs/"


class NotFound(LookupError):
    """No such page or run: 404, with the line saying so."""


class Viewer:
    """The pages of the runs in ``catalog``: :meth:`respond` answers one address."""

    def __init__(self, catalog: RunCatalog) -> None:
        self.catalog = catalog
        self._routes: dict[str, Callable[[Mapping[str, str]], Page]] = {
            "/": self._runs, "/compare": self._compare, "/trends": self._trends, "/api/version": self._version,
        }

    def respond(self, target: str) -> Page:
        """The page at ``target`` (a request's path and query); a refusal is a page too, never an exception
        (but a bug's)."""
        parts = urlsplit(target)
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        try:
            if parts.path.startswith(RUN_PREFIX):
                return self._run(unquote(parts.path[len(RUN_PREFIX):], errors="surrogateescape"))
            route = self._routes.get(parts.path)
            if route is None:
                raise NotFound(f"no page {unquote(parts.path)!r} here: the runs are at /")
            return route(query)
        except NotFound as missing:
            return error_page(404, str(missing))
        except LocalevalError as refused:
            return error_page(422, str(refused))

    def _runs(self, query: Mapping[str, str]) -> Page:
        return runs_page(self.catalog.listing(), query, self.catalog.runs)

    def _run(self, run_id: str) -> Page:
        entry = self._entry(run_id)
        if entry.status == "unreadable":
            raise InputError(f"run {entry.run_id} is unreadable: {entry.note}")
        if entry.status != "finished":
            return unfinished_page(entry)
        return report_page(self.catalog.report(entry))

    def _compare(self, query: Mapping[str, str]) -> Page:
        if not query.get("a") or not query.get("b"):
            raise InputError("pick two runs to compare: run A (before) and run B (after)")
        a, b = (self._finished(query[side]) for side in ("a", "b"))
        return comparison_page(compare(self.catalog.report(a), self.catalog.report(b)))

    def _trends(self, query: Mapping[str, str]) -> Page:
        entries = self.catalog.listing().entries
        sha256 = query.get("dataset")
        return trends_page(entries, sha256.lower()) if sha256 else datasets_page(entries)

    def _version(self, query: Mapping[str, str]) -> Page:
        return Page(200, self.catalog.version(), content_type="text/plain; charset=utf-8")

    def _entry(self, run_id: str) -> RunEntry:
        entry = self.catalog.find(run_id)
        if entry is None:
            raise NotFound(f"no run {run_id!r} in {self.catalog.runs}")
        return entry

    def _finished(self, run_id: str) -> RunEntry:
        entry = self._entry(run_id)
        if entry.status != "finished":
            note = f": {entry.note}" if entry.note else ""
            raise InputError(f"run {entry.run_id} is {entry.status}{note}; only a finished run can be compared")
        return entry

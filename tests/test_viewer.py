"""``localeval view``: every page through a real server on 127.0.0.1 (port 0), read with urllib.

The runs are real ones, evaluated and written by the library (``exact_match``: no model), their journal
beside their reports; one is cut as a stopped run leaves it, one folder holds a corrupt report and one is
no run at all. Hostile text (a run's name, a case's name and output) must come back escaped; an id is
looked up, never joined to a path; what cannot be shown is a page with one line, and the server goes on.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from command_line import command
from test_reports import XSS

from localeval.cli.exits import EXIT_INPUT, EXIT_OK
from localeval.data.dataset import Dataset
from localeval.metrics.registry import build_metric
from localeval.reports import write_reports
from localeval.reports.run_index import RunEntry, list_runs
from localeval.run.journal import Journal, JournalHeader
from localeval.run.runner import evaluate
from localeval.viewer import RunCatalog, Viewer, ViewerServer, is_loopback
from localeval.viewer import catalog as catalog_module

#: Would act if a page let it: an element, a script, a handler.
HOSTILE = ('<img src=x onerror="document.body.setAttribute(\'data-pwned\', \'img\')">'
           "<script>document.body.setAttribute('data-pwned', 'script')</script><b>bold</b>")
QUESTIONS = [("capital", "Capital of France?", "Paris"), ("sum", "2 + 2?", "4"), ("dose", "How many pills?", "Two"),
             ("sky", "Colour of the sky?", "Blue")]
V1 = ["Paris", "5", "Two", "blue"]
V2 = ["Paris", "4", f"Take twenty at once. {HOSTILE}", "blue"]


def write_run(runs: Path, dataset: Path, run_id: str, created_at: str, *, name: str | None = None,
              tags: tuple[str, ...] = (), ignore_case: bool = False) -> Path:
    """A finished run of ``dataset`` with ``exact_match``, as ``localeval run`` leaves it: its journal
    and every report, written by the library."""
    data = Dataset.load(dataset)
    assert data.source is not None
    metrics = [build_metric("exact_match", {"ignore_case": ignore_case})]
    folder = runs / run_id
    header = JournalHeader(run_id=run_id, created_at=created_at, config={"dataset": {"path": str(dataset)}},
                           config_source="<test>", dataset_sha256=data.source.sha256, cases=len(data),
                           metrics=[m.display_name for m in metrics], name=name, tags=list(tags),
                           config_sha256=("b" if ignore_case else "a") * 64, judges=[])
    with Journal.create(folder / "journal.jsonl", header) as journal:
        report = evaluate(data, metrics, journal=journal)
    report = report.model_copy(update={"name": name, "tags": list(tags), "config_sha256": header.config_sha256})
    write_reports(report, folder)
    return folder


def answers(path: Path, outputs: list[str], names: list[str] | None = None) -> Path:
    rows = [{"name": n, "input": q, "actual_output": out, "expected_output": expected}
            for (n, q, expected), out in zip(QUESTIONS, outputs, strict=True)]
    if names is not None:
        rows = [{**row, "name": name} for row, name in zip(rows, names, strict=True)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@dataclass
class Folder:
    runs: Path
    data: Path
    v1_sha: str = ""


def build_runs(root: Path) -> Folder:
    """Three finished runs of two datasets (two of the same file, judged a little differently), a run on
    other cases, a stopped run, a corrupt report and a folder that is no run."""
    runs, data = root / "runs", root / "data"
    data.mkdir(parents=True)
    v1, v2 = answers(data / "v1.jsonl", V1), answers(data / "v2.jsonl", V2)
    other = answers(data / "other.jsonl", V1, names=["w", "x", "y", "z"])
    write_run(runs, v1, "run-v1-strict", "2026-11-01T09:00:00+00:00", name="v1 strict", tags=("base",))
    write_run(runs, v1, "run-v1-loose", "2026-11-02T09:00:00+00:00", name="v1 loose", ignore_case=True)
    write_run(runs, v2, "run-v2", "2026-11-03T09:00:00+00:00", name=f"v2 {HOSTILE}", tags=("hostile", XSS))
    write_run(runs, other, "run-other", "2026-10-01T09:00:00+00:00", name="other cases")
    stopped = shutil.copytree(runs / "run-v1-strict", runs / "run-stopped")
    for path in stopped.iterdir():
        if path.name != "journal.jsonl":
            path.unlink()
    header, first, *_ = (stopped / "journal.jsonl").read_text().splitlines(keepends=True)
    (stopped / "journal.jsonl").write_text(header + first)
    corrupt = shutil.copytree(runs / "run-v1-strict", runs / "corrupt")
    (corrupt / "report.json").write_text('{"format_version": 2, "run_id": ')
    (runs / "stray").mkdir()
    (runs / "stray" / "notes.txt").write_text("mine\n")
    sha = json.loads((runs / "run-v1-strict" / "report.json").read_text())["dataset"]["sha256"]
    return Folder(runs, data, sha)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Folder:
    return build_runs(tmp_path_factory.mktemp("viewer"))


@contextmanager
def served(runs: Path, catalog: RunCatalog | None = None) -> Iterator[ViewerServer]:
    """The viewer of ``runs`` on 127.0.0.1, any free port, in a thread of this process."""
    server = ViewerServer(Viewer(catalog or RunCatalog(runs)), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def viewer(folder: Folder) -> Iterator[ViewerServer]:
    with served(folder.runs) as server:
        yield server


@dataclass
class Answer:
    status: int
    body: str
    headers: dict[str, str]


def get(server: ViewerServer, path: str, method: str = "GET", host: str | None = None) -> Answer:
    request = urllib.request.Request(server.url.rstrip("/") + path, method=method)
    if host is not None:
        request.add_unredirected_header("Host", host)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return Answer(response.status, response.read().decode(), dict(response.headers))
    except urllib.error.HTTPError as refused:
        with refused:
            return Answer(refused.code, refused.read().decode(), dict(refused.headers))


def listed(body: str) -> list[str]:
    """The run ids of the list page, in its order."""
    return re.findall(r'<tr class="\w+" data-run="([^"]*)"', body)


def problem(body: str) -> str:
    found = re.search(r'<p class="problem" role="alert">(.*?)</p>', body)
    assert found, body[:500]
    return html.unescape(found.group(1))


def csp_hash(code: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(code.encode()).digest()).decode() + "'"


# --- the list ---------------------------------------------------------------------------------------


def test_the_list_shows_every_run_newest_first_with_its_status(viewer: ViewerServer) -> None:
    page = get(viewer, "/")
    assert page.status == 200
    ids = listed(page.body)
    started = ["run-v2", "run-v1-loose", "run-v1-strict", "run-stopped", "run-other"]
    assert [i for i in ids if i in started] == started  # those with a start, newest first
    assert sorted(ids) == sorted([*started, "corrupt", "stray"])  # and the unreadable, by their folder's time
    statuses = dict(re.findall(r'data-run="([^"]*)".*?<span class="status \w+">(\w+)</span>', page.body))
    assert statuses == {"run-v2": "finished", "run-v1-loose": "finished", "run-v1-strict": "finished",
                        "run-other": "finished", "run-stopped": "interrupted", "corrupt": "unreadable",
                        "stray": "unreadable"}
    assert "report.json:1: not JSON" in page.body and "not a run: no journal.jsonl" in page.body
    assert 'href="/runs/run-v1-strict"' in page.body
    assert "exact_match 50% 0.500" in page.body and "exact_match 75% 0.750" in page.body  # strict, loose


def test_only_finished_runs_can_be_picked_for_a_comparison(viewer: ViewerServer) -> None:
    body = get(viewer, "/").body
    pickers = re.findall(r'<input type="radio" name="(a|b)" value="([^"]*)"( disabled)?', body)
    enabled = {value for side, value, off in pickers if side == "a" and not off}
    assert enabled == {"run-v2", "run-v1-loose", "run-v1-strict", "run-other"}
    assert len(pickers) == 2 * 7
    assert '<form class="pick" method="get" action="/compare">' in body


@pytest.mark.parametrize(("query", "expected"), [
    ("?tag=base", ["run-v1-strict", "run-stopped"]),
    ("?name=LOOSE", ["run-v1-loose"]),
    ("?status=unreadable", None),
    ("?dataset=other", ["run-other"]),
    ("?tag=base&status=finished", ["run-v1-strict"]),
])
def test_the_filters_are_the_runs_listings(viewer: ViewerServer, query: str, expected: list[str] | None) -> None:
    ids = listed(get(viewer, "/" + query).body)
    if expected is None:
        assert sorted(ids) == ["corrupt", "stray"]
    else:
        assert ids == expected


def test_an_unknown_status_is_one_line(viewer: ViewerServer) -> None:
    page = get(viewer, "/?status=done")
    assert page.status == 422
    assert problem(page.body).startswith("status: unknown status 'done'")


def test_hostile_text_from_the_runs_comes_back_as_text(viewer: ViewerServer) -> None:
    for path in ("/", "/runs/run-v2", "/compare?a=run-v1-strict&b=run-v2", "/?tag=" + "%3Cscript%3Ealert(1)"):
        body = get(viewer, path).body
        assert HOSTILE not in body and XSS not in body, path
        assert "<img" not in body and body.count("<script") == body.count("</script>") <= 1, path
    assert html.escape(f"v2 {HOSTILE}") in get(viewer, "/").body


def test_every_page_has_a_policy_that_loads_nothing_and_runs_only_its_own_script(viewer: ViewerServer) -> None:
    page = get(viewer, "/")
    policy = dict(part.split(" ", 1) for part in page.headers["Content-Security-Policy"].split("; "))
    scripts = re.findall(r"<script>(.*?)</script>", page.body, re.S)
    assert len(scripts) == 1
    assert policy == {"default-src": "'none'", "style-src": "'unsafe-inline'", "img-src": "data:",
                      "script-src": csp_hash(scripts[0]), "connect-src": "'self'", "form-action": "'self'",
                      "base-uri": "'none'", "frame-ancestors": "'none'"}
    assert (page.headers["X-Content-Type-Options"], page.headers["Cache-Control"]) == ("nosniff", "no-store")
    report = get(viewer, "/runs/run-v1-strict")
    (code,) = re.findall(r"<script>(.*?)</script>", report.body, re.S)
    assert f"script-src {csp_hash(code)};" in report.headers["Content-Security-Policy"]
    assert "connect-src 'none'" in report.headers["Content-Security-Policy"]
    comparison = get(viewer, "/compare?a=run-v1-strict&b=run-v2")
    assert "script-src 'none'" in comparison.headers["Content-Security-Policy"]
    assert re.search(r"(src|href)=\"(https?:)?//", page.body + report.body + comparison.body) is None


# --- a run, a comparison, trends ----------------------------------------------------------------------


def test_a_run_is_its_html_report_with_a_way_back(viewer: ViewerServer) -> None:
    page = get(viewer, "/runs/run-v2")
    assert page.status == 200
    assert "<h1>localeval report</h1>" in page.body and '<nav class="viewer"><a href="/">all runs</a>' in page.body
    assert html.escape(f"Take twenty at once. {HOSTILE}") in page.body
    assert page.body.count('<details class="case"') == 4


def test_a_stopped_run_says_how_far_it_got(viewer: ViewerServer) -> None:
    page = get(viewer, "/runs/run-stopped")
    assert page.status == 200
    assert "1 of 4 results" in page.body and "localeval run --resume run-stopped" in page.body


@pytest.mark.parametrize(("path", "status", "line"), [
    ("/runs/corrupt", 422, "run corrupt is unreadable: report.json:1: not JSON (Expecting value)"),
    ("/runs/stray", 422, "run stray is unreadable: not a run: no journal.jsonl"),
    ("/runs/nothing", 404, "no run 'nothing' in {runs}"),
    ("/runs/..%2F..%2Fdata%2Fv1.jsonl", 404, "no run '../../data/v1.jsonl' in {runs}"),
    ("/runs/%2e%2e", 404, "no run '..' in {runs}"),
    ("/runs/run-v1-strict/report.json", 404, "no run 'run-v1-strict/report.json' in {runs}"),
    ("/../data/v1.jsonl", 404, "no page '/../data/v1.jsonl' here: the runs are at /"),
    ("/compare?a=run-v1-strict", 422, "pick two runs to compare: run A (before) and run B (after)"),
    ("/compare?a=run-v1-strict&b=run-stopped", 422,
     "run run-stopped is interrupted: 1 of 4 results; only a finished run can be compared"),
    ("/compare?a=run-v1-strict&b=run-other", 422,
     "runs run-v1-strict (4 cases) and run-other (4 cases) have no case in common by name: nothing to compare"),
    ("/trends?dataset=" + "0" * 64, 404, None),
])
def test_what_cannot_be_shown_is_one_line(viewer: ViewerServer, folder: Folder, path: str, status: int,
                                          line: str | None) -> None:
    page = get(viewer, path)
    assert page.status == status
    if line is not None:
        assert problem(page.body) == line.format(runs=folder.runs)
    assert "Traceback" not in page.body and "v1.jsonl\n" not in page.body


def test_the_comparison_shows_the_changed_output(viewer: ViewerServer) -> None:
    page = get(viewer, "/compare?a=run-v1-strict&b=run-v2")
    assert page.status == 200
    assert "<h1>localeval comparison</h1>" in page.body and '<nav class="viewer">' in page.body
    assert f'<div class="text diff"><del>Two</del><ins>Take twenty at once. {html.escape(HOSTILE)}</ins></div>' in page.body
    assert '<div class="text diff"><del>5</del><ins>4</ins></div>' in page.body
    assert re.findall(r'<article class="compared-case" id="case-(\d+)">', page.body) == ["2", "3"]  # sum, dose


def test_trends_draw_each_metric_over_the_runs_of_a_dataset(viewer: ViewerServer, folder: Folder) -> None:
    page = get(viewer, f"/trends?dataset={folder.v1_sha}")
    assert page.status == 200
    assert page.body.count('<svg class="chart trend"') == 1  # one metric
    points = re.findall(r'<circle class="trend (\w+)" cx="[\d.]+" cy="([\d.]+)"', page.body)
    assert [kind for kind, _ in points] == ["mean", "mean", "rate", "rate"]  # two runs of v1: strict, then loose
    ys = [float(y) for _, y in points]
    assert ys[0] > ys[1]  # loose scored higher: drawn higher (smaller y)
    rows = re.findall(r'<td><a href="/runs/([^"]+)">', page.body)
    assert rows == ["run-v1-strict", "run-v1-loose"]  # oldest first; the stopped one is not finished
    assert "0.500 · 50%" in page.body and "0.750 · 75%" in page.body
    index = get(viewer, "/trends")
    assert index.status == 200 and f"/trends?dataset={folder.v1_sha}" in index.body


# --- HTTP ---------------------------------------------------------------------------------------------


def test_only_get_is_answered(viewer: ViewerServer) -> None:
    for method in ("POST", "PUT", "DELETE"):
        page = get(viewer, "/", method=method)
        assert (page.status, page.headers["Allow"]) == (405, "GET")
        assert problem(page.body) == f"only GET is answered here, not {method}"
        assert "default-src 'none'" in page.headers["Content-Security-Policy"]


def test_a_request_addressed_to_another_name_is_refused(viewer: ViewerServer) -> None:
    port = viewer.server_address[1]
    assert get(viewer, "/", host=f"evil.example:{port}").status == 403
    assert get(viewer, "/", host=f"localhost:{port}").status == 200


def test_a_request_that_fails_is_one_line_and_the_server_goes_on(folder: Folder,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = RunCatalog(folder.runs)
    with served(folder.runs, catalog) as server:
        monkeypatch.setattr(catalog, "listing", lambda: 1 / 0)
        page = get(server, "/")
        assert (page.status, problem(page.body)) == (500, "unexpected ZeroDivisionError: division by zero (a bug in localeval)")
        monkeypatch.undo()
        assert get(server, "/").status == 200


# --- live: the folder's version ---------------------------------------------------------------------


def test_the_listing_is_read_once_per_change_and_a_finished_run_shows(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    runs = build_runs(tmp_path).runs
    reads = []

    def counted(folder: Path) -> list[RunEntry]:
        reads.append(folder)
        return list_runs(folder)

    monkeypatch.setattr(catalog_module, "list_runs", counted)
    with served(runs) as server:
        version = get(server, "/api/version")
        assert version.headers["Content-Type"] == "text/plain; charset=utf-8" and len(version.body) == 16
        for _ in range(3):
            assert "run-new" not in listed(get(server, "/").body)
        assert (len(reads), get(server, "/api/version").body) == (1, version.body)
        write_run(runs, tmp_path / "data" / "v1.jsonl", "run-new", "2026-11-04T09:00:00+00:00")
        assert get(server, "/api/version").body != version.body
        assert "run-new" in listed(get(server, "/").body)
        assert len(reads) == 2
        (runs / "run-new" / "report.json").unlink()  # a change inside a run's folder is a change too
        assert 'data-run="run-new"><td class="pick"><input type="radio" name="a" value="run-new" disabled' in get(
            server, "/").body


def test_a_folder_whose_name_is_not_utf8_is_listed_and_opens(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    os.mkdir(bytes(runs) + b"/odd\xff")
    with served(runs) as server:
        page = get(server, "/")
        assert page.status == 200 and 'href="/runs/odd%FF"' in page.body
        run = get(server, "/runs/odd%FF")
        assert (run.status, problem(run.body)) == (422, "run odd? is unreadable: not a run: no journal.jsonl")


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True),
    ("0.0.0.0", False), ("192.168.1.2", False), ("127.example.com", False), ("::", False),
])
def test_only_loopback_addresses_keep_the_viewer_to_this_machine(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_missing_runs_folder_is_an_empty_list(tmp_path: Path) -> None:
    with served(tmp_path / "none") as server:
        page = get(server, "/")
        assert page.status == 200 and "No runs yet." in page.body
        assert get(server, "/api/version").body == "absent"


# --- the command --------------------------------------------------------------------------------------


def start_view(*options: str) -> tuple[subprocess.Popen[str], str]:
    """``localeval view OPTIONS`` in a subprocess; it and the URL it says it serves at."""
    process = subprocess.Popen(command("view", "--port", "0", *options), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r" at (http://\S+/) \(Ctrl-C stops it\)", line)
    assert found, line + process.stderr.read() if process.stderr else line
    return process, found.group(1)


def test_the_command_serves_until_ctrl_c(folder: Folder) -> None:
    process, url = start_view("--runs", str(folder.runs))
    try:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=30) as response:
            assert "run-v1-strict" in response.read().decode()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert (process.returncode, out, err) == (EXIT_OK, "Stopped.\n", "")


def test_another_address_than_loopback_is_served_with_a_warning(folder: Folder) -> None:
    process, url = start_view("--runs", str(folder.runs), "--host", "0.0.0.0")
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert url.startswith("http://0.0.0.0:")
    assert err.startswith(f"warning: serving on 0.0.0.0: anyone who can reach this machine on port {url.split(':')[2][:-1]}"
                          f" can read every run in {folder.runs}\n")


def test_a_port_in_use_is_one_line_and_exit_code_2(folder: Folder, viewer: ViewerServer) -> None:
    port = str(viewer.server_address[1])
    done = subprocess.run(command("view", "--runs", str(folder.runs), "--port", port), capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout) == (EXIT_INPUT, "")
    assert done.stderr == (f"error: port {port} on 127.0.0.1 is in use (another viewer?): pick another with --port, "
                           "or --port 0 for any\n")

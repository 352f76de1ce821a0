"""``localeval view`` in a real browser: headless Chromium, driven over its DevTools pipe, shows the runs of
a folder, opens a run on a click, compares two runs picked in the list, and reloads the list when a run
finishes; every page under the viewer's Content-Security-Policy, which must let the pages' own scripts
run (and nothing else).

DevTools, not ``--dump-dom`` with a probe script appended (tests/test_html_browser.py): the viewer's
policy runs no script it did not write, a probe included, and a click is only a click in a live page.
Skipped when /usr/bin/chromium is absent (CI installs it: ``apt-get install chromium``).
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tiers
from test_html_browser import CHROMIUM, FLAGS
from test_viewer import HOSTILE, Folder, build_runs, served, write_run

from localeval.viewer import ViewerServer

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason="needs headless Chromium at /usr/bin/chromium (apt-get install chromium)"),
]

#: How long a page may take to do what a test waits for, on a loaded machine.
WAIT_S = 30.0


class Browser:
    """Headless Chromium over ``--remote-debugging-pipe``: DevTools messages as JSON, each ended by a NUL
    byte, written to its file descriptor 3 and read from its 4; one page, attached by a flat session."""

    def __init__(self, folder: Path) -> None:
        tiers.require("browser", what="running Chromium")
        theirs_in, self._to = _high(os.pipe())
        self._from, theirs_out = _high(os.pipe())
        shell = f'exec "$0" "$@" 3<&{theirs_in} 4>&{theirs_out}'
        self.process = subprocess.Popen(
            ["/bin/bash", "-c", shell, str(CHROMIUM), *FLAGS, "--remote-debugging-pipe",
             f"--user-data-dir={folder}/profile", "about:blank"],
            pass_fds=(theirs_in, theirs_out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "TMPDIR": str(folder)},
        )
        os.close(theirs_in)
        os.close(theirs_out)
        self._buffer, self._last = b"", 0
        self.events: list[dict[str, Any]] = []
        try:
            self._attach()
        except BaseException:
            self.close()
            raise

    def _attach(self) -> None:
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=self.session)

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its answer; the events that come first are kept in :attr:`events`."""
        self._last += 1
        message = {"id": self._last, "method": method, "params": params, **({"sessionId": session} if session else {})}
        os.write(self._to, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._last:
                assert "error" not in reply, reply
                return dict(reply["result"])
            self.events.append(reply)

    def evaluate(self, expression: str) -> Any:
        """``expression``'s value in the page (DevTools runs it whatever the page's policy)."""
        done = self.call("Runtime.evaluate", session=self.session, expression=expression, returnByValue=True)
        assert "exceptionDetails" not in done, done
        return done["result"].get("value")

    def wait_for(self, expression: str) -> Any:
        """Wait until ``expression`` is true in the page (a page that is loading has no value yet)."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(f"document.readyState === 'complete' && ({expression})")
            except AssertionError:  # between two pages: no context to evaluate in
                value = None
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"not true after {WAIT_S} s: {expression}")

    def open(self, url: str) -> None:
        self.call("Page.navigate", session=self.session, url=url)
        self.wait_for(f"location.href === {json.dumps(url)}")

    def refused(self) -> list[str]:
        """What the browser logged about the policy (a refused script, style or request)."""
        texts = [e["params"]["entry"]["text"] for e in self.events if e.get("method") == "Log.entryAdded"]
        texts += [json.dumps(e["params"]) for e in self.events if e.get("method") == "Runtime.exceptionThrown"]
        return [t for t in texts if "Content Security Policy" in t or "Refused" in t or "exception" in t.lower()]

    def close(self) -> None:
        try:
            os.write(self._to, json.dumps({"id": self._last + 1, "method": "Browser.close"}).encode() + b"\0")
            self.process.wait(timeout=30)
        finally:
            self.process.kill()
            os.close(self._to)
            os.close(self._from)

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._from], [], [], WAIT_S)
            chunk = os.read(self._from, 1 << 16) if ready else b""
            assert chunk, "Chromium stopped answering"
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(message))


def _high(fds: tuple[int, int]) -> tuple[int, int]:
    """The pipe's ends moved above 9: bash puts them at 3 and 4, which must not be one of them."""
    moved = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds)
    for fd in fds:
        os.close(fd)
    return moved[0], moved[1]


@pytest.fixture
def browser() -> Iterator[Browser]:
    # A short folder: Chromium keeps Unix sockets there, whose paths may not exceed 107 bytes.
    with tempfile.TemporaryDirectory(prefix="lv-", dir="/tmp" if Path("/tmp").is_dir() else None) as short:
        chromium = Browser(Path(short))
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return build_runs(tmp_path)


@pytest.fixture
def viewer(folder: Folder) -> Iterator[ViewerServer]:
    with served(folder.runs) as server:
        yield server


ROWS = "Array.from(document.querySelectorAll('tr[data-run]'), function (r) { return r.dataset.run; })"
#: Whatever the runs' text would do if it ran or were markup: it must have done nothing.
INERT = ("document.body.getAttribute('data-pwned') === null && document.querySelectorAll('main img, main script')"
         ".length === 0 && Array.from(document.querySelectorAll('b')).every(function (b) { "
         "return b.textContent !== 'bold'; })")


def test_the_list_shows_the_runs_and_a_click_opens_one(browser: Browser, viewer: ViewerServer) -> None:
    browser.open(viewer.url)
    assert sorted(browser.evaluate(ROWS)) == ["corrupt", "run-other", "run-stopped", "run-v1-loose", "run-v1-strict",
                                               "run-v2", "stray"]
    assert browser.evaluate(INERT) is True
    browser.evaluate("document.querySelector('a[href=\"/runs/run-v2\"]').click()")
    browser.wait_for("location.pathname === '/runs/run-v2'")
    assert browser.evaluate("document.querySelector('h1').textContent") == "localeval report"
    assert browser.evaluate("document.querySelectorAll('details.case').length") == 4
    assert browser.evaluate("document.querySelector('#case-3 .inputs').textContent").count(HOSTILE) == 1
    assert browser.evaluate(INERT) is True
    # the report's own script runs under the policy: the address opens the case it names
    browser.evaluate("location.hash = 'case-3'")
    assert browser.wait_for("document.getElementById('case-3').open") is True
    assert browser.refused() == []


def test_two_runs_picked_in_the_list_show_the_changed_output(browser: Browser, viewer: ViewerServer) -> None:
    browser.open(viewer.url)
    browser.evaluate("document.querySelector('input[name=a][value=\"run-v1-strict\"]').click();"
                     "document.querySelector('input[name=b][value=\"run-v2\"]').click();"
                     "document.querySelector('form.pick button[type=submit]').click()")
    browser.wait_for("location.pathname === '/compare'")
    assert browser.evaluate("var q = new URLSearchParams(location.search); [q.get('a'), q.get('b')]") == [
        "run-v1-strict", "run-v2"]
    changed = browser.evaluate("Array.from(document.querySelectorAll('.compared-case'), function (c) {"
                               " return [c.querySelector('h3').textContent, c.querySelector('.diff del').textContent,"
                               " c.querySelector('.diff ins').textContent]; })")
    assert changed == [["sum", "5", "4"], ["dose", "Two", f"Take twenty at once. {HOSTILE}"]]
    assert browser.evaluate("getComputedStyle(document.querySelector('.diff del')).textDecorationLine") == "line-through"
    assert browser.evaluate(INERT) is True
    assert browser.refused() == []


def test_the_list_reloads_when_a_run_finishes(browser: Browser, viewer: ViewerServer, folder: Folder) -> None:
    browser.open(viewer.url)
    browser.evaluate("window.loadedBefore = true")
    write_run(folder.runs, folder.data / "v1.jsonl", "run-new", "2026-11-24T09:00:00+00:00", name="fresh")
    browser.wait_for(f"{ROWS}.indexOf('run-new') !== -1")
    assert browser.evaluate("window.loadedBefore === undefined") is True  # the page was loaded again
    # while two runs are being picked, a change is only said: the choice stays
    browser.evaluate("window.loadedBefore = true; document.querySelector('input[name=a][value=\"run-new\"]').click()")
    write_run(folder.runs, folder.data / "v1.jsonl", "run-newer", "2026-11-25T09:00:00+00:00")
    browser.wait_for("!document.getElementById('changed').hidden")
    assert browser.evaluate("window.loadedBefore && document.querySelector('input[name=a]:checked').value") == "run-new"
    assert browser.refused() == []


def test_trends_draw_their_chart(browser: Browser, viewer: ViewerServer, folder: Folder) -> None:
    browser.open(viewer.url)
    browser.evaluate(f"document.querySelector('a[href=\"/trends?dataset={folder.v1_sha}\"]').click()")
    browser.wait_for("location.pathname === '/trends'")
    box = browser.evaluate("(function () { var r = document.querySelector('svg.trend').getBoundingClientRect();"
                           " return [r.width > 100, r.height > 50,"
                           " document.querySelectorAll('svg.trend circle').length]; })()")
    assert box == [True, True, 4]
    assert browser.refused() == []

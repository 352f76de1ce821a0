"""The HTML report in a real browser: headless Chromium runs its script, and we screenshot it.

Skipped when /usr/bin/chromium is absent (CI installs it: ``apt-get install chromium``).
Set LOCALEVAL_SCREENSHOT_DIR to keep the screenshot.

Chromium's ``--screenshot`` draws a scrolled page shifted down by the scroll
offset (a blank band on top), so the screenshot is taken in a window taller
than the page, where nothing scrolls; that the page scrolls to the case is
checked separately, in a short window, by a probe script that writes
``scrollY`` into the DOM for ``--dump-dom`` to show.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import pytest
import tiers
from test_reports import sample_report

from localeval.reports import write_reports

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason="needs headless Chromium at /usr/bin/chromium (apt-get install chromium)"),
]

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",  # containers often have a small /dev/shm
)

# Appended to a copy of the page, after the page's own script has run: records what it did.
PROBE = """<script>
(function () {
  var probe = {scrollY: window.scrollY, innerHeight: window.innerHeight,
               top: Math.round(document.getElementById("case-2").getBoundingClientRect().top),
               open: Array.prototype.map.call(document.querySelectorAll("details.case[open]"), function (d) { return d.id; })};
  var text = document.getElementById("filter-text");
  text.value = "ALERT(1)";
  text.dispatchEvent(new Event("input"));
  probe.filtered = document.getElementById("shown").textContent;
  probe.visible = Array.prototype.filter.call(document.querySelectorAll("details.case"),
    function (d) { return !d.classList.contains("hidden"); }).map(function (d) { return d.id; });
  text.value = "";
  text.dispatchEvent(new Event("input"));
  var status = document.getElementById("filter-status");
  status.value = "errored";
  status.dispatchEvent(new Event("change"));
  probe.errored = document.getElementById("shown").textContent;
  var header = document.querySelectorAll(".head button")[2];
  header.click();
  probe.ascending = Array.prototype.map.call(document.querySelectorAll("details.case"), function (d) { return d.id; });
  header.click();
  probe.descending = Array.prototype.map.call(document.querySelectorAll("details.case"), function (d) { return d.id; });
  document.body.setAttribute("data-probe", JSON.stringify(probe));
})();
</script>
"""


def chromium(tmp_path: Path, url: str, *args: str, window: str = "1280,1600") -> str:
    """Run headless Chromium on ``url`` with a fresh profile; its stdout.

    Its profile and temporary files go to a folder with a short path: Chromium keeps
    Unix sockets there, whose paths may not exceed 107 bytes, and pytest's tmp_path
    under a long TMPDIR would crash it (the test must not depend on that length).
    """
    tiers.require("browser", what="running Chromium")
    with tempfile.TemporaryDirectory(prefix="lv-", dir="/tmp" if Path("/tmp").is_dir() else None) as short:
        done = subprocess.run(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={short}/profile", f"--window-size={window}", *args, url],
            capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "TMPDIR": short},
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "report.html"
    write_reports(sample_report(), copies={"html": path})
    return path


def test_the_address_opens_its_case_and_nothing_else(tmp_path: Path, page: Path) -> None:
    dom = chromium(tmp_path, f"{page.as_uri()}#case-2", "--dump-dom")
    tags = {case: tag for tag, case in re.findall(r'(<details class="case" id="(case-\d)"[^>]*>)', dom)}
    assert list(tags) == ["case-1", "case-2", "case-3", "case-4"]
    assert " open" in tags["case-2"]
    assert [name for name, tag in tags.items() if " open" in tag] == ["case-2"]
    assert '<section class="summary"' in dom and dom.count('<article class="card">') == 4
    assert dom.count("<script") == 1  # the strings from the report stayed text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom


def test_the_script_scrolls_filters_and_sorts(tmp_path: Path, page: Path) -> None:
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = chromium(tmp_path, f"{probed.as_uri()}#case-2", "--dump-dom", window="1280,600")
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, "the probe did not run"
    probe = json.loads(html.unescape(found.group(1)))
    assert probe["scrollY"] > 0 and 0 <= probe["top"] <= 60  # case 2 at the top, under the sticky header
    assert probe["open"] == ["case-2"]
    assert (probe["filtered"], probe["visible"]) == ("1 of 4 cases", ["case-2"])  # its input holds alert(1)
    assert probe["errored"] == "1 of 4 cases"
    # the third column is the first metric, correctness: 0.55, 0.31, 0.9, 1.0
    assert probe["ascending"] == ["case-2", "case-1", "case-3", "case-4"]
    assert probe["descending"] == ["case-4", "case-3", "case-1", "case-2"]


# Appended to a copy of the page: what a reader sees first in an opened case and in the header.
READING = """<script>
(function () {
  // a closed <details> keeps its content laid out but skips rendering it (content-visibility): ask that
  function shown(el) { return el.checkVisibility(); }
  var fields = Array.prototype.map.call(document.querySelectorAll("#case-1 .inputs dt"), function (dt) {
    return [dt.textContent, Math.round(dt.getBoundingClientRect().top)];
  });
  var folded = document.querySelector("details.fingerprints");
  var summary = folded.querySelector("summary");
  function facts(within) { return Array.prototype.filter.call(within.querySelectorAll("dt"), shown); }
  var before = {open: folded.open, line: summary.textContent, shownFacts: facts(folded).length,
                height: Math.round(summary.getBoundingClientRect().height),
                visibleMeta: facts(document.querySelector("header.page")).map(function (dt) {
                  return dt.textContent; })};
  folded.open = true;
  before.openedFacts = facts(folded).length;
  var data = {fields: fields, header: before, scripts: document.scripts.length,
              injected: document.querySelectorAll("img, [onload], [onerror]").length + Array.prototype.filter.call(
                document.querySelectorAll("b"), function (b) { return b.textContent === "bold"; }).length,
              expected: Array.prototype.filter.call(document.querySelectorAll("#case-2 .inputs dt"), function (dt) {
                return dt.textContent === "expected_output"; }).map(function (dt) {
                return dt.nextElementSibling.textContent; })};
  document.body.setAttribute("data-probe", JSON.stringify(data));
})();
</script>
"""


def test_a_reader_sees_the_texts_first_the_fingerprints_folded_and_hostile_text_as_text(tmp_path: Path) -> None:
    from test_reports import SVG, XSS

    report = sample_report()
    judge = report.backend.model_copy(update={"model": f"tiny {XSS}"})  # type: ignore[union-attr]
    page = tmp_path / "report.html"
    write_reports(report.model_copy(update={"backend": judge}), copies={"html": page})
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", READING + "</body>"), encoding="utf-8")
    dom = chromium(tmp_path, f"{probed.as_uri()}#case-1", "--dump-dom")
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, "the probe did not run"
    probe = json.loads(html.unescape(found.group(1)))
    names = [name for name, _ in probe["fields"]]
    assert names == ["input", "actual_output", "expected_output", "name", "tags", "retrieval_context"]
    tops = [top for _, top in probe["fields"]]
    assert tops == sorted(tops) and len(set(tops)) == len(tops)  # one under the other, in that order, on screen
    header = probe["header"]
    assert (header["open"], header["shownFacts"]) == (False, 0)  # folded: no fingerprint shows
    assert header["line"] == f"judge tiny {XSS} (llama.cpp) · fingerprints"  # one line, the name as text
    assert header["height"] < 30 and header["openedFacts"] >= 4  # opened, they show
    assert "run" in header["visibleMeta"] and not any("sha256" in fact for fact in header["visibleMeta"])
    assert (probe["scripts"], probe["injected"]) == (2, 0)  # the page's and the probe's; no element from data
    assert probe["expected"] == [SVG]  # hostile expected output shown as its text


def test_screenshot_of_an_opened_case(tmp_path: Path, page: Path) -> None:
    shot = tmp_path / "report-case-2.png"
    chromium(tmp_path, f"{page.as_uri()}#case-2", "--hide-scrollbars", f"--screenshot={shot}", window="1280,2200")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (1280, 2200)
    assert len(data) > 40_000  # a blank page is a few kB
    keep = os.environ.get("LOCALEVAL_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    print(f"screenshot: {shot}" + (f" (copied to {keep})" if keep else ""))


def test_the_arena_section_renders_its_tables_in_a_real_browser(tmp_path: Path) -> None:
    from test_arena_report import XSS, arena_report

    page = tmp_path / "arena.html"
    write_reports(arena_report(), copies={"html": page})
    dom = chromium(tmp_path, page.as_uri(), "--dump-dom")
    assert dom.count('<article class="arena"') == 1
    assert '<table class="ranking">' in dom and '<table class="pairwise">' in dom and '<table class="pairs">' in dom
    assert html.escape(XSS, quote=False) in dom and XSS not in dom  # a contestant's name stays text
    shot = tmp_path / "arena.png"
    chromium(tmp_path, page.as_uri(), "--hide-scrollbars", f"--screenshot={shot}", window="1280,1200")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24]) == (1280, 1200)
    assert len(data) > 40_000  # a blank page is a few kB
    keep = os.environ.get("LOCALEVAL_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)

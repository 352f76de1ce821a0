"""The comparison page in a real browser: headless Chromium shows the changed output struck and
inserted, the verdict, and runs nothing that came from the runs.

Skipped when /usr/bin/chromium is absent (CI installs it: ``apt-get install chromium``).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from test_compare import FILE_1, Cell, run, scores
from test_html_browser import CHROMIUM, chromium

from localeval.reports import compare
from localeval.reports.compare_html import write_comparison

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason="needs headless Chromium at /usr/bin/chromium (apt-get install chromium)"),
]

#: Would mark the page if the browser ran it.
HOSTILE = ('<img src=x onerror="document.body.setAttribute(\'data-pwned\', \'img\')">'
           "<script>document.body.setAttribute('data-pwned', 'script')</script><b>bold</b>")

# Appended to a copy of the page: what the browser laid out and ran.
PROBE = """<script>
(function () {
  function box(el) { var r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; }
  var del = document.querySelector(".diff del"), ins = document.querySelector(".diff ins");
  var data = {
    pwned: document.body.getAttribute("data-pwned"),
    scripts: document.scripts.length,
    injected: document.querySelectorAll("main img, main script").length + Array.prototype.filter.call(
      document.querySelectorAll("b"), function (b) { return b.textContent === "bold"; }).length,
    del: del.textContent, ins: ins.textContent, shown: box(del) && box(ins),
    struck: getComputedStyle(del).textDecorationLine, delColor: getComputedStyle(del).color,
    insColor: getComputedStyle(ins).color,
    verdicts: Array.prototype.map.call(document.querySelectorAll(".verdict"), function (p) { return p.textContent; }),
    title: document.querySelector(".compared-case h3").textContent,
    output: document.querySelector(".compared-case .diff").textContent
  };
  document.body.setAttribute("data-probe", JSON.stringify(data));
})();
</script>
"""


def test_the_changed_output_shows_and_the_hostile_text_stays_inert(tmp_path: Path) -> None:
    names = [f"dose {HOSTILE}", *(f"c{i}" for i in range(1, 20))]
    before = run("v1", [(n, {"m": 0.9}) for n in names], FILE_1,
                 outputs=["Take two pills a day.", *(f"ok {i}" for i in range(1, 20))])
    after_cells: list[tuple[str | None, dict[str, Cell]]] = [(n, {"m": 0.9 - 0.01 * (i % 5 + 1)})
                                                             for i, n in enumerate(names)]
    after = run("v2", after_cells, FILE_1, outputs=[f"Take twenty pills at once. {HOSTILE}",
                                                    *(f"ok {i}" for i in range(1, 20))])
    page = tmp_path / "compare.html"
    write_comparison(compare(before, after), html_path=page)
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = chromium(tmp_path, probed.as_uri(), "--dump-dom")
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, "the probe did not run"
    probe = json.loads(html.unescape(found.group(1)))
    assert (probe["pwned"], probe["scripts"], probe["injected"]) == (None, 1, 0)  # only the probe ran
    assert (probe["del"], probe["ins"], probe["shown"]) == ("two", "twenty", True)
    assert probe["struck"] == "line-through" and probe["delColor"] != probe["insColor"]
    assert probe["verdicts"] == ["worse"]  # every score a little lower: the mean's interval excludes 0
    assert probe["title"] == f"dose {HOSTILE}"
    assert probe["output"] == f"Take twotwenty pills a dayat once. {HOSTILE}"  # the removed and the added, as text


def test_a_page_without_changes_renders(tmp_path: Path) -> None:
    page = tmp_path / "same.html"
    report = scores("a", [0.5, 0.75])
    write_comparison(compare(report, report), html_path=page)
    dom = chromium(tmp_path, page.as_uri(), "--dump-dom")
    assert "No case changed: every output and every result is as it was." in dom
    assert "<script" not in dom

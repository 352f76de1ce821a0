"""The arena's cases in a real browser: headless Chromium lays the contestants' outputs out side by
side, and an output that is markup stays text. Skipped where /usr/bin/chromium is absent."""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import pytest
from scripted import ScriptedBackend
from test_html_browser import CHROMIUM, chromium

from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.metrics import Arena
from localeval.reports import write_reports
from localeval.run.runner import RunOptions, evaluate

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason="needs headless Chromium at /usr/bin/chromium (apt-get install chromium)"),
]

IMG = '<img src="x" onerror="document.body.setAttribute(\'data-pwned\', \'img\')">'
SCRIPT = "<script>document.body.setAttribute('data-pwned', 'script')</script>"

# Appended to a copy of the page: where each output of the first arena case is drawn, and whether
# anything from the data ran.
PROBE = """<script>
(function () {
  var outputs = Array.prototype.map.call(document.querySelectorAll(".arena-case")[0].querySelectorAll("figure.output"),
    function (f) { var r = f.getBoundingClientRect();
      return {name: f.querySelector("figcaption").textContent, text: f.querySelector(".text").textContent,
              visible: f.checkVisibility(), left: Math.round(r.left), right: Math.round(r.right),
              top: Math.round(r.top), width: Math.round(r.width), height: Math.round(r.height)}; });
  var outcome = document.querySelector(".arena-case .outcome").textContent;
  document.body.setAttribute("data-probe", JSON.stringify({outputs: outputs, outcome: outcome,
    images: document.querySelectorAll("img").length, scripts: document.scripts.length}));
})();
</script>
"""


def test_the_outputs_stand_side_by_side_and_hostile_text_stays_text(tmp_path: Path) -> None:
    contestants = {"new": f"Four. {IMG}", "old": f"Five. {SCRIPT}"}
    cases = [TestCase(name="sum", input="What is 2+2? <b>bold</b>", contestants=contestants)]
    judge = ScriptedBackend(logprobs=[{" A": math.log(p), " B": math.log(1 - p)} for p in (0.8, 0.3)])
    report = evaluate(Dataset.from_cases(cases), [Arena(evaluation_steps=("Compare.",), include_reason=False)],
                      judge, options=RunOptions(order="input"))
    page = tmp_path / "report.html"
    write_reports(report, copies={"html": page})
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = chromium(tmp_path, probed.as_uri(), "--dump-dom", window="1280,1600")
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, "the probe did not run"
    probe = json.loads(html.unescape(found.group(1)))
    new, old = probe["outputs"]
    assert (new["name"], new["text"]) == ("new", contestants["new"])  # the markup as its text
    assert (old["name"], old["text"]) == ("old", contestants["old"])
    assert new["visible"] and old["visible"] and min(new["height"], old["height"]) > 10
    assert new["top"] == old["top"] and new["right"] <= old["left"]  # one beside the other, in order
    assert min(new["width"], old["width"]) > 300  # each a column of the page, not a sliver
    assert probe["outcome"].startswith("new preferred")  # new's readings 0.8 and 0.7
    assert (probe["images"], probe["scripts"]) == (0, 2)  # the page's script and the probe's: none from data
    body = re.search(r"<body[^>]*>", dom)
    assert body and " data-pwned=" not in body.group(0)  # nothing of the data ran, after the page loaded

"""The arena in the reports: the JSON report carries the ranking and pairs; HTML shows them; the terminal too."""

from __future__ import annotations

import json
import math
import re
from html import unescape

import pytest
from rich.console import Console
from scripted import ScriptedBackend

from localeval.cli.console import print_report
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.data.results import RunReport
from localeval.metrics import Arena
from localeval.reports.html import render_html
from localeval.run.runner import evaluate

XSS = "<b>x</b>"


def p_a(p: float) -> dict[str, float]:
    return {" A": math.log(p), " B": math.log(1 - p)}


def arena_report() -> RunReport:
    """Two cases of three contestants, one with a name that is markup, through a real run.

    Per case, P(first) for (x, y), (x, z), (y, z) in both orders; the preferences:
    case 1: x>y 0.8, x>z 0.6, y>z 0.5; case 2: x>y 0.6, x>z 0.7, y>z 0.3.
    Over both: x>y 0.7, x>z 0.65, y>z 0.4.
    """
    contestants = {"x": "4", XSS: "5", "z": "four"}
    cases = [TestCase(input="What is 2+2?", contestants=contestants, name="sum"),
             TestCase(input="What is 2*2?", contestants=contestants, name="product")]
    scripted = [0.9, 0.3, 0.7, 0.5, 0.6, 0.6, 0.7, 0.5, 0.8, 0.4, 0.4, 0.8]
    judge = ScriptedBackend(logprobs=[p_a(p) for p in scripted])
    metric = Arena(name="better", evaluation_steps=("Compare.",), include_reason=False)
    return evaluate(Dataset.from_cases(cases), [metric], judge)


def test_the_json_report_carries_pairs_ranking_and_position_bias() -> None:
    summary = json.loads(arena_report().to_json())["summary"][0]["details"]
    assert [(p["a"], p["b"], p["cases"]) for p in summary["pairs"]] == [("x", XSS, 2), ("x", "z", 2), (XSS, "z", 2)]
    assert [p["preference"] for p in summary["pairs"]] == [pytest.approx(v) for v in (0.7, 0.65, 0.4)]
    assert summary["pairs"][0]["p_first"] == [pytest.approx(0.8), pytest.approx(0.4)]
    assert summary["mean_p_first"] == pytest.approx(sum([0.9, 0.3, 0.7, 0.5, 0.6, 0.6, 0.7, 0.5, 0.8, 0.4, 0.4, 0.8]) / 12)
    assert [r["name"] for r in summary["ranking"]] == ["x", "z", XSS]
    # outcomes (the first name's two readings): one case x>y 0.9/0.7 x, x>z 0.7/0.5 tie, y>z 0.6/0.4 tie;
    # the other x>y 0.7/0.5 tie, x>z 0.8/0.6 x, y>z 0.4/0.2 z
    assert [(p["wins"], p["ties"], p["losses"]) for p in summary["pairs"]] == [(1, 1, 0), (1, 1, 0), (0, 1, 1)]
    assert [p["verdict"] for p in summary["pairs"]] == ["no significant difference"] * 3  # two cases prove nothing
    assert [(r["wins"], r["ties"], r["losses"]) for r in summary["ranking"]] == [(2, 2, 0), (1, 2, 1), (0, 2, 2)]
    assert [r["win_rate"] for r in summary["ranking"]] == [0.75, 0.5, 0.25]
    assert [r["comparisons"] for r in summary["ranking"]] == [4, 4, 4]
    assert RunReport.model_validate_json(arena_report().to_json()).summary[0].details == summary
    cases = json.loads(arena_report().to_json())["cases"]
    assert [c["results"][0]["details"]["outcome"] for c in cases] == ["tie within the judge's noise"] * 2


def article(page: str) -> str:
    start = page.index('<article class="arena"')
    return page[start:page.index("</article>", start)]


def test_the_html_report_shows_the_ranking_with_intervals_the_verdicts_and_the_matrix() -> None:
    report = arena_report()
    page = render_html(report)
    found = article(page)
    assert "Mean P(first) over both orders of every pair: <b>0.600</b>" in found
    ranking = re.findall(r'<tr><td class="n">(\d)</td><td>(.*?)</td><td class="n">(.*?)</td>'
                         r'<td class="n">(.*?)</td><td class="n">(.*?)</td></tr>', found)
    rows = {row["name"]: row for row in report.summary[0].details["ranking"]}
    assert [(rank, unescape(name), record) for rank, name, _, _, record in ranking] == [
        ("1", "x", "2 / 2 / 0"), ("2", "z", "1 / 2 / 1"), ("3", XSS, "0 / 2 / 2")
    ]
    x = rows["x"]
    assert ranking[0][2] == f"{x['strength']:+.3f} [{x['strength_low']:+.3f}, {x['strength_high']:+.3f}]"
    assert ranking[0][3] == f"75.0% [{x['win_rate_low']:.1%}–75.0%]"  # two ties held: at most 3 of 4
    verdicts = found[found.index('<table class="verdicts">'):found.index("</table>", found.index("verdicts"))]
    assert re.findall(r'<td class="verdict same">(.*?)</td>', verdicts) == ["no significant difference"] * 3
    matrix = found[found.index('<table class="pairwise">'):found.index("</table>", found.index("pairwise"))]
    rows_html = re.findall(r"<tr><th>(.*?)</th>(.*?)</tr>", matrix[matrix.index("<tbody>"):])
    cells = {unescape(name): re.findall(r'<td class="n [a-z]+">(.*?)</td>', row) for name, row in rows_html}
    assert cells == {"x": ["–", "0.650", "0.700"], "z": ["0.350", "–", "0.600"], XSS: ["0.300", "0.400", "–"]}
    assert XSS not in page  # escaped everywhere
    assert "P(first), A first" in found


def test_the_html_report_shows_each_case_input_and_outputs_side_by_side_with_its_outcome() -> None:
    found = article(render_html(arena_report()))
    cases = re.findall(r'<div class="arena-case"><h5>(.*?)</h5><p class="outcome (\w+)">(.*?) · score', found)
    assert cases == [("sum", "tie", "tie within the judge&#x27;s noise"), ("product", "tie", "tie within the judge&#x27;s noise")]
    first = found[found.index('<div class="arena-case">'):found.index("<h5>product</h5>")]
    assert '<dt>input</dt><dd><div class="text">What is 2+2?</div></dd>' in first
    outputs = re.findall(r'<figure class="output"><figcaption>(.*?)</figcaption><div class="text">(.*?)</div>', first)
    assert [(unescape(n), t) for n, t in outputs] == [("x", "4"), (XSS, "5"), ("z", "four")]
    # each pair's outcome, three contestants (product, 2*2, sorts first in prefix order: it read the first six)
    assert ("x / &lt;b&gt;x&lt;/b&gt;: tie within the judge&#x27;s noise<br>x / z: x preferred<br>"
            "&lt;b&gt;x&lt;/b&gt; / z: z preferred</p>") in first


def test_a_run_without_an_arena_has_no_arena_section() -> None:
    from test_reports import sample_report

    assert 'class="arena"' not in render_html(sample_report())


def test_the_terminal_prints_outcomes_ranking_verdicts_and_the_position_bias() -> None:
    console = Console(record=True, width=200)
    print_report(console, arena_report())
    text = console.export_text()
    assert re.search(r"│ sum\s+│ 0\.650 tie within the judge's noise │", text)
    assert "Ranking: better" in text
    assert re.search(r"│\s+1 │ x\s+│ [+-]\d\.\d{3} \[[+-]\d\.\d{3}, [+-]\d\.\d{3}\] │\s+75\.0% \[\d+\.\d%–75\.0%\] │\s+2 / 2 / 0 │", text)
    assert "Verdicts: better" in text
    assert re.search(r"│ x\s+│ z\s+│\s+1 / 1 / 0 │ .* │ no significant difference │", text)
    assert "better: mean P(first) 0.600 over both orders of every pair (0.5: no position bias)." in text

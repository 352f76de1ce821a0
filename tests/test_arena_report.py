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
    # win rates: x (0.7 + 0.65) / 2; z (0.35 + 0.6) / 2; the markup-named (0.3 + 0.4) / 2
    assert [r["win_rate"] for r in summary["ranking"]] == [pytest.approx(v) for v in (0.675, 0.475, 0.35)]
    assert [r["comparisons"] for r in summary["ranking"]] == [4, 4, 4]
    assert RunReport.model_validate_json(arena_report().to_json()).summary[0].details == summary


def test_the_html_report_shows_the_ranking_and_the_pairwise_matrix() -> None:
    page = render_html(arena_report())
    article = page[page.index('<article class="arena"'):page.index("</article>", page.index('<article class="arena"'))]
    assert "Mean P(first) over both orders of every pair: <b>0.600</b>" in article
    ranking = re.findall(r"<tr><td class=\"n\">(\d)</td><td>(.*?)</td><td class=\"n\">(.*?)</td>"
                         r"<td class=\"n\">(.*?)</td><td class=\"n\">(\d+)</td></tr>", article)
    assert [(rank, unescape(name), rate, n) for rank, name, _, rate, n in ranking] == [
        ("1", "x", "67.5%", "4"), ("2", "z", "47.5%", "4"), ("3", XSS, "35.0%", "4")
    ]
    matrix = article[article.index('<table class="pairwise">'):article.index("</table>", article.index("pairwise"))]
    rows = re.findall(r"<tr><th>(.*?)</th>(.*?)</tr>", matrix[matrix.index("<tbody>"):])
    cells = {unescape(name): re.findall(r'<td class="n [a-z]+">(.*?)</td>', row) for name, row in rows}
    assert cells == {"x": ["–", "0.650", "0.700"], "z": ["0.350", "–", "0.600"], XSS: ["0.300", "0.400", "–"]}
    assert XSS not in page  # escaped everywhere
    assert "P(first), A first" in article


def test_a_run_without_an_arena_has_no_arena_section() -> None:
    from test_reports import sample_report

    assert 'class="arena"' not in render_html(sample_report())


def test_the_terminal_prints_the_ranking_and_the_position_bias() -> None:
    console = Console(record=True, width=120)
    print_report(console, arena_report())
    text = console.export_text()
    assert "Ranking: better" in text
    assert re.search(r"│\s+1 │ x\s+│\s+\+\d\.\d{3} │\s+67\.5% │\s+4 │", text)
    assert "better: mean P(first) 0.600 over both orders of every pair (0.5: no position bias)." in text

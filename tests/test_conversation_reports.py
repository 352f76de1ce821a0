"""Conversations in every report: the terminal, JSON Lines, JUnit, HTML, compare, and the pytest helpers."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from localeval.cli.console import print_report
from localeval.data.case import ConversationalTestCase
from localeval.data.dataset import Dataset
from localeval.data.results import RunReport
from localeval.metrics import build_metric
from localeval.reports import cases_jsonl, junit_xml, read_cases, render_html
from localeval.reports.compare import compare
from localeval.run.runner import RunOptions, evaluate
from localeval.testing import ScriptedJudge, assert_fails, assert_passes, cases

RECORDS: list[dict[str, Any]] = [
    {"name": "veggie", "chatbot_role": "a cooking assistant", "turns": [
        {"role": "user", "content": "I'm vegetarian. Dinner idea?"},
        {"role": "assistant", "content": "Try a steak.", "tools_called": ["recipes"]},
        {"role": "user", "content": "<b>Thanks</b>"},
        {"role": "assistant", "content": "Enjoy!"}]},
    {"chatbot_role": "a cooking assistant", "turns": [
        {"role": "user", "content": "Soup?"}, {"role": "assistant", "content": "Tomato soup."}]},
]


def dataset(tmp_path: Path) -> Dataset:
    path = tmp_path / "chats.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    return Dataset.load(path)


def run(tmp_path: Path, first: list[str]) -> RunReport:
    """knowledge_retention and role_adherence over both conversations; ``first``: the verdicts on conversation 1."""
    metrics = [build_metric("knowledge_retention", {"include_reason": False, "threshold": 0.75}),
               build_metric("role_adherence", {"include_reason": False})]
    judge = ScriptedJudge([{"verdicts": first}, {"verdicts": ["in_role", "in_role"]},  # case by case
                           {"verdicts": ["kept"]}, {"verdicts": ["in_role"]}])
    return evaluate(dataset(tmp_path), metrics, judge, options=RunOptions(order="input"))


def test_the_terminal_shows_one_row_per_conversation_with_its_length(tmp_path: Path) -> None:
    out = io.StringIO()
    print_report(Console(file=out, width=200, force_terminal=False, color_system=None), run(tmp_path, ["kept", "contradicted"]))
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.getvalue().splitlines() if line.startswith("│ ")]
    assert rows[:2] == [["1", "veggie (4 turns)", "0.500 fail", "1.000 pass"],
                        ["2", f"{tmp_path}/chats.jsonl:2 (2 turns)", "1.000 pass", "1.000 pass"]]


def test_json_lines_carry_the_turns_and_the_per_turn_verdicts(tmp_path: Path) -> None:
    report = run(tmp_path, ["kept", "contradicted"])
    path = tmp_path / "cases.jsonl"
    path.write_text(cases_jsonl(report.cases), encoding="utf-8")
    back = read_cases(path)
    assert back == report.cases
    assert back[0].inputs["turns"][1] == {"role": "assistant", "content": "Try a steak.", "tools_called": [{"name": "recipes"}]}
    assert back[0].results[0].details["verdicts"] == [
        {"turn": 2, "verdict": "kept"}, {"turn": 4, "verdict": "contradicted"}]
    assert RunReport.model_validate_json(report.to_json()) == report  # the report format is unchanged


def test_junit_lists_each_judged_turns_verdict_under_a_failure(tmp_path: Path) -> None:
    root = ET.fromstring(junit_xml(run(tmp_path, ["kept", "contradicted"])).split("\n", 1)[1])
    case = root.find("testsuite[@name='knowledge_retention']/testcase[@name='veggie']")
    assert case is not None and case.get("line") == "1"
    failure = case.find("failure")
    assert failure is not None and failure.text == (
        "1 of 2 assistant turns keep what the user said (0 forgot, 1 contradicted).\nturn 2: kept\nturn 4: contradicted")


def test_compare_finds_the_conversation_that_regressed(tmp_path: Path) -> None:
    comparison = compare(run(tmp_path, ["kept", "kept"]), run(tmp_path, ["kept", "forgot"]))
    assert [(c.kind, c.case, c.metric, c.score_a, c.score_b) for c in comparison.changes] == [
        ("regression", "#1 veggie", "knowledge_retention", 1.0, 0.5)]


def test_html_shows_the_transcript_with_each_turns_verdicts_beside_it(tmp_path: Path) -> None:
    page = render_html(run(tmp_path, ["kept", "contradicted"]))
    assert page.count('<ol class="transcript">') == 2
    assert '<div class="body conversation">' in page
    first = page.split('<ol class="transcript">')[1].split("</ol>")[0]
    turns = first.split('<li class="turn ')[1:]
    assert [t.split('"')[0] for t in turns] == ["user", "assistant", "user", "assistant"]
    assert "<ul class=\"turn-verdicts\"></ul>" in turns[0]  # nothing judged the user's turns
    assert 'class="chip good" title="knowledge_retention: kept"' in turns[1]
    assert 'class="chip good" title="role_adherence: in_role"' in turns[1]
    assert 'class="chip bad" title="knowledge_retention: contradicted"' in turns[3]
    assert "tools called: recipes" in turns[1]
    assert "&lt;b&gt;Thanks&lt;/b&gt;" in turns[2] and "<b>Thanks" not in page


def test_the_pytest_helpers_take_conversations(tmp_path: Path) -> None:
    dataset(tmp_path)  # writes the file
    params = cases(tmp_path / "chats.jsonl")
    assert [p.id for p in params] == ["veggie", "chats.jsonl:2"]
    conversation = params[0].values[0]
    assert isinstance(conversation, ConversationalTestCase)
    metric = build_metric("role_adherence", {"include_reason": False, "threshold": 0.75})
    assert assert_passes(conversation, metric, ScriptedJudge([{"verdicts": ["in_role", "in_role"]}])).score == 1.0
    assert assert_fails(conversation, metric, ScriptedJudge([{"verdicts": ["out_of_role", "in_role"]}]),
                        ).details["verdicts"][0] == {"turn": 2, "verdict": "out_of_role"}
    with pytest.raises(AssertionError, match="judges single-turn test cases, not conversations"):
        assert_passes(conversation, build_metric("exact_match"))


# Appended to the page after its own script: where the turns and their verdicts are drawn.
LAYOUT_PROBE = """<script>
(function () {
  var turn = document.querySelector('#case-1 li.turn[data-turn="3"]');
  var said = turn.querySelector(".said").getBoundingClientRect();
  var chips = turn.querySelector(".turn-verdicts").getBoundingClientRect();
  var chip = turn.querySelector(".chip.bad");
  document.body.setAttribute("data-probe", JSON.stringify({
    open: document.getElementById("case-1").open, saidRight: said.right, chipsLeft: chips.left,
    saidTop: said.top, chipsTop: chips.top, chipsBottom: chips.bottom, saidBottom: said.bottom,
    chipColor: getComputedStyle(chip).color, chipText: chip.textContent}));
})();
</script>
"""


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="needs headless Chromium at /usr/bin/chromium")
def test_in_a_browser_each_turns_verdicts_sit_beside_it(tmp_path: Path) -> None:
    import html

    from test_html_browser import chromium

    page = tmp_path / "report.html"
    page.write_text(render_html(run(tmp_path, ["kept", "contradicted"])).replace("</body>", LAYOUT_PROBE + "</body>"),
                    encoding="utf-8")
    dom = chromium(tmp_path, f"{page.as_uri()}#case-1", "--dump-dom", window="1280,1600")
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, "the probe did not run"
    probe = json.loads(html.unescape(found.group(1)))
    assert probe["open"] is True
    assert probe["chipsLeft"] >= probe["saidRight"]  # beside the turn, not under it
    assert probe["chipsTop"] < probe["saidBottom"] and probe["saidTop"] < probe["chipsBottom"]
    assert probe["chipColor"] == "rgb(163, 35, 26)"  # --fail: a contradicted turn reads as bad
    assert probe["chipText"] == "knowledge_retention contradicted"
    shot = tmp_path / "conversation.png"
    chromium(tmp_path, f"{page.as_uri()}#case-1", "--hide-scrollbars", f"--screenshot={shot}", window="1280,1400")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 30_000
    keep = os.environ.get("LOCALEVAL_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


# --- a system turn: shown in place, as context no metric judges (issue 27) -------------------------------

SYSTEM_CHAT = {"name": "with-system", "turns": [
    {"role": "system", "content": "Suggest <i>vegetarian</i> dishes only."},
    {"role": "user", "content": "Dinner?"}, {"role": "assistant", "content": "Lentil soup."}]}


def system_run(tmp_path: Path) -> RunReport:
    path = tmp_path / "system.jsonl"
    path.write_text(json.dumps(SYSTEM_CHAT) + "\n", encoding="utf-8")
    metric = build_metric("role_adherence", {"include_reason": False})  # no chatbot_role: the system turn gives it
    return evaluate(Dataset.load(path), [metric], ScriptedJudge([{"verdicts": ["out_of_role"]}]))


def test_html_shows_a_system_turn_in_place_without_verdicts(tmp_path: Path) -> None:
    page = render_html(system_run(tmp_path))
    turns = page.split('<ol class="transcript">')[1].split("</ol>")[0].split('<li class="turn ')[1:]
    assert [t.split('"')[0] for t in turns] == ["system", "user", "assistant"]
    assert "system <small>#1 · instructions, not judged</small>" in turns[0]
    assert "Suggest &lt;i&gt;vegetarian&lt;/i&gt; dishes only." in turns[0]
    assert '<ul class="turn-verdicts"></ul>' in turns[0]
    assert 'class="chip bad" title="role_adherence: out_of_role"' in turns[2]


SYSTEM_PROBE = """<script>
(function () {
  var turns = document.querySelectorAll('#case-1 li.turn');
  var system = turns[0].querySelector(".said"), user = turns[1].querySelector(".said");
  var box = system.getBoundingClientRect(), next = user.getBoundingClientRect();
  document.body.setAttribute("data-probe", JSON.stringify({
    text: system.innerText, height: box.height, above: box.bottom <= next.top,
    border: getComputedStyle(system).borderTopStyle, chips: turns[0].querySelectorAll(".chip").length}));
})();
</script>
"""


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="needs headless Chromium at /usr/bin/chromium")
def test_in_a_browser_the_system_turn_shows_first_set_apart_and_unjudged(tmp_path: Path) -> None:
    import html

    from test_html_browser import chromium

    page = tmp_path / "report.html"
    page.write_text(render_html(system_run(tmp_path)).replace("</body>", SYSTEM_PROBE + "</body>"), encoding="utf-8")
    dom = chromium(tmp_path, f"{page.as_uri()}#case-1", "--dump-dom", window="1280,1200")
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, "the probe did not run"
    probe = json.loads(html.unescape(found.group(1)))
    assert probe["text"].split("\n") == ["SYSTEM #1 · INSTRUCTIONS, NOT JUDGED", "Suggest <i>vegetarian</i> dishes only."]
    assert probe["height"] > 20 and probe["above"] is True
    assert probe["border"] == "dashed" and probe["chips"] == 0

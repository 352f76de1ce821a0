"""Every judged run says how far to trust its judge: the HTML banner, the JSON report, pytest's summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import localeval.testing  # noqa: F401 -- kept by pytester's restore of sys.modules (see test_pytest_plugin)
from localeval.backends.base import Fingerprint
from localeval.data.results import FamilyTrust, JudgeTrust, RunReport
from localeval.metaeval.check import CheckStore, JudgeCheck
from localeval.reports.html import render_html

pytest_plugins = ["pytester"]


def report(trust: list[JudgeTrust]) -> RunReport:
    return RunReport(run_id="r", created_at="2026-11-25T16:00:00+00:00", localeval_version="0", cases=[], summary=[],
                     trust=trust)


AT_CHANCE = JudgeTrust(judge="backend", model="SmolLM2-135M-Instruct.Q4_1.gguf", checked_at="2026-11-25",
                       check_command="localeval check-judge --model smollm2-135m-instruct", families=[
                           FamilyTrust(family="correctness", metrics=["correctness"], checked=True, ordered=0.42,
                                       pairs=24, bad_failed=0, good_passed=24, at_chance=True)])
UNCHECKED = JudgeTrust(judge="backend", model="judge.gguf", check_command="localeval check-judge --model judge.gguf",
                       families=[FamilyTrust(family="faithfulness", metrics=["faithfulness"], checked=False)])


def test_the_html_report_opens_with_a_loud_banner_for_a_judge_at_chance() -> None:
    page = render_html(report([AT_CHANCE]))
    banner = page[page.index('<section class="trust'):]
    assert banner.startswith('<section class="trust alarm"')
    assert "is AT CHANCE on correctness" in banner
    assert page.index('class="trust') < page.index('class="summary"')  # at the top, above the summary


def test_the_html_report_names_the_command_for_an_unchecked_judge() -> None:
    page = render_html(report([UNCHECKED]))
    assert '<section class="trust warn"' in page
    assert "check it with `localeval check-judge --model judge.gguf`" in page


def test_the_json_report_keeps_the_trust_and_reads_it_back(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    report([AT_CHANCE]).save(path)
    assert json.loads(path.read_text())["trust"][0]["families"][0]["at_chance"] is True
    assert RunReport.load(path).trust == [AT_CHANCE]


#: A scripted judge standing in for a llama.cpp model (a plainly scripted one has no check to report).
STAND_IN = Fingerprint(kind="llama.cpp", model="judge.gguf", model_sha256="0" * 64, runtime="llama-cpp-python 0")
INNER = """
from localeval import GEval, TestCase
from localeval.backends.base import Fingerprint
from localeval.testing import ScriptedJudge, assert_passes

def test_answer():
    judge = ScriptedJudge(logprobs=[{"1": -5.0, "2": -5.0, "3": -5.0, "4": -5.0, "5": -0.1}],
                          fingerprint=Fingerprint(kind="llama.cpp", model="judge.gguf", model_sha256="0" * 64,
                                                  runtime="llama-cpp-python 0"))
    metric = GEval(name="correctness", criteria="Correct.", evaluation_steps=["Check it."], include_reason=False)
    assert_passes(TestCase(input="q", actual_output="a"), metric, judge)
"""


def test_pytest_says_how_far_to_trust_each_judge_its_tests_asked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(INNER)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "*localeval: how far to trust the judges*",
        "judge backend (judge.gguf) has not been checked on correctness: check it with "
        "`localeval check-judge --model judge.gguf`",
    ])


def test_pytest_reads_the_judges_stored_check(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    checks = pytester.path / "checks"
    monkeypatch.setenv("LOCALEVAL_CHECKS_DIR", str(checks))
    judge = STAND_IN
    CheckStore(checks).save(JudgeCheck.model_validate({
        "judge": judge.model_dump(), "checked_at": "2026-11-25T16:00:00+00:00", "families": [{
            "family": "correctness", "metric": "geval", "pairs_sha256": "0" * 64, "pairs": 24, "errored": 0,
            "ordered": 0.5, "threshold": 0.5, "bad_failed": 0, "good_passed": 24}]}))
    pytester.makepyfile(INNER)
    result = pytester.runpytest_subprocess()
    result.stdout.fnmatch_lines(["judge backend (judge.gguf) is AT CHANCE on correctness*"])


def test_a_session_that_judged_nothing_says_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess()
    assert "how far to trust" not in result.stdout.str()

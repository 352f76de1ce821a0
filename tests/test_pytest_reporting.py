"""What a pytest session with localeval reports: each judged metric as JUnit properties of its test, the
summary table at the end, the session's localeval report, and the line when every test was deselected.

Inner sessions run with pytester and a scripted judge (exact scores); the last test asks the real default
model (SmolLM2), through the ``localeval_judge`` fixture.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

# Imported here so that pytester's restore of sys.modules after an in-process run keeps them.
import localeval.testing.session_report
import localeval.testing.summary  # noqa: F401
from localeval.data.case import TestCase
from localeval.data.results import RunReport
from localeval.metrics import ExactMatch
from localeval.paths import Paths
from localeval.reports.formats import REPORT_FILES
from localeval.testing import assert_passes
from localeval.testing.recording import Judgement, listening

pytest_plugins = ["pytester"]

#: Where the models are, read before pytester points HOME at its own folder.
MODEL_HOME = Paths.from_environ(os.environ).home

INNER = '''
import math
import threading

from localeval import ExactMatch, GEval, TestCase
from localeval.backends.base import Fingerprint
from localeval.testing import ScriptedJudge, assert_passes, assert_test

#: A scripted judge standing in for a llama.cpp model: a model judge, as far as the summary knows.
STAND_IN = Fingerprint(kind="llama.cpp", model="judge.gguf", model_sha256="0" * 64, runtime="llama-cpp-python 0")
CORRECT = GEval(name="correctness", criteria="Correct.", evaluation_steps=["Check it."], include_reason=False)


def points(n):
    """All the judge's probability on n of 1..5: G-Eval scores (n - 1) / 4."""
    return {str(s): 0.0 if s == n else -math.inf for s in range(1, 6)}


def test_exact():
    case = TestCase(name="capital", input="Capital of France?", actual_output="Paris", expected_output="Paris")
    assert_test(case, [ExactMatch()])


def test_two_cases():
    judge = ScriptedJudge(logprobs=[points(4), points(2)])
    assert_passes(TestCase(input="q1", actual_output="a"), CORRECT, judge)
    assert_passes(TestCase(input="q2", actual_output="b"), CORRECT, judge)  # 0.25: fails


def test_error():
    assert_passes(TestCase(input="q", actual_output="a"), ExactMatch())  # no expected_output: an error


def test_stand_in():
    assert_passes(TestCase(input="q", actual_output="a"), CORRECT, ScriptedJudge(logprobs=[points(5)], fingerprint=STAND_IN))


def test_plain():
    pass
'''

#: G-Eval's reason when it writes none.
SUMMARY = "Expected score {} on 1-5 (the valid scores covered 100% of the judge's probability)."
MISSING = "MetricInputError: metric 'exact_match' needs field 'expected_output', which is missing"


def properties(junit: Path) -> dict[str, list[tuple[str, str]]]:
    """Each test case's properties in a JUnit XML file, by test name."""
    root = ET.parse(junit).getroot()
    return {
        case.get("name", ""): [(p.get("name", ""), p.get("value", "")) for p in case.iter("property")]
        for case in root.iter("testcase")
    }


def metric(
    key: str, score: str, threshold: str, passed: str, reason: str, judge: str | None = None
) -> list[tuple[str, str]]:
    found = [(f"localeval.{key}.score", score), (f"localeval.{key}.threshold", threshold),
             (f"localeval.{key}.passed", passed), (f"localeval.{key}.reason", reason)]
    return found + ([(f"localeval.{key}.judge", judge)] if judge else [])


def definitions(path: Path) -> dict[str, int]:
    """The line of each function's ``def`` in a file."""
    lines = path.read_text().splitlines()
    return {line.split("(")[0].removeprefix("def "): n for n, line in enumerate(lines, 1) if line.startswith("def ")}


@pytest.fixture
def no_checks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An empty store of judge checks: no judge here has been checked."""
    monkeypatch.setenv("LOCALEVAL_CHECKS_DIR", str(tmp_path / "checks"))


# --- JUnit properties ------------------------------------------------------------------------------


def test_each_judged_metric_is_a_property_of_its_test_in_junit_xml(pytester: pytest.Pytester, no_checks: None) -> None:
    pytester.makepyfile(INNER)
    result = pytester.runpytest("--junitxml=junit.xml", "-W", "error")
    result.assert_outcomes(passed=3, failed=2)
    assert properties(pytester.path / "junit.xml") == {
        "test_exact": metric("exact_match", "1.0", "1.0", "true", "The actual output matches the expected output exactly."),
        "test_two_cases": metric("correctness", "0.75", "0.5", "true", SUMMARY.format("4.00"), "scripted-model")
        + metric("correctness#2", "0.25", "0.5", "false", SUMMARY.format("2.00"), "scripted-model"),
        "test_error": metric("exact_match", "", "1.0", "error", MISSING),
        "test_stand_in": metric("correctness", "1.0", "0.5", "true", SUMMARY.format("5.00"), "judge.gguf"),
        "test_plain": [],
    }


def test_assertions_from_several_threads_each_get_their_properties(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from concurrent.futures import ThreadPoolExecutor
        from localeval import ExactMatch, TestCase
        from localeval.testing import assert_passes

        def test_threads():
            cases = [TestCase(input=str(n), actual_output=str(n), expected_output=str(n)) for n in range(8)]
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(lambda case: assert_passes(case, ExactMatch()), cases))
        """
    )
    pytester.runpytest("--junitxml=junit.xml", "-W", "error").assert_outcomes(passed=1)
    names = [name for name, _ in properties(pytester.path / "junit.xml")["test_threads"]]
    keys = ["exact_match"] + [f"exact_match#{n}" for n in range(2, 9)]
    assert sorted(names) == sorted(f"localeval.{k}.{f}" for k in keys for f in ("score", "threshold", "passed", "reason"))


def test_the_assertions_tell_a_listener_and_need_no_pytest(tmp_path: Path) -> None:
    heard: list[Judgement] = []
    case = TestCase(input="q", actual_output="a", expected_output="a")
    with listening(heard.append):
        result = assert_passes(case, ExactMatch())
    [judgement] = heard
    assert (judgement.case, [m.kind for m in judgement.metrics], list(judgement.results)) == (case, ["exact_match"], [result])
    assert judgement.judge is None and not judgement.scripted
    script = (
        "import sys\n"
        "from localeval import ExactMatch, TestCase\n"
        "from localeval.testing import assert_passes\n"
        "assert_passes(TestCase(input='q', actual_output='a', expected_output='a'), ExactMatch())\n"
        "print('pytest' in sys.modules)\n"
    )
    outside = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert outside.stdout == "False\n"  # nobody listens, and nothing imported pytest


# --- the summary table ---------------------------------------------------------------------------------


def test_the_summary_counts_each_metric_by_judge_and_labels_scripted_judges(
    pytester: pytest.Pytester, no_checks: None
) -> None:
    pytester.makepyfile(INNER)
    result = pytester.runpytest("-W", "error")
    result.stdout.re_match_lines(
        [
            r"=+ localeval: judged metrics =+$",
            r"metric       passed  failed  errored  mean  judge           check$",
            r"exact_match       1       0        1  1\.00  -               -$",
            r"correctness       1       1        0  0\.50  scripted-model  scripted$",
            r"correctness       1       0        0  1\.00  judge\.gguf      unchecked on correctness$",
            r"=+ localeval: how far to trust the judges =+$",
            r"judge backend \(judge\.gguf\) has not been checked on correctness: check it with "
            r"`localeval check-judge --model judge\.gguf`$",
        ],
        consecutive=True,
    )
    assert "scripted-model) has not been checked" not in result.stdout.str()  # a script needs no check


def test_the_summary_shows_a_judges_stored_check(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from localeval.backends.base import Fingerprint
    from localeval.metaeval.check import CheckStore, JudgeCheck

    checks = pytester.path / "checks"
    monkeypatch.setenv("LOCALEVAL_CHECKS_DIR", str(checks))
    judge = Fingerprint(kind="llama.cpp", model="judge.gguf", model_sha256="0" * 64, runtime="llama-cpp-python 0")
    CheckStore(checks).save(JudgeCheck.model_validate({
        "judge": judge.model_dump(), "checked_at": "2026-11-25T16:00:00+00:00", "families": [{
            "family": "correctness", "metric": "geval", "pairs_sha256": "0" * 64, "pairs": 24, "errored": 0,
            "ordered": 0.5, "threshold": 0.5, "bad_failed": 0, "good_passed": 24}]}))
    pytester.makepyfile(INNER)
    result = pytester.runpytest("-k", "stand_in")
    result.stdout.re_match_lines([r"correctness       1       0        0  1\.00  judge\.gguf  AT CHANCE on correctness: "
                                  r"50% of 24 pairs ordered$"])


def test_a_session_that_judged_nothing_shows_no_table(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "localeval:" not in result.stdout.str()


# --- the session's report ------------------------------------------------------------------------------------


def test_the_session_report_is_written_to_the_folder_named(pytester: pytest.Pytester, no_checks: None) -> None:
    pytester.makepyfile(INNER)
    result = pytester.runpytest_subprocess("--localeval-report", "out/reports")
    result.assert_outcomes(passed=3, failed=2)
    folder = pytester.path / "out" / "reports"
    result.stdout.fnmatch_lines([f"localeval: report written to {folder}"])
    assert sorted(p.name for p in folder.iterdir()) == sorted(REPORT_FILES.values())  # a run folder's files
    report = RunReport.load(folder / "report.json")
    [test_file] = pytester.path.glob("*.py")
    where = {name: f"{test_file.name}:{line}" for name, line in definitions(test_file).items()}
    assert [(c.name, c.location, [(r.metric, r.score) for r in c.results]) for c in report.cases] == [
        ("capital", where["test_exact"], [("exact_match", 1.0)]),
        ("test_two_cases", where["test_two_cases"], [("correctness", 0.75)]),
        ("test_two_cases", where["test_two_cases"], [("correctness", 0.25)]),
        ("test_error", where["test_error"], [("exact_match", None)]),
        ("test_stand_in", where["test_stand_in"], [("correctness", 1.0)]),
    ]
    assert [(s.metric, s.passed, s.failed, s.errored, s.mean_score) for s in report.summary] == [
        ("exact_match", 1, 0, 1, 1.0), ("correctness", 2, 1, 0, pytest.approx(2 / 3))]
    assert report.backend is not None and report.backend.model == "judge.gguf"
    assert [(name, judge.kind) for name, judge in report.judges.items()] == [("scripted-model", "scripted")]
    assert [(t.judge, t.unchecked) for t in report.trust] == [("backend", ["correctness"])]
    assert "test_two_cases" in (folder / "report.html").read_text()


def test_the_ini_key_names_the_folder_relative_to_the_ini_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\nlocaleval_report = reports\n")
    pytester.makepyfile(
        """
        from localeval import ExactMatch, TestCase
        from localeval.testing import assert_passes

        def test_one():
            assert_passes(TestCase(input="q", actual_output="a", expected_output="a"), ExactMatch())
        """
    )
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)  # run from below the ini file
    result = pytester.runpytest_subprocess(str(pytester.path))
    result.assert_outcomes(passed=1)
    summary = json.loads((pytester.path / "reports" / "report.json").read_text())["summary"]
    assert [(s["metric"], s["passed"]) for s in summary] == [("exact_match", 1)]
    assert not (sub / "reports").exists()


def test_a_file_where_the_report_folder_should_be_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    pass\n")
    (pytester.path / "taken").write_text("")
    result = pytester.runpytest("--localeval-report", "taken")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --localeval-report: {pytester.path / 'taken'} is a file, not a folder"])


def test_a_report_that_cannot_be_written_fails_a_passing_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    pass\n")
    (pytester.path / "taken").write_text("")
    result = pytester.runpytest_subprocess("--localeval-report", "taken/reports")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["--localeval-report: */taken/reports/*: cannot write the * report (*)"])


# --- every test deselected ----------------------------------------------------------------------------------

SELECTION = """
import pytest

def test_plain():
    pass

@pytest.mark.localeval
def test_marked():
    pass
"""


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (("-m", "localeval and slow"), "all 2 collected tests were deselected by -m 'localeval and slow' (1 marked localeval)"),
        (("-k", "zzz"), "all 2 collected tests were deselected by -k 'zzz' (1 marked localeval)"),
        (("-m", "localeval", "-k", "plain"),
         "all 2 collected tests were deselected by -m 'localeval', -k 'plain' (1 marked localeval)"),
    ],
)
def test_a_selection_of_nothing_says_so_and_exits_5(
    pytester: pytest.Pytester, options: tuple[str, ...], line: str
) -> None:
    pytester.makepyfile(SELECTION)
    result = pytester.runpytest(*options)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines([f"localeval: {line}: none ran, so pytest exits 5"])


def test_a_selection_without_localeval_in_it_says_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    pass\n")
    deselected = pytester.runpytest("-k", "zzz")
    assert deselected.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "localeval:" not in deselected.stdout.str()
    marked = pytester.runpytest("-m", "localeval")  # the marker asked for: said, even with no test marked
    marked.stdout.fnmatch_lines(["localeval: the one collected test was deselected by -m 'localeval' (0 marked localeval)*"])


# --- with the real default model ----------------------------------------------------------------------------


@pytest.mark.model
def test_the_real_judges_scores_reach_junit_and_the_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytester.makepyfile(
        """
        from localeval import GEval, TestCase
        from localeval.testing import assert_score

        def test_answer(localeval_judge):
            metric = GEval(name="correctness", criteria="The answer is correct.",
                           evaluation_steps=["Check that the answer names Paris."], include_reason=False)
            case = TestCase(input="What is the capital of France?", actual_output="Paris.")
            assert_score(case, metric, localeval_judge, min=0.0, max=1.0)
        """
    )
    monkeypatch.setenv("LOCALEVAL_HOME", str(MODEL_HOME))
    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path / "cache"))  # a fresh cache: the model is asked
    result = pytester.runpytest_subprocess("--junitxml=junit.xml", "--localeval-report", "out")
    result.assert_outcomes(passed=1)
    found = dict(properties(pytester.path / "junit.xml")["test_answer"])
    report = RunReport.load(pytester.path / "out" / "report.json")
    [[scored]] = [case.results for case in report.cases]
    assert scored.score is not None and 0.0 <= scored.score <= 1.0
    assert found["localeval.correctness.score"] == str(scored.score)
    assert found["localeval.correctness.passed"] == str(scored.passed).lower()
    assert found["localeval.correctness.judge"] == report.backend.model == "smollm2-135m-instruct"  # type: ignore[union-attr]
    result.stdout.re_match_lines([rf"correctness .* {scored.score:.2f}  smollm2-135m-instruct  (?!scripted)\S"])

"""``localeval compare`` in a subprocess: exit codes with and without --fail-on-regression, the files
it writes (--json, --html), and bad input as one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from command_line import Project
from test_compare import FLIPS_ONLY, STEADY_FALL, Cell, run, scores
from test_failures import one_error_line

from localeval.cli.exits import EXIT_FAILED, EXIT_INPUT, EXIT_OK
from localeval.data.results import RunReport
from localeval.reports.compare import Comparison

V1_REPORT = Path(__file__).parent / "data" / "report-v1" / "report.json"


def saved(project: Project, name: str, report: RunReport) -> str:
    report.save(project / name)
    return name


def pair(project: Project, values: tuple[list[float], list[float]]) -> tuple[str, str]:
    return saved(project, "a.json", scores("a", values[0])), saved(project, "b.json", scores("b", values[1]))


def test_without_the_option_compare_exits_0_and_notes_the_regressions(project: Project) -> None:
    result = project.localeval("compare", *pair(project, FLIPS_ONLY))
    assert result.returncode == EXIT_OK, result.stderr
    assert "8 regressions" in result.stdout.splitlines()[-1]
    assert result.stderr.strip() == ("note: exit 0 although 8 regression(s) were found: compare exits 1 on them "
                                     "only with --fail-on-regression mean, flip or any")


FLIP = "c0: m went from pass to fail; and 7 more"
MEAN = "m: the mean got worse beyond its 95% interval (mean -0.030, 95% CI "


@pytest.mark.parametrize(("values", "gate", "failure"), [
    (FLIPS_ONLY, "flip", FLIP),  # 8 pass → fail, the mean within its interval
    (FLIPS_ONLY, "mean", None),
    (FLIPS_ONLY, "any", FLIP),
    (STEADY_FALL, "flip", None),  # every score lower, none below the threshold
    (STEADY_FALL, "mean", MEAN),
    (STEADY_FALL, "any", MEAN),
    ((STEADY_FALL[1], STEADY_FALL[0]), "any", None),  # better: nothing to fail on
])
def test_each_gate_fails_on_its_own_regression(project: Project, values: tuple[list[float], list[float]],
                                               gate: str, failure: str | None) -> None:
    result = project.localeval("compare", *pair(project, values), "--fail-on-regression", gate)
    assert result.returncode == (EXIT_OK if failure is None else EXIT_FAILED), result.stdout + result.stderr
    if failure is None:
        assert result.stderr == ""
        return
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"regression (--fail-on-regression {gate}): {failure}"), line


def test_an_unknown_gate_is_refused_before_reading_the_runs(project: Project) -> None:
    result = project.localeval("compare", "nowhere", "nowhere", "--fail-on-regression", "worse")
    assert result.returncode == EXIT_INPUT
    assert one_error_line(result.stderr) == "error: --fail-on-regression takes mean, flip, any, got 'worse'"


def test_json_and_html_are_written_where_asked(project: Project) -> None:
    rows: list[tuple[str | None, dict[str, Cell]]] = [("dose", {"m": 1.0})]
    a = saved(project, "a.json", run("v1", rows, outputs=["Take two pills a day."]))
    b = saved(project, "b.json", run("v2", rows, outputs=["Take twenty pills at once."]))
    result = project.localeval("compare", a, b, "--json", "out/c.json", "--html", "out/c.html")
    assert result.returncode == EXIT_OK, result.stderr
    assert result.stdout.splitlines()[-2:] == ["out/c.json", "out/c.html"]
    comparison = Comparison.model_validate_json((project / "out" / "c.json").read_text(encoding="utf-8"))
    assert (comparison.format_version, comparison.run_a, comparison.run_b) == (1, "v1", "v2")
    assert [c.output_b for c in comparison.outputs_changed] == ["Take twenty pills at once."]
    page = (project / "out" / "c.html").read_text(encoding="utf-8")
    assert "Take <del>two</del><ins>twenty</ins> pills" in page


def test_a_json_path_that_cannot_be_written_is_one_line(project: Project) -> None:
    rows: list[tuple[str | None, dict[str, Cell]]] = [("x", {"m": 1.0})]
    a = saved(project, "a.json", run("a", rows))
    project.write("file", "not a folder")
    result = project.localeval("compare", a, a, "--json", "file/c.json")
    assert result.returncode == EXIT_INPUT
    assert one_error_line(result.stderr).startswith("error: file/c.json: cannot write the comparison (")


def test_a_version_1_report_is_still_compared(project: Project) -> None:
    result = project.localeval("compare", str(V1_REPORT), str(V1_REPORT))
    assert result.returncode == EXIT_OK, result.stderr
    assert result.stdout.splitlines()[-1].endswith(": nothing changed.")


def test_runs_with_no_case_in_common_are_one_line(project: Project) -> None:
    a = saved(project, "a.json", run("a", [("x", {"m": 1.0}), ("y", {"m": 1.0})]))
    b = saved(project, "b.json", run("b", [("p", {"m": 1.0})]))
    result = project.localeval("compare", a, b)
    assert result.returncode == EXIT_INPUT
    assert one_error_line(result.stderr) == (
        "error: runs a (2 cases) and b (1 cases) have no case in common by name: nothing to compare")
    assert result.stdout == ""


def test_a_report_of_a_format_it_does_not_know_is_one_line(project: Project) -> None:
    raw = json.loads(scores("a", [0.5]).to_json())
    project.write("old.json", json.dumps({**raw, "format_version": 0}))
    result = project.localeval("compare", "old.json", "old.json")
    assert result.returncode == EXIT_INPUT
    assert one_error_line(result.stderr) == "error: old.json: report format 0 is not 1 or 2"


def test_an_unfinished_run_is_one_line_that_says_how_to_finish_it(project: Project) -> None:
    project.write("unfinished/journal.jsonl", "")
    a = saved(project, "a.json", scores("a", [0.5]))
    result = project.localeval("compare", a, "unfinished")
    assert result.returncode == EXIT_INPUT
    assert one_error_line(result.stderr) == (
        "error: run unfinished has no report.json: it has not finished; "
        "resume it with: localeval run --resume unfinished")


def test_a_folder_that_is_not_a_run_is_one_line(project: Project) -> None:
    (project / "photos").mkdir()
    a = saved(project, "a.json", scores("a", [0.5]))
    result = project.localeval("compare", a, "photos")
    assert result.returncode == EXIT_INPUT
    line = one_error_line(result.stderr)
    assert line.startswith("error: no run 'photos': neither a directory with a journal.jsonl nor a run id under ")

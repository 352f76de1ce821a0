"""Results, summaries, the JSON report, and the runner's evaluate() and check_inputs()."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scripted import ScriptedBackend

from localeval.backends.base import Fingerprint
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.data.results import (
    REPORT_FORMAT,
    CaseResult,
    MetricResult,
    MetricSummary,
    RunReport,
    RunStats,
)
from localeval.errors import ConfigError, DatasetError, InputError
from localeval.metrics import ExactMatch, GEval
from localeval.run.events import Events, MetricFinished
from localeval.run.runner import RunOptions, check_inputs, evaluate


def result(score: float | None, passed: bool | None, error: str | None = None) -> MetricResult:
    return MetricResult(metric="m", kind="exact_match", score=score, passed=passed, threshold=0.5, error=error)


ERRORED = result(None, None, "MetricInputError: no output")

# --- MetricSummary ---------------------------------------------------------------------


def test_summary_counts() -> None:
    results = [result(1.0, True), result(0.25, False), result(0.75, True), ERRORED, result(0.0, False)]
    summary = MetricSummary.of("m", results)
    intervals = {"pass_rate_interval", "mean_score_interval"}  # tests/test_summary_intervals.py
    assert summary.model_dump(exclude=intervals) == {
        "metric": "m",
        "cases": 5,
        "passed": 2,
        "failed": 2,
        "errored": 1,
        "pass_rate": 0.5,
        "mean_score": 0.5,  # (1 + .25 + .75 + 0) / 4: errors are not zeros
        "details": {},  # what the metric says about the run beyond these: nothing here
    }


def test_summary_pass_rate_is_none_when_everything_errored() -> None:
    summary = MetricSummary.of("m", [ERRORED, ERRORED])
    assert (summary.cases, summary.passed, summary.failed, summary.errored) == (2, 0, 0, 2)
    assert summary.pass_rate is None
    assert summary.mean_score is None


def test_summary_of_no_results() -> None:
    summary = MetricSummary.of("m", [])
    assert (summary.cases, summary.passed, summary.failed, summary.errored) == (0, 0, 0, 0)
    assert summary.pass_rate is None


def test_summary_pass_rate_of_one_in_three() -> None:
    summary = MetricSummary.of("m", [result(1.0, True), result(0.0, False), result(0.0, False)])
    assert summary.pass_rate == pytest.approx(1 / 3, rel=1e-12)
    assert summary.mean_score == pytest.approx(1 / 3, rel=1e-12)


def test_a_result_score_must_be_in_the_unit_interval() -> None:
    with pytest.raises(ValueError, match="less than or equal to 1"):
        result(1.5, True)


# --- RunReport -------------------------------------------------------------------------


def sample_report() -> RunReport:
    scored = MetricResult(
        metric="correctness", kind="geval", score=0.55, passed=True, threshold=0.5,
        reason="Expected score 3.20", details={"distribution": {"1": 0.1, "2": 0.2}, "covered_mass": 0.9},
        duration_s=0.125,
    )
    return RunReport(
        run_id="abc123",
        created_at="2026-11-01T12:00:00+00:00",
        localeval_version="0.1.0",
        config={"backend": {"model": "tiny"}},
        backend=Fingerprint(kind="llama.cpp", model="tiny", model_sha256="a" * 64, runtime="x 1"),
        cases=[
            CaseResult(index=0, name="one", location="data.jsonl:1", results=[scored]),
            CaseResult(index=1, location="data.jsonl:3", results=[ERRORED]),
        ],
        summary=[MetricSummary.of("correctness", [scored, ERRORED])],
        stats=RunStats(model_calls=3, cache_hits=1, duration_s=2.5),
    )


def test_report_save_then_load_is_equal(tmp_path: Path) -> None:
    report = sample_report()
    path = tmp_path / "out" / "report.json"
    report.save(path)
    loaded = RunReport.load(path)
    assert loaded == report
    assert loaded.model_dump() == report.model_dump()
    assert [p.name for p in path.parent.iterdir()] == ["report.json"]  # no temporary left


def test_report_format_version_comes_first(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    sample_report().save(path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert next(iter(raw)) == "format_version"
    assert raw["format_version"] == REPORT_FORMAT == 2


def test_report_flags() -> None:
    report = sample_report()
    assert report.any_errored is True
    assert report.any_failed is False


def test_loading_another_format_version_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    raw = json.loads(sample_report().model_dump_json())
    raw["format_version"] = 3
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(InputError) as info:
        RunReport.load(path)
    assert str(info.value) == f"{path}: report format 3 is not 1 or 2"


def test_loading_a_report_without_a_version_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(InputError, match="report format None is not 1 or 2"):
        RunReport.load(path)


def test_loading_malformed_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text('{\n  "format_version": 1,\n  "run_id": oops\n}\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        RunReport.load(path)
    assert str(info.value) == f"{path}:3: not JSON (Expecting value)"


def test_loading_an_invalid_report_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    raw = json.loads(sample_report().model_dump_json())
    del raw["run_id"]
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(InputError, match=r"field 'run_id': Field required"):
        RunReport.load(path)


def test_loading_a_missing_report_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read report"):
        RunReport.load(tmp_path / "absent.json")


# --- evaluate --------------------------------------------------------------------------

CASES = [
    TestCase(input="a", actual_output="Paris", expected_output="Paris", name="first"),
    TestCase(input="b", actual_output="rome", expected_output="Rome"),
    TestCase(input="c", actual_output="Oslo ", expected_output="Oslo", name="third"),
]


def test_evaluate_returns_results_in_input_order() -> None:
    seen: list[tuple[int, str, float | None]] = []

    def listen(event: object) -> None:
        if isinstance(event, MetricFinished):
            seen.append((event.case_index, event.result.metric, event.result.score))

    report = evaluate(
        Dataset.from_cases(CASES),
        [ExactMatch(), ExactMatch(name="loose", ignore_case=True)],
        options=RunOptions(order="input", config={"note": "test"}),
        events=Events(listen),
    )
    assert [c.index for c in report.cases] == [0, 1, 2]
    assert [c.name for c in report.cases] == ["first", None, "third"]
    assert [c.location for c in report.cases] == ["<memory>:1", "<memory>:2", "<memory>:3"]
    assert [[r.score for r in c.results] for c in report.cases] == [[1.0, 1.0], [0.0, 1.0], [1.0, 1.0]]
    assert seen == [
        (0, "exact_match", 1.0), (0, "loose", 1.0),
        (1, "exact_match", 0.0), (1, "loose", 1.0),
        (2, "exact_match", 1.0), (2, "loose", 1.0),
    ]
    assert [(s.metric, s.cases, s.passed, s.failed, s.errored) for s in report.summary] == [
        ("exact_match", 3, 2, 1, 0),
        ("loose", 3, 3, 0, 0),
    ]
    assert report.summary[0].pass_rate == pytest.approx(2 / 3, rel=1e-12)
    assert report.config == {"note": "test"}
    assert report.backend is None
    assert (report.stats.model_calls, report.stats.cache_hits) == (None, None)
    assert report.format_version == REPORT_FORMAT
    assert report.any_failed is True


def test_evaluate_with_a_judge_records_its_fingerprint() -> None:
    judge = ScriptedBackend(logprobs=[{"1": math.log(0.5), "2": math.log(0.5)}])
    metric = GEval(evaluation_steps=("x",), score_range=(1, 2), include_reason=False)
    report = evaluate(Dataset.from_cases(CASES[:1]), [metric], judge)
    assert report.backend == judge.fingerprint
    assert report.cases[0].results[0].score == pytest.approx(0.5, rel=1e-12)
    assert len(judge.requests) == 1


def test_check_inputs_names_the_path_line_and_field() -> None:
    dataset = Dataset(
        cases=[CASES[0], TestCase(input="q", actual_output="x")],
        locations=["data.jsonl:2", "data.jsonl:7"],
    )
    with pytest.raises(DatasetError) as info:
        check_inputs(dataset, [ExactMatch()])
    err = info.value
    assert (err.path, err.line, err.field) == ("data.jsonl", 7, "expected_output")
    assert str(err) == "data.jsonl:7: field 'expected_output': metric 'exact_match' needs it, and it is missing"


def test_evaluate_checks_inputs_before_any_judge_call() -> None:
    judge = ScriptedBackend(logprobs=[{"1": -1.0, "2": -1.0}])
    dataset = Dataset(cases=[CASES[0], TestCase(input="q")], locations=["d.jsonl:1", "d.jsonl:2"])
    with pytest.raises(DatasetError, match=r"^d\.jsonl:2: field 'actual_output'"):
        evaluate(dataset, [GEval(evaluation_steps=("x",), score_range=(1, 2))], judge)
    assert judge.requests == []


@pytest.mark.parametrize(("record", "state"), [
    ('{"input": "q", "actual_output": "x"}', "missing"),  # no key: the case has no value
    ('{"input": "q", "actual_output": "x", "expected_output": null}', "missing"),
    ('{"input": "q", "actual_output": "x", "expected_output": ""}', "empty"),
])
def test_check_inputs_tells_a_missing_field_from_an_empty_one(tmp_path: Path, record: str, state: str) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"input": "q", "actual_output": "x", "expected_output": "x"}\n' + record + "\n")
    with pytest.raises(DatasetError) as info:
        check_inputs(Dataset.load(data), [ExactMatch()])
    assert str(info.value) == f"{data}:2: field 'expected_output': metric 'exact_match' needs it, and it is {state}"


def test_check_inputs_rejects_two_metrics_with_one_name() -> None:
    with pytest.raises(ConfigError) as info:
        check_inputs(Dataset.from_cases(CASES), [ExactMatch(name="m"), ExactMatch(name="m", ignore_case=True)])
    assert str(info.value) == "two metrics are named 'm'; give each a distinct name"


def test_check_inputs_a_default_name_counts_too() -> None:
    with pytest.raises(ConfigError, match="two metrics are named 'exact_match'"):
        check_inputs(Dataset.from_cases([]), [ExactMatch(), ExactMatch(name="exact_match")])


# -- version 1 reports ---------------------------------------------------------------------

V1_REPORT = Path(__file__).parent / "data" / "report-v1" / "report.json"


def test_a_version_1_report_is_read_as_version_2() -> None:
    raw = json.loads(V1_REPORT.read_text(encoding="utf-8"))
    assert raw["format_version"] == 1
    report = RunReport.load(V1_REPORT)
    assert report.format_version == REPORT_FORMAT == 2
    by_metric = {(c.name, r.metric): r for c in report.cases for r in c.results}
    # hallucination failed at 0.5 > 0.3: the rule is read from that failure, for both its results
    assert [by_metric[(n, "hallucination")].lower_is_better for n in ("paris", "lyon")] == [True, True]
    assert [by_metric[(n, "exact_match")].lower_is_better for n in ("paris", "lyon")] == [False, False]
    lyon = by_metric[("lyon", "hallucination")]
    assert (lyon.score, lyon.raw_score, lyon.passed) == (0.5, 0.5, False)
    assert "raw_score" not in lyon.details and lyon.details["counts"] == {"agrees": 1, "contradicts": 1}
    assert lyon.usage is None  # version 1 did not measure it
    assert report.dataset is None
    # what version 1 had is all still there
    v1_results = [r for c in raw["cases"] for r in c["results"]]
    assert [r.score for c in report.cases for r in c.results] == [r["score"] for r in v1_results]


def test_an_upgraded_report_saves_as_version_2_and_loads_equal(tmp_path: Path) -> None:
    report = RunReport.load(V1_REPORT)
    report.save(tmp_path / "report.json")
    assert json.loads((tmp_path / "report.json").read_text())["format_version"] == 2
    assert RunReport.load(tmp_path / "report.json") == report

"""A run's summary gives each metric's pass rate with its Wilson 95% interval and its mean score with a
bootstrap one: recorded in the report, shown in the terminal, and absent (not invented) where a report
was written before them."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from localeval import stats
from localeval.cli.console import print_report
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.data.results import MetricResult, MetricSummary, RunReport
from localeval.metrics import ExactMatch
from localeval.run.runner import evaluate

V1_REPORT = Path(__file__).parent / "data" / "report-v1" / "report.json"
Z = 1.959963984540054  # the standard normal's 97.5% quantile


def wilson_by_hand(passed: int, n: int) -> tuple[float, float]:
    """Wilson's score interval: centre (p + z²/2n) / (1 + z²/n), half-width
    z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)."""
    p = passed / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def scored(score: float, passed: bool) -> MetricResult:
    return MetricResult(metric="m", kind="geval", score=score, passed=passed, threshold=0.5)


ERRORED = MetricResult(metric="m", kind="geval", threshold=0.5, error="BackendError: down")


def eight_of_ten() -> RunReport:
    """exact_match over ten cases, eight of them right: no judge, so the numbers are the metric's own."""
    cases = [TestCase(input=f"q{i}", actual_output="yes" if i < 8 else "no", expected_output="yes") for i in range(10)]
    return evaluate(Dataset.from_cases(cases), [ExactMatch()])


def test_a_run_records_the_pass_rates_wilson_interval() -> None:
    (summary,) = eight_of_ten().summary
    assert summary.pass_rate == 0.8 and summary.pass_rate_interval is not None
    low, high = wilson_by_hand(8, 10)
    assert summary.pass_rate_interval.low == pytest.approx(low, abs=1e-9)
    assert summary.pass_rate_interval.high == pytest.approx(high, abs=1e-9)
    assert summary.pass_rate_interval.method == "wilson" and summary.pass_rate_interval.confidence == 0.95


def test_the_mean_scores_interval_is_a_bootstrap_over_the_scored_results_only() -> None:
    four = [scored(0.2, False), scored(0.4, False), scored(0.6, True), scored(0.9, True)]
    results = [*four, ERRORED, *four, *four]
    summary = MetricSummary.of("m", results)
    interval = summary.mean_score_interval
    assert interval is not None and interval.method == "bootstrap BCa"
    assert summary.mean_score == pytest.approx(0.525)  # the error is no zero
    assert 0.2 <= interval.low < 0.525 < interval.high <= 0.9  # a mean of resamples stays within the values
    bootstrap = stats.mean_interval([0.2, 0.4, 0.6, 0.9] * 3)  # the scores alone, in the run's order
    assert bootstrap is not None and (interval.low, interval.high) == (bootstrap.low, bootstrap.high)
    assert MetricSummary.of("m", results).mean_score_interval == interval  # seeded: the same run, the same interval
    rate = summary.pass_rate_interval
    assert rate is not None and [rate.low, rate.high] == pytest.approx(list(wilson_by_hand(6, 12)))


def test_no_interval_is_invented_where_there_is_nothing_to_estimate() -> None:
    nothing = MetricSummary.of("m", [ERRORED, ERRORED])
    assert (nothing.pass_rate_interval, nothing.mean_score_interval) == (None, None)
    one = MetricSummary.of("m", [scored(0.7, True)])
    assert one.pass_rate_interval is not None and one.mean_score_interval is None  # a mean of one has no spread
    few = MetricSummary.of("m", [scored(0.1 * i, i >= 5) for i in range(stats.MIN_VALUES - 1)])
    assert few.pass_rate_interval is not None and few.mean_score_interval is None  # too few to resample
    same = MetricSummary.of("m", [scored(1.0, True)] * stats.MIN_VALUES)
    assert same.mean_score_interval is not None
    assert (same.mean_score_interval.low, same.mean_score_interval.high) == (1.0, 1.0)


def test_the_intervals_survive_the_json_report(tmp_path: Path) -> None:
    report = eight_of_ten()
    report.save(tmp_path / "report.json")
    saved = json.loads((tmp_path / "report.json").read_text())["summary"][0]
    assert saved["pass_rate_interval"]["method"] == "wilson"
    assert RunReport.load(tmp_path / "report.json") == report


def test_a_report_written_before_intervals_loads_without_them(tmp_path: Path) -> None:
    raw = json.loads(eight_of_ten().to_json())
    for summary in raw["summary"]:
        del summary["pass_rate_interval"], summary["mean_score_interval"]
    (tmp_path / "report.json").write_text(json.dumps(raw))
    loaded = RunReport.load(tmp_path / "report.json")
    assert loaded.summary[0].pass_rate == 0.8 and loaded.summary[0].pass_rate_interval is None
    old = RunReport.load(V1_REPORT)  # format version 1, upgraded on reading
    assert all(s.pass_rate_interval is None and s.mean_score_interval is None for s in old.summary)
    assert summary_rows(old)[0][4:] == ["50%", "0.500"]  # the figures alone, no brackets


def summary_rows(report: RunReport) -> list[list[str]]:
    """The terminal's summary table, piped: its body rows' cells."""
    printed = io.StringIO()
    print_report(Console(file=printed, width=80, force_terminal=False, color_system=None), report)
    lines = printed.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "Summary")
    header = next(i for i in range(start, len(lines)) if "pass rate" in lines[i])
    body = lines[header + 2:]
    rows = body[: next(i for i, line in enumerate(body) if line.startswith("└"))]
    return [[cell.strip() for cell in line.strip("│").split("│")] for line in rows]


def test_the_terminal_summary_shows_each_figure_with_its_interval() -> None:
    printed = io.StringIO()
    print_report(Console(file=printed, width=80, force_terminal=False, color_system=None), eight_of_ten())
    text = printed.getvalue()
    assert "pass rate [95% CI]" in text and "mean score [95% CI]" in text
    (row,) = summary_rows(eight_of_ten())
    # Wilson's 8 of 10: [0.4902, 0.9433]. The mean of eight 1s and two 0s, bootstrapped (seeded, so the
    # same everywhere): a resample of ten 1s is likely (0.8^10 ≈ 11%), so the interval reaches 1.
    assert row[4:] == ["80% [49–94]", "0.800 [0.400–1.000]"]

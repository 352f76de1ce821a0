"""[metrics_defaults]: run-wide settings of every metric (localeval/config.py's MetricDefaults)."""

from __future__ import annotations

from pathlib import Path

import pytest

from localeval.config import RunConfig
from localeval.errors import ConfigError

METRICS = """
[[metrics]]
metric = "geval"
name = "correctness"
criteria = "Correct."

[[metrics]]
metric = "faithfulness"
threshold = 0.8

[[metrics]]
metric = "exact_match"
"""


def load(tmp_path: Path, text: str) -> RunConfig:
    path = tmp_path / "eval.toml"
    path.write_text(text)
    return RunConfig.load(path)


def test_reasons_off_for_every_metric_that_writes_one(tmp_path: Path) -> None:
    metrics = load(tmp_path, "[metrics_defaults]\nreasons = false\n" + METRICS).build_metrics()
    assert [getattr(m, "include_reason", None) for m in metrics] == [False, False, None]


def test_reasons_stay_on_by_default(tmp_path: Path) -> None:
    metrics = load(tmp_path, METRICS).build_metrics()
    assert [getattr(m, "include_reason", None) for m in metrics] == [True, True, None]


def test_a_calibrated_threshold_for_every_judged_metric_without_its_own(tmp_path: Path) -> None:
    metrics = load(tmp_path, '[metrics_defaults]\nthreshold = "calibrated"\n' + METRICS).build_metrics()
    assert [(m.threshold, m.threshold_source) for m in metrics] == [
        (0.5, "calibrated"), (0.8, "configured"), (1.0, "configured")]


def test_an_unknown_default_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="metrics_defaults"):
        load(tmp_path, '[metrics_defaults]\nthreshold = "tuned"\n' + METRICS)


def test_weighted_verdicts_for_every_metric_that_counts_verdicts_and_sets_none(tmp_path: Path) -> None:
    text = '[metrics_defaults]\nverdict_reading = "weighted"\n' + METRICS + (
        '\n[[metrics]]\nmetric = "bias"\nverdict_reading = "written"\n')
    metrics = load(tmp_path, text).build_metrics()
    assert [getattr(m, "verdict_reading", None) for m in metrics] == [None, "weighted", None, "written"]
    unset = load(tmp_path, METRICS).build_metrics()
    assert [getattr(m, "verdict_reading", None) for m in unset] == [None, "written", None]


def test_a_prefix_threshold_for_every_metric_that_reads_scores_and_sets_none(tmp_path: Path) -> None:
    text = "[metrics_defaults]\nprune_below = 1e-4\n" + METRICS + (
        '\n[[metrics]]\nmetric = "geval"\nname = "own"\ncriteria = "Correct."\nprune_below = 0.0\n')
    metrics = load(tmp_path, text).build_metrics()
    assert [getattr(m, "prune_below", None) for m in metrics] == [1e-4, None, None, 0.0]
    unset = load(tmp_path, METRICS).build_metrics()
    assert [getattr(m, "prune_below", None) for m in unset] == [1e-9, None, None]


def test_a_prefix_threshold_above_one_percent_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="prune_below"):
        load(tmp_path, "[metrics_defaults]\nprune_below = 0.5\n" + METRICS)

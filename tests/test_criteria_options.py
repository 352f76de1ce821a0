"""The options G-Eval and the arena share are declared once (``metrics/criteria.py``'s CriteriaMetric)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from localeval.metrics import GEval
from localeval.metrics.arena import Arena
from localeval.metrics.criteria import CriteriaMetric


@pytest.mark.parametrize("metric", [GEval, Arena])
def test_each_shared_option_is_the_bases_with_its_default(metric: type[CriteriaMetric]) -> None:
    shared = CriteriaMetric.model_fields
    assert issubclass(metric, CriteriaMetric)
    for name, field in shared.items():
        assert metric.model_fields[name].get_default(call_default_factory=True) == field.get_default(
            call_default_factory=True), name
    # Only the scoring methods differ: the arena has no "top".
    assert [n for n in shared if metric.model_fields[n].annotation != field_type(n)] == (
        ["scoring"] if metric is Arena else [])


def field_type(name: str) -> object:
    return CriteriaMetric.model_fields[name].annotation


def test_both_sample_twenty_by_default() -> None:
    assert GEval(criteria="Correct.").samples == Arena(criteria="Better.").samples == 20


@pytest.mark.parametrize("metric", [GEval, Arena])
def test_both_need_criteria_or_steps_and_say_so_alike(metric: type[CriteriaMetric]) -> None:
    with pytest.raises(ValidationError, match="give criteria or evaluation_steps"):
        metric()
    with pytest.raises(ValidationError, match="scoring"):
        metric(criteria="c", scoring="never")

"""Correlations of judge scores with human scores, on examples small enough to check by hand."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from localeval.metaeval.correlations import Correlations, pooled, summary_level


def coefficients(c: Correlations) -> tuple[float | None, float | None, float | None]:
    return c.pearson, c.spearman, c.kendall


def close(actual: tuple[float | None, ...], expected: tuple[float | None, ...]) -> bool:
    return all(
        (a is None and e is None) or (a is not None and e is not None and math.isclose(a, e, abs_tol=1e-12))
        for a, e in zip(actual, expected, strict=True)
    )


def test_a_perfect_linear_relation_is_one_everywhere():
    c = pooled([1, 2, 3, 4], [10, 20, 30, 40])
    assert close(coefficients(c), (1.0, 1.0, 1.0))
    assert (c.items, c.groups) == (4, None)


def test_a_reversed_order_is_minus_one_everywhere():
    assert close(coefficients(pooled([1, 2, 3, 4], [4, 3, 2, 1])), (-1.0, -1.0, -1.0))


def test_monotone_but_not_linear_ranks_perfectly_but_pearson_does_not():
    # x - mean = (-3, -2, -1, 6), y - mean = (-1.5, -.5, .5, 1.5): Σxy = 14, Σx² = 50, Σy² = 5
    c = pooled([1, 2, 3, 10], [1, 2, 3, 4])
    assert close(coefficients(c), (14 / math.sqrt(50 * 5), 1.0, 1.0))


def test_one_swapped_pair():
    # Spearman 1 - 6·Σd²/(n(n²-1)) = 1 - 6·2/60; Kendall: 5 concordant, 1 discordant of 6 pairs
    c = pooled([1, 2, 3, 4], [1, 3, 2, 4])
    assert close(coefficients(c), (0.8, 0.8, 4 / 6))


def test_ties_use_average_ranks_and_kendall_tau_b():
    # judge ranks (1.5, 1.5, 3.5, 3.5): ρ = 4/√(4·5). τ-b: 4 concordant, 0 discordant,
    # 2 pairs tied in the judge only: 4/√((6-2)·6).
    c = pooled([1, 1, 2, 2], [1, 2, 3, 4])
    assert close(coefficients(c), (2 / math.sqrt(5), 4 / math.sqrt(20), 4 / math.sqrt(24)))


def test_pairs_without_a_judge_score_are_dropped():
    c = pooled([1, None, 2, 3], [1, 100, 2, 3])
    assert close(coefficients(c), (1.0, 1.0, 1.0))
    assert c.items == 3


@pytest.mark.parametrize(
    "judge, human, items",
    [
        ([2, 2, 2], [1, 2, 3], 3),  # constant judge
        ([1, 2, 3], [5, 5, 5], 3),  # constant human
        ([1], [1], 1),  # one pair
        ([], [], 0),
        ([None, None], [1, 2], 0),
        ([None, 1, None], [1, 2, 3], 1),
    ],
)
def test_undefined_correlations_are_none(judge, human, items):
    c = pooled(judge, human)
    assert coefficients(c) == (None, None, None)
    assert c.items == items


def test_lengths_must_match():
    with pytest.raises(ValueError, match="3 judge scores but 2 human scores"):
        pooled([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="3 judge scores but 2 group keys"):
        summary_level([1, 2, 3], [1, 2, 3], ["a", "b"])


SUMMARY_ITEMS = [  # (group, judge, human)
    ("A", 1, 1), ("A", 2, 2), ("A", 3, 3),  # r = ρ = τ = 1
    ("B", 1, 3), ("B", 2, 2), ("B", 3, 1),  # r = ρ = τ = -1
    ("C", 1, 1), ("C", 2, 3), ("C", 3, 2), ("C", 4, 4),  # r = ρ = 0.8, τ = 4/6
    ("D", 5, 1),  # one item: skipped
    ("E", 1, 2), ("E", 2, 2),  # constant human: skipped
    ("F", 3, 1), ("F", 3, 2),  # constant judge: skipped
    ("G", None, 1), ("G", 2, 2),  # one item left once the judge error is dropped: skipped
]


def test_summary_level_skips_undefined_groups_and_averages_the_rest():
    groups, judge, human = zip(*SUMMARY_ITEMS)
    c = summary_level(judge, human, groups)
    assert close(coefficients(c), (0.8 / 3, 0.8 / 3, (1 - 1 + 4 / 6) / 3))
    assert (c.groups, c.items) == (3, 10)


def test_summary_level_does_not_depend_on_the_order_of_items():
    shuffled = SUMMARY_ITEMS[1::2] + SUMMARY_ITEMS[::2]
    groups, judge, human = zip(*shuffled)
    c = summary_level(judge, human, groups)
    assert close(coefficients(c), (0.8 / 3, 0.8 / 3, (4 / 6) / 3))
    assert (c.groups, c.items) == (3, 10)


def test_summary_level_with_no_usable_group_is_undefined():
    c = summary_level([1, 2, 3], [1, 2, 3], [0, 1, 2])  # one item per group, as in QAGS
    assert coefficients(c) == (None, None, None)
    assert (c.groups, c.items) == (0, 0)


def test_importing_localeval_does_not_load_scipy():
    code = (
        "import json, sys, localeval, localeval.metaeval.correlations, localeval.metaeval.evaluation, localeval.cli\n"
        "print(json.dumps('scipy' in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) is False

"""Arena cases from runs' reports: each golden's outputs as contestants.

Two forms, one mechanism (:func:`_pair`: collect each golden's outputs from every
contestant, checking that they answered the same inputs):

- :func:`arena_dataset` — two runs of the same inputs (``localeval arena RUN_A RUN_B``)
  compare what two versions of an application produced; the contestants are named after
  the runs. The runs' cases are matched as ``compare`` matches them (by name when every
  case has a unique name in both runs, else by position; with ``[[targets]]``, per
  target), and every matched pair must agree on what the application was given
  (:data:`SHARED_FIELDS`); otherwise the runs are of different datasets and the arena
  refuses, naming the first case that differs. Two runs of the very same file (same
  sha256) hold the same outputs: nothing to compare, refused too.
- :func:`targets_arena_dataset` — one run with ``[[targets]]`` (``localeval arena RUN``)
  holds every target's answer to each golden; the contestants are the targets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.data.results import CaseResult, RunReport
from localeval.errors import InputError
from localeval.reports.compare import case_key, names_are_keys

#: What the application was given: the same in both runs, or the runs are of different datasets.
#: (retrieval_context and tools_called are what the application did, like its output.)
SHARED_FIELDS = ("input", "expected_output", "context", "expected_tools")


@dataclass(frozen=True)
class Contestant:
    """One side of the arena: its name, how errors call it, its cases by the key goldens are matched by."""

    name: str
    origin: str  #: "run r1", or "run r1, target small"
    cases: dict[str, CaseResult]
    failures: dict[str, str]  #: key -> why the case has no output (a target that failed), where known


def arena_dataset(a: RunReport, b: RunReport, names: tuple[str, str] | None = None) -> Dataset:
    """The arena's cases: for each case of both runs, ``{name_a: A's output, name_b: B's output}``.

    ``names`` name the contestants (default: the run ids). Raises :class:`InputError`
    when the runs are not of the same inputs, or a case has no output in one of them.
    """
    if a.run_id == b.run_id:
        raise InputError(f"run {a.run_id} is given twice; the arena compares two runs")
    name_a, name_b = names or (a.run_id, b.run_id)
    if name_a == name_b:
        raise InputError(f"the two contestants need different names, got {name_a!r} twice")
    if a.dataset is not None and b.dataset is not None and a.dataset.sha256 == b.dataset.sha256:
        raise InputError(
            f"runs {a.run_id} and {b.run_id} judged the same file ({a.dataset.path}, sha256 {a.dataset.sha256[:12]}…): "
            "their outputs are the same. The arena compares two runs of the same inputs with different outputs"
        )
    by_name = names_are_keys(a) and names_are_keys(b)
    sides = [
        Contestant(name, f"run {r.run_id}", {case_key(c, by_name): c for c in r.cases}, {})
        for name, r in ((name_a, a), (name_b, b))
    ]
    return _pair(sides, f"runs {a.run_id} and {b.run_id} are of different datasets")


def targets_arena_dataset(report: RunReport) -> Dataset:
    """The arena's cases from one run with several targets: per golden, ``{target: its output}``.

    Raises :class:`InputError` when the run has fewer than two targets, or a golden lacks
    a target's output (the target failed on it: its error is named).
    """
    if len(report.targets) < 2:
        had = ", ".join(t.name for t in report.targets) or "none"
        raise InputError(
            f"run {report.run_id} has {len(report.targets)} target(s) ({had}); the arena of one run compares "
            "the outputs of its [[targets]], two or more. Give two runs to compare their outputs"
        )
    by_name = names_are_keys(report)
    sides = []
    for target in report.targets:
        mine = [c for c in report.cases if c.target == target.name]
        keys = [c.name if by_name and c.name else f"#{golden}" for golden, c in enumerate(mine)]
        failures = {keys[i]: why for i, why in target.errors.items() if i < len(keys)}
        sides.append(Contestant(target.name, f"run {report.run_id}, target {target.name}", dict(zip(keys, mine)),
                                failures))
    return _pair(sides, f"run {report.run_id}: the targets did not answer the same goldens")


def _pair(sides: Sequence[Contestant], mismatch: str) -> Dataset:
    """Per case of the first side, every side's output under its name; ``mismatch`` starts the
    refusal when the sides' cases differ."""
    first = sides[0]
    for side in sides[1:]:
        if len(side.cases) != len(first.cases):
            raise InputError(f"{mismatch}: {len(first.cases)} cases against {len(side.cases)}")
    cases: list[TestCase] = []
    for key, case in first.cases.items():
        matched = []
        for side in sides:
            other = side.cases.get(key)
            if other is None:
                raise InputError(f"{mismatch}: case {key} is only in {first.origin}")
            _check_same_inputs(case, other, key, mismatch)
            matched.append(other)
        outputs = {side.name: _output(side, key, other) for side, other in zip(sides, matched)}
        shared = {f: case.inputs[f] for f in SHARED_FIELDS if f in case.inputs}
        metadata: dict[str, Any] = {"arena": {side.name: other.location for side, other in zip(sides, matched)}}
        targets = {other.target for other in matched}
        if len(targets) == 1 and None not in targets:  # two runs' answers of the same target: keep which
            metadata["target"] = case.target
        cases.append(TestCase(**shared, name=case.name, contestants=outputs, metadata=metadata))
    return Dataset.from_cases(cases)


def _check_same_inputs(case_a: CaseResult, case_b: CaseResult, key: str, mismatch: str) -> None:
    for field in SHARED_FIELDS:
        if case_a.inputs.get(field) != case_b.inputs.get(field):
            raise InputError(f"{mismatch}: case {key} ({case_a.location}) has a different {field} in each")


def _output(side: Contestant, key: str, case: CaseResult) -> Any:
    output = case.inputs.get("actual_output")
    if not output:
        why = side.failures.get(key)
        raise InputError(f"{side.origin}: case {key} ({case.location}) has no actual_output to compare"
                         + (f" (the target failed: {why})" if why else ""))
    return output

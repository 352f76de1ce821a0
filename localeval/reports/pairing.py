"""Two runs of the same inputs → arena cases: each case's two outputs as contestants named after the runs.

``localeval arena RUN_A RUN_B`` compares what two versions of an application
produced for the same inputs. The runs' cases are matched as ``compare`` matches
them (by name when every case has a unique name in both runs, else by position),
and every matched pair must agree on what the application was given
(:data:`SHARED_FIELDS`); otherwise the runs are of different datasets and the
arena refuses, naming the first case that differs. Two runs of the very same
file (same sha256) hold the same outputs: nothing to compare, refused too.
"""

from __future__ import annotations

from typing import Any

from localeval.case import TestCase
from localeval.dataset import Dataset
from localeval.errors import InputError
from localeval.reports.compare import case_key, names_are_keys
from localeval.results import CaseResult, RunReport

#: What the application was given: the same in both runs, or the runs are of different datasets.
#: (retrieval_context and tools_called are what the application did, like its output.)
SHARED_FIELDS = ("input", "expected_output", "context", "expected_tools")


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
    if len(a.cases) != len(b.cases):
        raise InputError(
            f"runs {a.run_id} and {b.run_id} are of different datasets: {len(a.cases)} cases against {len(b.cases)}"
        )
    by_name = names_are_keys(a) and names_are_keys(b)
    cases_b = {case_key(c, by_name): c for c in b.cases}
    cases: list[TestCase] = []
    for case_a in a.cases:
        key = case_key(case_a, by_name)
        case_b = cases_b.get(key)
        if case_b is None:
            raise InputError(f"runs {a.run_id} and {b.run_id} are of different datasets: case {key} is only in {a.run_id}")
        _check_same_inputs(case_a, case_b, key, a.run_id, b.run_id)
        outputs = {name_a: _output(case_a, key, a.run_id), name_b: _output(case_b, key, b.run_id)}
        shared = {f: case_a.inputs[f] for f in SHARED_FIELDS if f in case_a.inputs}
        metadata = {"arena": {name_a: case_a.location, name_b: case_b.location}}
        cases.append(TestCase(**shared, name=case_a.name, contestants=outputs, metadata=metadata))
    return Dataset.from_cases(cases)


def _check_same_inputs(case_a: CaseResult, case_b: CaseResult, key: str, run_a: str, run_b: str) -> None:
    for field in SHARED_FIELDS:
        if case_a.inputs.get(field) != case_b.inputs.get(field):
            raise InputError(
                f"runs {run_a} and {run_b} are of different datasets: case {key} ({case_a.location}) "
                f"has a different {field} in each"
            )


def _output(case: CaseResult, key: str, run_id: str) -> Any:
    output = case.inputs.get("actual_output")
    if not output:
        raise InputError(f"run {run_id}: case {key} ({case.location}) has no actual_output to compare")
    return output

"""Runs' reports → arena cases (localeval/reports/pairing.py): two runs, or one run's targets; without a model."""

from __future__ import annotations

from typing import Any

import pytest

from localeval.backends.base import Fingerprint
from localeval.data.dataset import DatasetSource
from localeval.data.results import CaseResult, RunReport, TargetRecord
from localeval.errors import InputError
from localeval.reports.pairing import arena_dataset, targets_arena_dataset


def report(run_id: str, outputs: list[str | None], names: list[str | None] | None = None, sha: str = "a") -> RunReport:
    cases = []
    for i, output in enumerate(outputs):
        inputs: dict[str, Any] = {"input": f"q{i}", "expected_output": f"e{i}", "retrieval_context": [run_id]}
        if output is not None:
            inputs["actual_output"] = output
        name = (names or [None] * len(outputs))[i]
        cases.append(CaseResult(index=i, name=name, location=f"{run_id}.jsonl:{i + 1}", inputs=inputs, results=[]))
    return RunReport(run_id=run_id, created_at="now", localeval_version="0", cases=cases, summary=[],
                     dataset=DatasetSource(path=f"{run_id}.jsonl", sha256=sha * 64))


def test_cases_pair_the_outputs_under_the_run_ids_and_keep_the_shared_inputs() -> None:
    dataset = arena_dataset(report("r1", ["x0", "x1"]), report("r2", ["y0", "y1"], sha="b"))
    assert [c.contestants for c in dataset.cases] == [{"r1": "x0", "r2": "y0"}, {"r1": "x1", "r2": "y1"}]
    first = dataset.cases[0]
    assert (first.input, first.expected_output, first.retrieval_context) == ("q0", "e0", None)  # not the apps' own
    assert first.metadata == {"arena": {"r1": "r1.jsonl:1", "r2": "r2.jsonl:1"}}


def test_cases_are_matched_by_name_when_every_case_has_a_unique_one() -> None:
    a = report("r1", ["x0", "x1"], ["one", "two"])
    b = report("r2", ["y1", "y0"], ["two", "one"], sha="b")
    for case in b.cases:  # b lists the same cases in the other order
        case.inputs.update(input=f"q{0 if case.name == 'one' else 1}", expected_output=f"e{0 if case.name == 'one' else 1}")
    dataset = arena_dataset(a, b, ("new", "old"))
    assert [(c.name, c.contestants) for c in dataset.cases] == [
        ("one", {"new": "x0", "old": "y0"}), ("two", {"new": "x1", "old": "y1"})
    ]


@pytest.mark.parametrize(
    ("b", "names", "message"),
    [
        (report("r2", ["y0"], sha="b"), None, "different datasets: 2 cases against 1"),
        (report("r2", ["y0", None], sha="b"), None, "run r2: case #1 (r2.jsonl:2) has no actual_output"),
        (report("r2", ["y0", "y1"]), None, "judged the same file (r1.jsonl"),
        (report("r2", ["y0", "y1"], sha="b"), ("same", "same"), "need different names, got 'same' twice"),
    ],
)
def test_what_cannot_be_compared_is_refused(b: RunReport, names: tuple[str, str] | None, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        arena_dataset(report("r1", ["x0", "x1"]), b, names)


def test_a_different_expected_output_means_a_different_dataset() -> None:
    b = report("r2", ["y0", "y1"], sha="b")
    b.cases[1].inputs["expected_output"] = "changed"
    with pytest.raises(InputError, match=r"case #1 \(r1.jsonl:2\) has a different expected_output in each"):
        arena_dataset(report("r1", ["x0", "x1"]), b)


def targets_report(outputs: dict[str, list[str | None]], names: list[str | None] | None = None,
                   errors: dict[str, dict[int, str]] | None = None) -> RunReport:
    """A run of len(outputs[t]) goldens answered by every target t, cases golden-major as a run writes them."""
    goldens = len(next(iter(outputs.values())))
    cases = []
    for golden in range(goldens):
        for target, answers in outputs.items():
            inputs: dict[str, Any] = {"input": f"q{golden}", "expected_output": f"e{golden}"}
            if answers[golden] is not None:
                inputs["actual_output"] = answers[golden]
            cases.append(CaseResult(index=len(cases), name=(names or [None] * goldens)[golden],
                                    location=f"g.jsonl:{golden + 1}", inputs=inputs, results=[], target=target))
    records = [TargetRecord(name=t, fingerprint=Fingerprint(kind="scripted", model=t, runtime="x 1"),
                            template_sha256="0" * 64, errors=(errors or {}).get(t, {})) for t in outputs]
    return RunReport(run_id="run1", created_at="now", localeval_version="0", cases=cases, summary=[], targets=records,
                     dataset=DatasetSource(path="g.jsonl", sha256="a" * 64))


def test_one_runs_targets_are_the_contestants_of_each_golden() -> None:
    dataset = targets_arena_dataset(targets_report({"small": ["s0", "s1"], "big": ["b0", "b1"], "x": ["x0", "x1"]}))
    assert [c.contestants for c in dataset.cases] == [
        {"small": "s0", "big": "b0", "x": "x0"}, {"small": "s1", "big": "b1", "x": "x1"}
    ]
    first = dataset.cases[1]
    assert (first.input, first.expected_output, first.actual_output) == ("q1", "e1", None)
    assert first.metadata == {"arena": {"small": "g.jsonl:2", "big": "g.jsonl:2", "x": "g.jsonl:2"}}


def test_targets_cases_keep_their_golden_names() -> None:
    dataset = targets_arena_dataset(targets_report({"small": ["s0", "s1"], "big": ["b0", "b1"]}, ["one", "two"]))
    assert [(c.name, c.contestants) for c in dataset.cases] == [
        ("one", {"small": "s0", "big": "b0"}), ("two", {"small": "s1", "big": "b1"})
    ]


@pytest.mark.parametrize(
    ("run", "message"),
    [
        (targets_report({"small": ["s0", "s1"]}), "run run1 has 1 target(s) (small); the arena of one run compares"),
        (report("r1", ["x0"]), "run r1 has 0 target(s) (none)"),
        (targets_report({"small": ["s0", "s1"], "big": ["b0", None]}, ["one", "two"],
                        {"big": {1: "timed out after 30 s"}}),
         "run run1, target big: case two (g.jsonl:2) has no actual_output to compare (the target failed: timed out"),
        (targets_report({"small": ["s0", None], "big": ["b0", "b1"]}),
         "run run1, target small: case #1 (g.jsonl:2) has no actual_output to compare"),
    ],
)
def test_a_run_without_two_answering_targets_is_refused(run: RunReport, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        targets_arena_dataset(run)


def test_a_target_that_answered_fewer_goldens_is_refused() -> None:
    run = targets_report({"small": ["s0", "s1"], "big": ["b0", "b1"]})
    run.cases.pop()  # big's answer to the second golden is missing (an interrupted run)
    with pytest.raises(InputError, match="run run1: the targets did not answer the same goldens: 2 cases against 1"):
        targets_arena_dataset(run)


def test_two_runs_with_targets_are_paired_per_target_and_their_cases_keep_it() -> None:
    a = targets_report({"small": ["s0", "s1"], "big": ["b0", "b1"]}, ["one", "two"])
    b = targets_report({"small": ["S0", "S1"], "big": ["B0", "B1"]}, ["one", "two"])
    b.run_id, b.dataset = "run2", DatasetSource(path="g.jsonl", sha256="b" * 64)
    dataset = arena_dataset(a, b, ("new", "old"))
    assert [(c.name, c.metadata["target"], c.contestants) for c in dataset.cases] == [
        ("one", "small", {"new": "s0", "old": "S0"}), ("one", "big", {"new": "b0", "old": "B0"}),
        ("two", "small", {"new": "s1", "old": "S1"}), ("two", "big", {"new": "b1", "old": "B1"}),
    ]
    assert "target" not in targets_arena_dataset(a).cases[0].metadata  # one case per golden: every target in it

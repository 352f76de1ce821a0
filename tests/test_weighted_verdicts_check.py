"""The judge check of the weighted verdict reading: its own families (``faithfulness+weighted``), checked with
``check-judge --verdicts weighted``, and a run trusted only by the check of the reading it uses.

Scripted judges: evidence about the check's bookkeeping, not about any model.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from scripted import FULL_CAPABILITIES, ScriptedBackend

from localeval.backends.base import (
    DistributionReply,
    DistributionRequest,
    Fingerprint,
    JsonReply,
    JsonRequest,
)
from localeval.cli.judge_check import check_settings_from_cli
from localeval.data.case import TestCase
from localeval.distribution import renormalize
from localeval.errors import ConfigError
from localeval.metaeval.check import CheckStore, JudgeCheck, check_family, check_judge
from localeval.metaeval.families import (
    BY_NAME,
    FAMILIES,
    WEIGHTED_FAMILIES,
    Pair,
    family_of,
    load_pairs,
    pairs_sha256,
    weighted,
)
from localeval.metaeval.trust import assess, calibrated
from localeval.metrics import build_metric

FAITHFULNESS = BY_NAME["faithfulness"]


class YesSayer(ScriptedBackend):
    """Writes "yes" for every verdict (so the written reading ties every pair), but gives "no" more
    probability where the prompt holds the planted error ("Sydney")."""

    def generate_json(self, request: JsonRequest) -> JsonReply:
        self.requests.append(request)
        count = request.json_schema["properties"]["verdicts"]["minItems"]
        value = {"verdicts": ["yes"] * count}
        return JsonReply(value=value, text=json.dumps(value), finish_reason="stop")

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        self.requests.append(request)
        planted = "Sydney" in "".join(m.content for m in request.messages)
        no = 0.4 if planted else 0.1
        probabilities = {"yes": 0.9 - no, "no": no, "idk": 0.1}
        return DistributionReply(distribution=renormalize({c: math.log(probabilities[c]) for c in request.candidates}))


def variant(i: int, which: str, output: str) -> TestCase:
    return TestCase(input=f"Question {i}: what is the capital of Australia?", actual_output=output,
                    name=f"p{i}/{which}", retrieval_context=["Canberra is the capital of Australia."])


def pairs(n: int = 4) -> list[Pair]:
    return [Pair(f"p{i}", "geography", "wrong city", variant(i, "good", "The capital is Canberra."),
                 variant(i, "bad", "The capital is Sydney.")) for i in range(n)]


def test_the_weighted_twin_orders_pairs_the_written_reading_ties() -> None:
    written = check_family(YesSayer(), FAITHFULNESS, pairs())
    twin = check_family(YesSayer(), weighted(FAITHFULNESS), pairs())
    assert (written.family, written.ordered) == ("faithfulness", 0.5)  # every pair scored 1 and 1
    assert (twin.family, twin.metric, twin.ordered) == ("faithfulness+weighted", "faithfulness", 1.0)
    assert twin.errored == 0 and twin.judge_calls == 8 * 2  # per variant: the verdicts, then one distribution


def test_the_twins_are_the_verdict_families_on_the_same_pairs() -> None:
    names = {f.name for f in WEIGHTED_FAMILIES}
    assert {"faithfulness+weighted", "bias+weighted", "answer-relevancy+weighted", "role-adherence+weighted",
            "turn-relevancy+weighted", "summarization+weighted"} <= names
    assert not names & {"correctness+weighted", "arena+weighted", "task-completion+weighted"}
    assert all(f.options["verdict_reading"] == "weighted" for f in WEIGHTED_FAMILIES)
    assert pairs_sha256(load_pairs(BY_NAME["bias+weighted"])) == pairs_sha256(load_pairs(BY_NAME["bias"]))
    assert weighted(BY_NAME["bias+weighted"]) == BY_NAME["bias+weighted"]
    assert len(FAMILIES) == len({f.name for f in FAMILIES})  # the written families are as shipped checks hold them


def test_a_metric_reading_weighted_is_spoken_for_by_the_twin() -> None:
    assert family_of(build_metric("faithfulness", {"verdict_reading": "weighted"})) == BY_NAME["faithfulness+weighted"]
    assert family_of(build_metric("faithfulness")) == FAITHFULNESS
    assert family_of(build_metric("role_adherence", {"verdict_reading": "weighted"})) == BY_NAME["role-adherence+weighted"]


def fingerprint() -> Fingerprint:
    return Fingerprint(kind="llama.cpp", model="judge.gguf", model_sha256="ab" * 32, runtime="llama.cpp test")


def store_with(tmp_path: Path, family: str) -> CheckStore:
    store = CheckStore(tmp_path / "checks", shipped=tmp_path / "none")
    store.save(JudgeCheck.model_validate({
        "judge": fingerprint().model_dump(), "checked_at": "2026-11-26T10:00:00+00:00",
        "families": [{"family": family, "metric": "faithfulness", "pairs_sha256": "0" * 64, "pairs": 24,
                      "errored": 0, "ordered": 0.9, "threshold": 0.5, "bad_failed": 20, "good_passed": 22,
                      "calibrated": {"threshold": 0.8, "fit_accuracy": 1.0, "held_out_accuracy": 0.9,
                                     "fit_pairs": 12, "held_out_pairs": 12}}]}))
    return store


@pytest.mark.parametrize(("stored", "reading", "checked"), [
    ("faithfulness", "written", True),
    ("faithfulness", "weighted", False),  # a written check is not the trust of a weighted run
    ("faithfulness+weighted", "weighted", True),
    ("faithfulness+weighted", "written", False),  # nor the other way round
])
def test_a_run_is_trusted_by_the_check_of_the_reading_it_uses(
    tmp_path: Path, stored: str, reading: str, checked: bool
) -> None:
    metric = build_metric("faithfulness", {"verdict_reading": reading})
    [trust] = assess([metric], {"backend": fingerprint()}, store_with(tmp_path, stored))
    [family] = trust.families
    assert family.family == ("faithfulness+weighted" if reading == "weighted" else "faithfulness")
    assert (family.checked, family.ordered) == (checked, 0.9 if checked else None)
    assert trust.check_command.endswith("--verdicts weighted") == (reading == "weighted")


def test_a_calibrated_threshold_comes_only_from_the_check_of_the_same_reading(tmp_path: Path) -> None:
    metric = build_metric("faithfulness", {"verdict_reading": "weighted", "threshold": "calibrated"})
    with pytest.raises(ConfigError, match=r"has no calibrated threshold for family 'faithfulness\+weighted'; "
                                          r"run: localeval check-judge --model judge.gguf --verdicts weighted"):
        calibrated([metric], {"backend": fingerprint()}, store_with(tmp_path, "faithfulness"))
    [resolved] = calibrated([metric], {"backend": fingerprint()}, store_with(tmp_path / "b", "faithfulness+weighted"))
    assert resolved.threshold == 0.8 and "on 'faithfulness+weighted'" in resolved.threshold_source


@pytest.mark.parametrize(("capabilities", "why"), [
    ({"distribution": False}, "its metric reads verdicts weighted, and the judge gives no log-probabilities"),
    ({"multi_token_candidates": False},
     "its metric reads verdicts weighted, and the judge's prefill mode cannot continue its reply"),
])
def test_a_judge_that_cannot_weigh_verdicts_skips_the_twins_and_says_why(capabilities: dict[str, Any], why: str) -> None:
    judge = YesSayer(capabilities=FULL_CAPABILITIES.model_copy(update=capabilities))
    check = check_judge(judge, [weighted(FAITHFULNESS)], [], limit=2)
    assert (check.families, check.skipped) == ([], {"faithfulness+weighted": why})
    assert judge.requests == []


def settings(**given: Any) -> Any:
    options: dict[str, Any] = {"config": None, "judge": None, "model": None, "backend": None, "base_url": None,
                               "threads": None, "families": None, "pairs": None, "no_cache": True,
                               "cache_dir": None, "report": None}
    return check_settings_from_cli(**{**options, **given})


def test_verdicts_weighted_checks_the_twins_of_the_families_asked_for() -> None:
    every = settings(verdicts="weighted")
    assert (every.families, every.human_sets) == (WEIGHTED_FAMILIES, ())
    assert settings(verdicts="weighted", families=["bias", "faithfulness"]).families == (
        BY_NAME["faithfulness+weighted"], BY_NAME["bias+weighted"])
    assert settings(families=["faithfulness+weighted"]).families == (BY_NAME["faithfulness+weighted"],)
    assert settings().families == FAMILIES


@pytest.mark.parametrize(("given", "message"), [
    ({"verdicts": "weighted", "families": ["correctness"]}, "--verdicts weighted: correctness gives no verdicts"),
    ({"verdicts": "weighted", "families": ["human-qags-xsum-consistency"]},
     "--verdicts weighted: human-qags-xsum-consistency gives no verdicts"),
    ({"verdicts": "probable"}, "--verdicts probable: give 'written' or 'weighted'"),
])
def test_a_reading_that_cannot_apply_is_refused(given: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings(**given)


def test_the_command_refuses_it_in_one_line_before_any_model_loads() -> None:
    from command_line import localeval

    result = localeval("check-judge", "--verdicts", "weighted", "--family", "correctness")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: --verdicts weighted: correctness gives no verdicts to weigh")

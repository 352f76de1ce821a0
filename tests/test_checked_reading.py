"""``verdict_reading = "checked"``: each verdict metric reads its verdicts the way the judge's check found
better for its family (localeval/metaeval/trust.py's checked_readings), read before any judge call.

Scripted judges and hand-written checks: evidence about the choice and its bookkeeping, not about any model.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import localeval
from localeval.backends.base import DistributionReply, DistributionRequest, Fingerprint, JsonReply, JsonRequest
from localeval.config import RunConfig
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.distribution import renormalize
from localeval.errors import ConfigError
from localeval.metaeval.check import CheckStore, JudgeCheck
from localeval.metaeval.trust import assess, checked_readings, from_checks
from localeval.metrics import build_metric
from localeval.prompts import shipped_prompt_sha256
from localeval.run.runner import evaluate as run_metrics
from localeval.testing import ScriptedJudge

FINGERPRINT = Fingerprint(kind="scripted", model="scripted-model", model_sha256="0" * 64, runtime="scripted 1")


def family(name: str, ordered: float, *, prompts: dict[str, str] | None = None, threshold: float = 0.8) -> dict[str, Any]:
    return {"family": name, "metric": "faithfulness", "pairs_sha256": "0" * 64, "pairs": 12, "errored": 0,
            "ordered": ordered, "threshold": 0.5, "bad_failed": 6, "good_passed": 10, "prompts": prompts or {},
            "calibrated": {"threshold": threshold, "fit_accuracy": 1.0, "held_out_accuracy": 0.83,
                           "fit_pairs": 6, "held_out_pairs": 6}}


def store(tmp_path: Path, *families: dict[str, Any]) -> CheckStore:
    checks = CheckStore(tmp_path / "checks", shipped=tmp_path / "shipped")
    checks.save(JudgeCheck.model_validate({"judge": FINGERPRINT.model_dump(), "checked_at": "2026-11-26T08:00:00+00:00",
                                          "families": list(families)}))
    return checks


def checked(**options: Any) -> Any:
    return build_metric("faithfulness", {"verdict_reading": "checked", **options})


def resolve(metric: Any, checks: CheckStore) -> Any:
    [resolved] = checked_readings([metric], {"backend": FINGERPRINT}, checks)
    return resolved


def test_the_reading_that_orders_more_pairs_is_taken(tmp_path: Path) -> None:
    metric = resolve(checked(), store(tmp_path, family("faithfulness", 0.75), family("faithfulness+weighted", 0.92)))
    assert metric.verdict_reading == "weighted"
    assert metric.verdict_reading_source == (
        "checked: judge check of scripted-model, 2026-11-26T08:00:00+00:00: written orders 75% of 12 pairs, "
        "weighted orders 92% of 12 pairs")


@pytest.mark.parametrize(("written", "weighted"), [(0.92, 0.75), (0.83, 0.83)])
def test_written_where_it_orders_as_many_or_more(tmp_path: Path, written: float, weighted: float) -> None:
    metric = resolve(checked(), store(tmp_path, family("faithfulness", written), family("faithfulness+weighted", weighted)))
    assert metric.verdict_reading == "written" and metric.verdict_reading_source.startswith("checked: judge check")


def test_where_one_reading_was_checked_that_one_and_it_says_so(tmp_path: Path) -> None:
    metric = resolve(checked(), store(tmp_path, family("faithfulness+weighted", 0.6)))
    assert metric.verdict_reading == "weighted"
    assert metric.verdict_reading_source.endswith("weighted orders 60% of 12 pairs; only weighted was checked")


def test_a_check_made_with_other_prompts_does_not_count(tmp_path: Path) -> None:
    assert shipped_prompt_sha256("faithfulness/verdicts") not in (None, "f" * 64)
    stale = family("faithfulness+weighted", 1.0, prompts={"faithfulness/verdicts": "f" * 64})
    metric = resolve(checked(), store(tmp_path, family("faithfulness", 0.7), stale))
    assert metric.verdict_reading == "written" and "only written was checked" in metric.verdict_reading_source


def test_no_check_of_the_family_stops_the_run_naming_the_metric_and_the_command(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve(checked(name="grounded"), store(tmp_path, family("bias", 0.9)))
    assert str(caught.value) == (
        "metric 'grounded': verdict_reading 'checked', but judge 'backend' (scripted-model) has no check of family "
        "'faithfulness' read either way; run: localeval check-judge --config CONFIG --family faithfulness, and again "
        "with --verdicts weighted")


def test_localevals_shipped_check_of_the_same_model_file_is_enough(tmp_path: Path) -> None:
    shipped = tmp_path / "shipped"
    CheckStore(shipped).save(JudgeCheck.model_validate({
        "judge": FINGERPRINT.model_dump(), "checked_at": "2026-11-26T08:00:00+00:00",
        "families": [family("faithfulness", 0.7), family("faithfulness+weighted", 0.9)]}))
    (shipped / CheckStore(shipped).path(FINGERPRINT).name).rename(shipped / f"{'0' * 64}.json")
    here = FINGERPRINT.model_copy(update={"runtime": "scripted 2"})
    [metric] = checked_readings([checked()], {"backend": here}, CheckStore(tmp_path / "mine", shipped=shipped))
    assert metric.verdict_reading == "weighted"
    assert metric.verdict_reading_source.startswith("checked: localeval's shipped check of scripted-model")


def test_the_calibrated_threshold_is_the_chosen_readings(tmp_path: Path) -> None:
    checks = store(tmp_path, family("faithfulness", 0.7, threshold=0.4), family("faithfulness+weighted", 0.9, threshold=0.65))
    [metric] = from_checks([checked(threshold="calibrated")], {"backend": FINGERPRINT}, checks)
    assert (metric.verdict_reading, metric.threshold) == ("weighted", 0.65)
    assert "on 'faithfulness+weighted'" in metric.threshold_source
    [trust] = assess([metric], {"backend": FINGERPRINT}, checks)  # and the run is trusted by that reading's check
    assert [(f.family, f.ordered) for f in trust.families] == [("faithfulness+weighted", 0.9)]


def test_strict_mode_reads_written_whatever_the_check(tmp_path: Path) -> None:
    metric = resolve(checked(strict_mode=True), store(tmp_path, family("faithfulness+weighted", 1.0)))
    assert (metric.verdict_reading, metric.verdict_reading_source) == (
        "written", "checked: strict_mode reads verdicts as written")


def test_metrics_that_chose_their_reading_are_left_as_they_are(tmp_path: Path) -> None:
    metrics = [build_metric("faithfulness", {"verdict_reading": "written"}), build_metric("exact_match")]
    assert checked_readings(metrics, {"backend": FINGERPRINT}, store(tmp_path)) == metrics


def test_an_unread_check_stops_a_run_before_any_judge_call_and_a_lone_measure_errs() -> None:
    judge = ScriptedJudge()
    case = TestCase(input="q", actual_output="a", retrieval_context=["c"])
    with pytest.raises(ConfigError, match=r"metric 'faithfulness': verdict_reading 'checked' is read from the "
                                          r"judge's check .* localeval.metaeval.trust.from_checks first"):
        run_metrics(Dataset.from_cases([case]), [checked()], judge)
    assert judge.requests == []
    result = checked().measure(case, judge)
    assert result.error == ("metric 'faithfulness': verdict_reading 'checked' was never read from the judge's "
                            "check (localeval.metaeval.trust.from_checks)")
    assert judge.requests == []


def test_metrics_defaults_can_ask_every_verdict_metric_for_the_checked_reading(tmp_path: Path) -> None:
    path = tmp_path / "eval.toml"
    path.write_text('[metrics_defaults]\nverdict_reading = "checked"\n\n[[metrics]]\nmetric = "faithfulness"\n\n'
                    '[[metrics]]\nmetric = "bias"\nverdict_reading = "written"\n\n'
                    '[[metrics]]\nmetric = "geval"\ncriteria = "Correct."\n')
    metrics = RunConfig.load(path).build_metrics()
    assert [m.awaiting_check for m in metrics] == ["verdict_reading 'checked'", None, None]


class SaysYes(ScriptedJudge):
    """Writes "yes" to every verdict, but gives "no" more probability where the output says "Sydney"."""

    def generate_json(self, request: JsonRequest) -> JsonReply:
        self.requests.append(request)
        properties = request.json_schema["properties"]
        if "verdicts" not in properties:  # the claims of the output: its sentences are the default, no call
            raise AssertionError(f"unexpected request: {list(properties)}")
        value = {"verdicts": ["yes"] * properties["verdicts"]["minItems"]}
        return JsonReply(value=value, text=json.dumps(value), finish_reason="stop")

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        self.requests.append(request)
        no = 0.6 if "Sydney" in "".join(m.content for m in request.messages) else 0.05
        probabilities = {"yes": 0.95 - no, "no": no, "idk": 0.05}
        return DistributionReply(distribution=renormalize({c: math.log(probabilities[c]) for c in request.candidates}))


def test_a_python_run_reads_the_check_and_every_result_says_which_reading(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    store(tmp_path, family("faithfulness", 0.5), family("faithfulness+weighted", 0.9))
    monkeypatch.setenv("LOCALEVAL_CHECKS_DIR", str(tmp_path / "checks"))
    cases = [TestCase(input="Capital of Australia?", actual_output=f"The capital is {city}.",
                      retrieval_context=["Canberra is the capital of Australia."]) for city in ("Canberra", "Sydney")]
    report = localeval.evaluate(cases, [checked(include_reason=False)], SaysYes(), cache=False, save=False,
                                progress=False)
    good, bad = (case.results[0] for case in report.cases)
    assert good.details["verdict_reading"] == bad.details["verdict_reading"] == "weighted"
    assert bad.details["verdict_reading_source"].startswith("checked: judge check of scripted-model")
    # Weighted, a claim counts as faithful by P(yes) + P(idk): 0.95 and 0.40; written, both would score 1.0.
    assert (good.score, bad.score) == (pytest.approx(0.95), pytest.approx(0.40))

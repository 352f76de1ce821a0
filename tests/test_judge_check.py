"""The judge check (localeval/metaeval/check.py, trust.py, families.py) with judges that answer from the prompt.

A scripted judge here is evidence about the check's arithmetic, storage and refusals, not about any
model: the figures a real judge earns are in docs/measurements (the check run on each shipped judge).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from localeval.backends.base import DistributionReply, DistributionRequest, Fingerprint
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.data.results import FamilyTrust, JudgeTrust
from localeval.distribution import renormalize
from localeval.errors import ConfigError, SchemaViolation
from localeval.metaeval.check import CheckStore, JudgeCheck, check_family, check_judge, family_metric, variant_case
from localeval.metaeval.families import BY_NAME, FAMILIES, Pair, family_of, load_pairs
from localeval.metaeval.human_sets import HUMAN_BY_NAME, HUMAN_SETS, HumanSet, excerpts_folder
from localeval.metaeval.trust import assess, calibrated
from localeval.metrics.registry import build_metric
from localeval.prompts import shipped_prompt_sha256
from localeval.reports.trust import trust_lines
from localeval.run.runner import check_inputs, evaluate
from localeval.testing import ScriptedJudge


class PromptJudge(ScriptedJudge):
    """Answers a score distribution from the prompt: 'Sydney' (the planted error) scores 1, else 5."""

    def __init__(self, planted: str = "Sydney", **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.planted = planted
        self.calls = 0

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        self.calls += 1
        text = "".join(m.content for m in request.messages)
        best = request.candidates[0] if self.planted in text else request.candidates[-1]
        logprobs = {c: (-0.1 if c == best else -5.0) for c in request.candidates}
        return DistributionReply(distribution=renormalize(logprobs))


def pair(i: int, good: str, bad: str) -> Pair:
    question = f"Question {i}: what is the capital of Australia?"
    make = lambda out, v: TestCase(input=question, actual_output=out, expected_output="Canberra", name=f"p{i}/{v}")  # noqa: E731
    return Pair(f"p{i}", "geography", "wrong city", make(good, "good"), make(bad, "bad"))


def test_a_judge_that_tells_them_apart_orders_every_pair_and_fails_every_bad_answer() -> None:
    pairs = [pair(i, "Canberra.", "Sydney.") for i in range(4)]
    result = check_family(PromptJudge(), BY_NAME["correctness"], pairs)
    assert (result.pairs, result.errored, result.ordered) == (4, 0, 1.0)
    assert (result.bad_failed, result.good_passed, result.threshold) == (4, 4, 0.5)
    assert result.calibrated is not None and result.calibrated.held_out_accuracy == 1.0
    assert not result.at_chance


class SchemaBreakingJudge(PromptJudge):
    """Breaks the schema on every answer that names the planted city: the check must count it by kind."""

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        if "Perth" in "".join(m.content for m in request.messages):
            raise SchemaViolation("the reply is not one of the candidates")
        return super().candidate_distribution(request)


def test_a_check_counts_its_judge_calls_and_its_failures_by_kind() -> None:
    pairs = [pair(0, "Canberra.", "Sydney."), pair(1, "Canberra.", "Perth.")]
    judge = SchemaBreakingJudge()
    result = check_family(judge, BY_NAME["correctness"], pairs)
    assert (result.pairs, result.errored, result.error_kinds) == (2, 1, {"SchemaViolation": 1})
    assert result.model_calls == judge.calls == result.judge_calls == 3  # answered calls; no cache here
    assert result.errors[0].startswith("p1/bad: SchemaViolation")  # the variant that failed


def test_a_judge_that_scores_both_alike_is_at_chance() -> None:
    pairs = [pair(i, "Canberra.", "Sydney.") for i in range(4)]
    result = check_family(PromptJudge(planted="Australia"), BY_NAME["correctness"], pairs)  # in every prompt
    assert result.ordered == 0.5  # four ties, each half
    assert (result.bad_failed, result.good_passed) == (4, 0)  # everything scored 1 of 5: all fail
    assert result.at_chance


class ArenaJudge(ScriptedJudge):
    """Prefers the output that does not hold the planted error, wherever it stands."""

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        text = "".join(m.content for m in request.messages)
        output_a = text.split("Output A:")[-1].split("Output B:")[0]
        best = " B" if "Sydney" in output_a else " A"
        logprobs = {c: (-0.1 if c == best else -3.0) for c in request.candidates}
        return DistributionReply(distribution=renormalize(logprobs))


def test_in_the_arena_the_bad_first_score_is_one_minus_the_good_first_one() -> None:
    pairs = [pair(i, "Canberra.", "Sydney.") for i in range(2)]
    result = check_family(ArenaJudge(), BY_NAME["arena"], pairs)
    assert result.ordered == 1.0
    assert (result.bad_failed, result.good_passed) == (2, 2)


def test_every_family_has_its_shipped_pairs_and_a_metric_that_takes_them() -> None:
    for family in FAMILIES:
        pairs = load_pairs(family)
        assert len(pairs) >= 20, family.name
        for p in pairs:
            metric = family_metric(family, dict(p.options))
            check_inputs(Dataset.from_cases([variant_case(family, p, v) for v in ("good", "bad")]), [metric])
            assert p.good != p.bad


def test_pair_names_are_unique_across_families() -> None:
    names = [p.name for family in FAMILIES for p in load_pairs(family)]
    assert len(names) == len(set(names))


def test_a_family_speaks_for_the_metrics_of_a_run() -> None:
    assert family_of(build_metric("geval:coherence")) == BY_NAME["geval-coherence"]
    assert family_of(build_metric("geval", {"criteria": "Polite."})) == BY_NAME["correctness"]
    assert family_of(build_metric("faithfulness")) == BY_NAME["faithfulness"]
    assert family_of(build_metric("exact_match")) is None


def fingerprint(model: str = "judge.gguf") -> Fingerprint:
    return Fingerprint(kind="llama.cpp", model=model, model_sha256="ab" * 32, runtime="llama.cpp test")


def stored(tmp_path: Path, ordered: float, threshold: float = 0.7, prompts: dict[str, str] | None = None) -> CheckStore:
    store = CheckStore(tmp_path)
    family = {
        "family": "correctness", "metric": "geval", "pairs_sha256": "0" * 64, "pairs": 24, "errored": 0,
        "ordered": ordered, "threshold": 0.5, "bad_failed": 3, "good_passed": 24,
        "calibrated": {"threshold": threshold, "fit_accuracy": 1.0, "held_out_accuracy": 0.92,
                       "fit_pairs": 12, "held_out_pairs": 12},
        "prompts": prompts or {},
    }
    store.save(JudgeCheck.model_validate({"judge": fingerprint().model_dump(), "checked_at": "2026-11-25T16:00:00+00:00",
                                          "families": [family]}))
    return store


def test_a_check_records_the_prompts_it_scored_with() -> None:
    result = check_family(PromptJudge(), BY_NAME["correctness"], [pair(0, "Canberra.", "Sydney.")])
    assert result.prompts == {"geval/score": shipped_prompt_sha256("geval/score")}  # steps given; no reason asked
    assert result.outdated_prompts() == []


def test_a_check_records_the_metrics_scoring_version_and_one_made_with_another_speaks_for_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from localeval.metrics import GEval

    result = check_family(PromptJudge(), BY_NAME["correctness"], [pair(0, "Canberra.", "Sydney.")])
    assert result.scoring_version == GEval.scoring_version == 1
    current = stored(tmp_path, ordered=1.0)  # a check stored before versions were recorded reads as version 1
    assert current.load(fingerprint()).families[0].outdated_prompts() == []  # type: ignore[union-attr]
    monkeypatch.setattr(GEval, "scoring_version", 2)  # G-Eval's scoring changed since the check
    assert result.outdated_prompts() == ["geval scoring"]
    metric = build_metric("geval", {"criteria": "Correct.", "threshold": "calibrated"})
    [trust] = assess([metric], {"backend": fingerprint()}, current)
    assert (trust.outdated, trust.unchecked, trust.families[0].checked) == (["correctness"], [], False)
    with pytest.raises(ConfigError, match=r"that have changed since \(geval scoring\); run: localeval check-judge"):
        calibrated([metric], {"backend": fingerprint()}, current)


def test_a_check_made_with_prompts_changed_since_speaks_for_nothing(tmp_path: Path) -> None:
    store = stored(tmp_path, ordered=1.0, prompts={"geval/score": "0" * 64})
    metric = build_metric("geval", {"criteria": "Correct.", "threshold": "calibrated"})
    [trust] = assess([metric], {"backend": fingerprint()}, store)
    assert (trust.outdated, trust.unchecked) == (["correctness"], [])
    [(level, line)] = [(lv, text) for lv, text in trust_lines([trust]) if "changed" in text]
    assert level == "warn" and "checked on correctness with prompts or scoring that have changed since" in line
    with pytest.raises(ConfigError, match=r"prompts or scoring that have changed since \(geval/score\); run: localeval check-judge"):
        calibrated([metric], {"backend": fingerprint()}, store)
    current = stored(tmp_path / "now", ordered=1.0, prompts={"geval/score": shipped_prompt_sha256("geval/score") or ""})
    [trust] = assess([metric], {"backend": fingerprint()}, current)
    assert trust.families[0].checked and not trust.outdated


def test_a_run_says_of_each_judge_its_check_or_that_it_has_none(tmp_path: Path) -> None:
    metrics = [build_metric("geval", {"criteria": "Correct."}), build_metric("faithfulness"), build_metric("exact_match")]
    [trust] = assess(metrics, {"backend": fingerprint()}, stored(tmp_path, ordered=0.96))
    assert [(f.family, f.checked, f.at_chance) for f in trust.families] == [
        ("correctness", True, False), ("faithfulness", False, False)]
    lines = trust_lines([trust])
    assert [level for level, _ in lines] == ["warn", "ok"]
    assert "localeval check-judge --model judge.gguf" in lines[0][1]
    assert "ordered 96% of 24 planted pairs" in lines[1][1]


def test_a_judge_at_chance_is_said_loudly(tmp_path: Path) -> None:
    [trust] = assess([build_metric("geval", {"criteria": "Correct."})], {"backend": fingerprint()},
                     stored(tmp_path, ordered=0.5))
    [(level, text)] = trust_lines([trust])
    assert level == "alarm" and "AT CHANCE on correctness" in text


def test_at_chance_read_one_way_the_run_names_the_reading_its_check_found_better(tmp_path: Path) -> None:
    store = CheckStore(tmp_path)
    family = {"metric": "faithfulness", "pairs_sha256": "0" * 64, "pairs": 12, "errored": 0, "threshold": 0.5,
              "bad_failed": 1, "good_passed": 12, "calibrated": None, "prompts": {}}
    store.save(JudgeCheck.model_validate({
        "judge": fingerprint().model_dump(), "checked_at": "2026-11-26T01:00:00+00:00",
        "families": [{**family, "family": "faithfulness", "ordered": 0.58},
                     {**family, "family": "faithfulness+weighted", "ordered": 0.83}]}))
    written, weighted = build_metric("faithfulness"), build_metric("faithfulness", {"verdict_reading": "weighted"})
    [trust] = assess([written], {"backend": fingerprint()}, store)
    [hint] = [text for level, text in trust_lines([trust]) if level == "warn"]
    assert hint.endswith('read weighted, its verdicts ordered 83% of 12 planted pairs: set verdict_reading = '
                         '"weighted" on faithfulness, or "checked" to take the better reading of each family')
    [trust] = assess([weighted], {"backend": fingerprint()}, store)  # the better reading in use: nothing to suggest
    assert trust.families[0].other_reading is None and trust.at_chance == []
    store.save(JudgeCheck.model_validate({
        "judge": fingerprint().model_dump(), "checked_at": "2026-11-26T02:00:00+00:00",
        "families": [{**family, "family": "faithfulness", "ordered": 0.58},
                     {**family, "family": "faithfulness+weighted", "ordered": 0.6}]}))
    [trust] = assess([written], {"backend": fingerprint()}, store)  # both at chance: no reading to suggest
    assert trust.families[0].other_reading is None and [lv for lv, _ in trust_lines([trust])] == ["alarm"]


def test_a_metric_no_family_covers_is_named() -> None:
    trust = JudgeTrust(judge="backend", model="m", check_command="c", families=[
        FamilyTrust(family="dag", metrics=["headings"], checked=False, covered=False)])
    [(level, text)] = trust_lines([trust])
    assert level == "warn" and "no judge check covers" in text


def test_a_calibrated_threshold_is_the_checks_with_where_it_came_from(tmp_path: Path) -> None:
    metric = build_metric("geval", {"criteria": "Correct.", "threshold": "calibrated", "include_reason": False,
                                    "evaluation_steps": ["Check it."]})
    assert metric.threshold_unresolved
    [resolved] = calibrated([metric], {"backend": fingerprint()}, stored(tmp_path, 0.96, threshold=0.7))
    assert resolved.threshold == 0.7
    assert resolved.threshold_source.startswith("calibrated: judge check of judge.gguf on 'correctness'")
    result = resolved.measure(TestCase(input="q", actual_output="a"), PromptJudge())
    assert (result.threshold, result.threshold_source) == (0.7, resolved.threshold_source)


def test_a_calibrated_threshold_without_a_check_names_the_metric_and_the_command(tmp_path: Path) -> None:
    metric = build_metric("geval", {"name": "correctness", "criteria": "Correct.", "threshold": "calibrated"})
    with pytest.raises(ConfigError, match=r"metric 'correctness': threshold 'calibrated', but judge 'backend' "
                                          r"\(judge.gguf\) has not been checked; run: localeval check-judge"):
        calibrated([metric], {"backend": fingerprint()}, CheckStore(tmp_path))


def test_an_unresolved_calibrated_threshold_stops_a_run_before_any_judge_call() -> None:
    metric = build_metric("geval", {"criteria": "Correct.", "threshold": "calibrated"})
    judge = PromptJudge()
    with pytest.raises(ConfigError, match="threshold 'calibrated' is read from the judge's check"):
        evaluate(Dataset.from_cases([TestCase(input="q", actual_output="a")]), [metric], judge)
    assert judge.calls == 0 and judge.requests == []


def test_a_backend_without_distributions_skips_the_families_that_need_them() -> None:
    from localeval.backends.base import Capabilities

    judge = PromptJudge(capabilities=Capabilities(json_schema=True, distribution=False, multi_token_candidates=False))
    check = check_judge(judge, [BY_NAME["correctness"]], HUMAN_SETS[:1], limit=2)
    assert (check.families, check.human) == ([], [])
    why = "its metric reads log-probabilities, which this backend does not give"
    assert check.skipped == {"correctness": why, "human-qags-cnndm-consistency": why}
    assert judge.calls == 0


class HumanLikeJudge(ScriptedJudge):
    """Scores each output of a human-judgment file as its people did (``sign`` -1: the reverse)."""

    def __init__(self, human_set: HumanSet, sign: int = 1) -> None:
        super().__init__()
        records = json.loads((excerpts_folder() / human_set.file).read_text(encoding="utf-8"))
        key = human_set.spec.human.split(".")[-1]
        self.scores = {r["system_output"]: r["scores"][key] for r in records}
        self.sign = sign

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        text = "".join(m.content for m in request.messages)
        human = next(score for output, score in self.scores.items() if output in text)
        low, high = min(self.scores.values()), max(self.scores.values())
        share = (human - low) / (high - low) if self.sign > 0 else (high - human) / (high - low)
        best = request.candidates[round(share * (len(request.candidates) - 1))]
        return DistributionReply(distribution=renormalize({c: (-0.01 if c == best else -9.0) for c in request.candidates}))


@pytest.mark.parametrize("sign", [1, -1])
def test_a_human_set_is_read_as_meta_eval_reads_it_and_correlated_with_the_people(sign: int) -> None:
    human_set = HUMAN_BY_NAME["human-qags-xsum-consistency"]
    [agreement] = check_judge(HumanLikeJudge(human_set, sign), [], [human_set]).human
    assert (agreement.records, agreement.errored, agreement.data) == (30, 0, "qags_xsum.json")
    assert agreement.pooled.spearman is not None and sign * agreement.pooled.spearman > 0.9
    assert agreement.summary_level is None  # one summary per document: pooled, as the G-Eval paper reports QAGS


def test_a_check_merges_into_the_stored_one_family_by_family(tmp_path: Path) -> None:
    store = stored(tmp_path, ordered=0.5)
    earlier = store.load(fingerprint())
    assert earlier is not None
    newer = earlier.model_copy(update={"families": [earlier.families[0].model_copy(update={
        "family": "faithfulness", "metric": "faithfulness"})]})
    merged = newer.merged_into(earlier)
    assert [f.family for f in merged.families] == ["correctness", "faithfulness"]
    assert json.loads(merged.model_dump_json())["format_version"] == 1
    assert not math.isnan(merged.families[0].ordered or 0.0)


@pytest.mark.parametrize(("args", "message"), [
    (("--family", "poetry"), "--family poetry: no such family or human set (families: correctness, geval-coherence"),
    (("--judge", "strict"), "--judge names a [judges.NAME] table of a config: give --config too"),
    (("--pairs", "1"), "--pairs: at least 2, so each half of the pairs has one"),
])
def test_bad_options_are_one_line_before_any_model_loads(args: tuple[str, ...], message: str) -> None:
    from command_line import localeval

    result = localeval("check-judge", *args)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and message in line


def test_the_checks_folder_is_the_homes_unless_the_environment_names_one(tmp_path: Path) -> None:
    from localeval.paths import Paths

    assert Paths.from_environ({"LOCALEVAL_HOME": str(tmp_path)}).judge_checks == tmp_path / "judge-checks"
    shared = tmp_path / "team-checks"
    environ = {"LOCALEVAL_HOME": str(tmp_path), "LOCALEVAL_CHECKS_DIR": str(shared)}
    assert Paths.from_environ(environ).judge_checks == shared


def test_a_model_file_never_checked_here_is_judged_by_localevals_shipped_check(tmp_path: Path) -> None:
    shipped = tmp_path / "shipped"
    CheckStore(shipped).save(JudgeCheck.model_validate({
        "judge": fingerprint().model_dump(), "checked_at": "2026-11-25T16:00:00+00:00", "families": [{
            "family": "correctness", "metric": "geval", "pairs_sha256": "0" * 64, "pairs": 8, "errored": 0,
            "ordered": 0.5, "threshold": 0.5, "bad_failed": 0, "good_passed": 8}]}))
    (shipped / CheckStore(shipped).path(fingerprint()).name).rename(shipped / f"{'ab' * 32}.json")
    here = fingerprint().model_copy(update={"runtime": "llama.cpp newer"})  # same file, another runtime
    store = CheckStore(tmp_path / "mine", shipped=shipped)
    assert store.load(here) is None  # never for a calibrated threshold
    [trust] = assess([build_metric("geval", {"criteria": "Correct."})], {"backend": here}, store)
    assert trust.shipped_check
    [(level, text)] = trust_lines([trust])
    assert level == "alarm" and text.endswith("(localeval's shipped check of this model file)")
    other = here.model_copy(update={"model_sha256": "cd" * 32})
    assert store.load_for_trust(other) is None


def test_the_default_judges_shipped_check_orders_correctness_and_names_where_it_is_at_chance() -> None:
    from localeval.backends.catalog import ModelCatalog

    spec = ModelCatalog(home=Path("/nonexistent")).default()
    judge = Fingerprint(kind="llama.cpp", model=spec.name, model_sha256=spec.sha256, runtime="any")
    check = CheckStore(Path("/nonexistent")).load_for_trust(judge)
    assert check is not None and check.judge.model == "qwen2.5-coder-1.5b-instruct"
    correctness, faithfulness = check.family("correctness"), check.family("faithfulness")
    assert correctness is not None and not correctness.at_chance and correctness.pairs == 24
    assert faithfulness is not None and faithfulness.at_chance  # what the README says it misses


def test_smollm2s_shipped_check_says_it_is_at_chance() -> None:
    from localeval.backends.catalog import ModelCatalog

    spec = ModelCatalog(home=Path("/nonexistent")).get("smollm2-135m-instruct")
    judge = Fingerprint(kind="llama.cpp", model=spec.name, model_sha256=spec.sha256, runtime="any")
    check = CheckStore(Path("/nonexistent")).load_for_trust(judge)
    assert check is not None and len(check.families) == len(FAMILIES)
    correctness = check.family("correctness")
    assert correctness is not None and correctness.at_chance


def test_a_judge_that_cannot_keep_case_text_as_text_is_said_to_be() -> None:
    from localeval.backends.scan import SERVER_MARKUP, position_capabilities

    server = position_capabilities({}, 20, 1, "continue")
    assert not server.text_as_data and server.notes["text_as_data"] == SERVER_MARKUP
    assert PromptJudge().capabilities.text_as_data
    metric = build_metric("geval", {"criteria": "Correct."})
    [trust] = assess([metric], {"backend": fingerprint()}, CheckStore(Path("/nonexistent")), {"backend": SERVER_MARKUP})
    assert trust.markup == SERVER_MARKUP
    assert ("warn", f"judge backend (judge.gguf): case text may act as chat markup: {SERVER_MARKUP}") in trust_lines([trust])
    [quiet] = assess([metric], {"backend": fingerprint()}, CheckStore(Path("/nonexistent")))
    assert quiet.markup is None and not any("markup" in text for _, text in trust_lines([quiet]))


def test_a_check_of_human_sets_alone_prints_their_table_whole_and_no_empty_family_table() -> None:
    import io

    from rich.console import Console

    from localeval.cli.judge_check import print_check
    from localeval.metaeval.correlations import Correlations
    from localeval.metaeval.human_sets import HumanAgreement

    agreement = HumanAgreement(name="human-topical-chat-naturalness", metric="geval:naturalness",
                               data="topical_chat.json", records=36, errored=0,
                               pooled=Correlations(pearson=0.3, spearman=0.318, kendall=0.229, items=36))
    check = JudgeCheck(judge=fingerprint(), checked_at="2026-11-25T21:00:00+00:00", families=[], human=[agreement])
    out = io.StringIO()
    print_check(Console(file=out, width=60, color_system=None), check)  # piped, 60 columns
    text = out.getvalue()
    assert "Judge check:" not in text and "Judge calls:" not in text  # no families, no empty table
    assert "human-topical-chat-naturalness" in text and "geval:naturalness" in text and "+0.318" in text

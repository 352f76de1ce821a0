"""The judge check: a judge put through the planted pairs of each family, before its verdicts are trusted.

For each family (:mod:`localeval.metaeval.families`) both variants of every pair are scored by the
family's metric in one run (:func:`localeval.run.runner.evaluate`, so every judge call goes
through the judge's cache and a repeated check is instant), and the scores are read by
:mod:`localeval.metaeval.separation`: how often the good variant scores better, how many bad
variants fail and good ones pass at the metric's threshold, and the threshold that best separates
them, chosen on one half of the pairs and measured on the other.

The result is stored per judge fingerprint (:class:`CheckStore`), where runs read it to say how
far to trust their judge, and ``threshold = "calibrated"`` reads the family's threshold. A family's
weighted twin (``faithfulness+weighted``: its metric reads verdicts weighted) is a family of its own
there, so a run is trusted by the check of the reading it uses.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localeval.backends.base import Backend, Fingerprint
from localeval.config import MetricDefaults
from localeval.data.case import Case, TestCase
from localeval.data.dataset import Dataset
from localeval.data.results import MetricResult, RunReport
from localeval.errors import ConfigError
from localeval.files import write_text_atomically
from localeval.metaeval.families import BY_NAME, FAMILIES, Family, Pair, load_pairs, pairs_sha256
from localeval.metaeval.human_sets import HUMAN_BY_NAME, HUMAN_SETS, HumanAgreement, HumanSet, check_human_set
from localeval.metaeval.separation import AT_CHANCE_BELOW, PairScores, calibrate, ordered, outcomes
from localeval.metrics.base import Metric
from localeval.metrics.items import weighing_unavailable
from localeval.metrics.registry import build_metric, metric_class
from localeval.prompts import recording_prompts, shipped_prompt_sha256
from localeval.resources import data_path
from localeval.run.events import Events
from localeval.run.runner import evaluate

#: The stored result's format version.
CHECK_FORMAT = 1


class CalibratedThreshold(BaseModel):
    """The threshold chosen on the fit half of a family's pairs, and its accuracy on the held-out half."""

    model_config = ConfigDict(frozen=True)

    threshold: float
    fit_accuracy: float
    held_out_accuracy: float
    fit_pairs: int
    held_out_pairs: int


class FamilyCheck(BaseModel):
    """What the check measured on one family."""

    model_config = ConfigDict(frozen=True)

    family: str
    metric: str = Field(description="The metric kind the family's pairs were scored with.")
    pairs_sha256: str = Field(description="The pairs measured (cases and options), hashed.")
    pairs: int = Field(description="Pairs scored: all of the file's, or the first N the check was limited to.")
    errored: int = Field(description="Pairs with a variant the metric could not score (left out of the rates).")
    ordered: float | None = Field(description="Share of scored pairs whose good variant scored better; ties half.")
    threshold: float = Field(description="The metric's own threshold the outcomes below are counted at.")
    lower_is_better: bool = False
    bad_failed: int = Field(description="Bad variants that failed at the metric's threshold.")
    good_passed: int = Field(description="Good variants that passed at it.")
    calibrated: CalibratedThreshold | None = None
    seconds: float = 0.0
    judge_calls: int = Field(0, description="Judge calls answered, by the model or the cache (a failed call is in error_kinds).")
    model_calls: int = Field(0, description="Of those, the ones the model answered.")
    error_kinds: dict[str, int] = Field(
        default_factory=dict,
        description="Variants left unscored, by the error's kind (SchemaViolation, TruncatedOutput, ...).")
    errors: list[str] = Field(default_factory=list, description="The first few errors, for people.")
    prompts: dict[str, str] = Field(
        default_factory=dict, description="The shipped prompts the scoring loaded, by name, with their text's sha256.")
    scoring_version: int = Field(
        1, description="The metric's scoring_version when it was checked (checks from before it was recorded: 1).")

    def outdated_prompts(self) -> list[str]:
        """What this check used that has changed since, so that it measured another metric: each prompt whose
        shipped text differs, and the metric's scoring where its version does (``"faithfulness scoring"``)."""
        changed = [name for name, sha256 in self.prompts.items() if shipped_prompt_sha256(name) != sha256]
        cls = metric_class(self.metric)
        if cls is not None and cls.scoring_version != self.scoring_version:
            changed.append(f"{self.metric} scoring")
        return changed

    @property
    def at_chance(self) -> bool:
        """Orders fewer than 75% of the pairs (or none could be scored)."""
        return self.ordered is None or self.ordered < AT_CHANCE_BELOW


class JudgeCheck(BaseModel):
    """A judge's check: every family it was put through, stored under its fingerprint."""

    model_config = ConfigDict(frozen=True)

    format_version: int = CHECK_FORMAT
    judge: Fingerprint
    checked_at: str
    families: list[FamilyCheck]
    human: list[HumanAgreement] = Field(
        default_factory=list, description="The presets' agreement with people on the human-judgment excerpts.")
    skipped: dict[str, str] = Field(default_factory=dict, description="Families and human sets not run, and why.")

    def family(self, name: str) -> FamilyCheck | None:
        return next((f for f in self.families if f.family == name), None)

    def merged_into(self, earlier: JudgeCheck | None) -> JudgeCheck:
        """This check over an earlier one of the same judge: its families replace theirs, the rest stay."""
        if earlier is None:
            return self
        mine = {f.family for f in self.families} | {h.name for h in self.human} | set(self.skipped)
        kept = [f for f in earlier.families if f.family not in mine]
        kept_human = [h for h in earlier.human if h.name not in mine]
        skipped = {k: v for k, v in earlier.skipped.items() if k not in mine} | self.skipped
        order = {name: i for i, name in enumerate([*BY_NAME, *HUMAN_BY_NAME])}
        families = sorted([*kept, *self.families], key=lambda f: order.get(f.family, len(order)))
        human = sorted([*kept_human, *self.human], key=lambda h: order.get(h.name, len(order)))
        return self.model_copy(update={"families": families, "human": human, "skipped": skipped})


def now() -> str:
    """When a check is made, as its results record it (UTC, to the second)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def reads_distributions(metric: Metric) -> bool:
    """Whether the metric scores from log-probabilities (G-Eval's and the arena's default methods)."""
    return getattr(metric, "scoring", "sampling") in ("logprobs", "top")


def family_metric(family: Family, pair_options: dict[str, object] | None = None) -> Metric:
    """The family's metric as the check builds it: without the reason, which the score does not read."""
    options = {**family.options, **(pair_options or {})}
    cls = metric_class(family.kind)
    if cls is not None:  # reasons off as a run's [metrics_defaults] turns them off: one mechanism
        options = MetricDefaults(reasons=False).applied(cls, options)
    return build_metric(family.kind, options)


NO_DISTRIBUTIONS = "its metric reads log-probabilities, which this backend does not give"


def cannot_measure(judge: Backend, metric: Metric) -> str | None:
    """Why ``judge`` cannot be checked with ``metric`` as a run would use it (None: it can): the metric
    reads log-probabilities the backend does not give, or reads verdicts weighted where the backend cannot."""
    if reads_distributions(metric) and not judge.capabilities.distribution:
        return NO_DISTRIBUTIONS
    missing = weighing_unavailable(judge.capabilities)
    if getattr(metric, "verdict_reading", "written") == "weighted" and missing is not None:
        return f"its metric reads verdicts weighted, and {missing}"
    return None


def check_judge(
    judge: Backend, families: Sequence[Family] = FAMILIES, human_sets: Sequence[HumanSet] = HUMAN_SETS, *,
    limit: int | None = None, events: Events | None = None,
    checked: Callable[[FamilyCheck | HumanAgreement], None] | None = None,
) -> JudgeCheck:
    """Put ``judge`` through the planted pairs of ``families`` (the first ``limit`` pairs of each),
    then score the human-judgment excerpts of ``human_sets`` with their presets.

    A family or set whose metric reads log-probabilities is skipped, and said to be, on a backend
    that gives none (:func:`cannot_measure`): the check measures the judge as a run would use it,
    never a silent fallback.
    ``checked`` hears of each family and set as it is done.
    """
    results, human, skipped = [], [], {}
    for family in families:
        pairs = load_pairs(family)[:limit]
        why = cannot_measure(judge, family_metric(family, dict(pairs[0].options)))
        if why is not None:
            skipped[family.name] = why
            continue
        results.append(check_family(judge, family, pairs, events))
        if checked is not None:
            checked(results[-1])
    for human_set in human_sets:
        if not judge.capabilities.distribution and reads_distributions(build_metric(human_set.metric, {})):
            skipped[human_set.name] = NO_DISTRIBUTIONS
            continue
        human.append(check_human_set(judge, human_set, events=events))
        if checked is not None:
            checked(human[-1])
    return JudgeCheck(judge=judge.fingerprint, checked_at=now(), families=results, human=human, skipped=skipped)


def check_family(
    judge: Backend, family: Family, pairs: Sequence[Pair], events: Events | None = None,
) -> FamilyCheck:
    """One family's pairs scored by its metric, in one run per set of pair options, and measured."""
    groups: dict[str, list[int]] = {}
    for i, pair in enumerate(pairs):  # pairs with options of their own are scored by their own metric
        groups.setdefault(json.dumps(pair.options, sort_keys=True), []).append(i)
    scores: list[PairScores] = [PairScores(None, None)] * len(pairs)
    runs: list[tuple[Metric, RunReport]] = []
    with recording_prompts() as prompts:
        for indexes in groups.values():
            metric = family_metric(family, dict(pairs[indexes[0]].options))
            cases = [variant_case(family, pairs[i], v) for i in indexes for v in ("good", "bad")]
            report = evaluate(Dataset.from_cases(cases), [metric], judge, events=events)
            runs.append((metric, report))
            for k, i in enumerate(indexes):
                scores[i] = PairScores(*(_score(case.results[0]) for case in report.cases[2 * k: 2 * k + 2]))
    results = [(case.name, case.results[0]) for _, report in runs for case in report.cases]
    metric = runs[0][0]  # one kind, one default threshold, whatever each pair's options
    lower, threshold = bool(metric.lower_is_better), float(metric.threshold)
    bad_failed, good_passed = outcomes(scores, threshold, lower)
    calibration = calibrate(scores, lower)
    made = sum(report.stats.model_calls or 0 for _, report in runs)
    return FamilyCheck(
        family=family.name, metric=family.kind, pairs_sha256=pairs_sha256(pairs), pairs=len(pairs),
        errored=sum(not s.scored for s in scores), ordered=ordered(scores, lower), threshold=threshold,
        lower_is_better=lower, bad_failed=bad_failed, good_passed=good_passed,
        calibrated=None if calibration is None else CalibratedThreshold(**calibration.__dict__),
        seconds=round(sum(report.stats.duration_s for _, report in runs), 3),
        judge_calls=made + sum(report.stats.cache_hits or 0 for _, report in runs), model_calls=made,
        error_kinds=dict(sorted(Counter(error_kind(r.error) for _, r in results if r.error).items())),
        errors=[f"{name}: {r.error}" for name, r in results if r.error][:5], prompts=dict(sorted(prompts.items())),
        scoring_version=type(metric).scoring_version,
    )


def error_kind(error: str) -> str:
    """The kind of a result's error, as metrics write it ("SchemaViolation: ..."): its first word."""
    head = error.split(":", 1)[0].split()
    return head[-1] if head and head[-1].isidentifier() else "other"


def variant_case(family: Family, pair: Pair, which: str) -> Case:
    """A pair's variant as a case. In the arena, the two outputs are contestants, the variant's named
    first: its score is the preference for it, and as the arena judges both orders, the bad-first
    case's score is exactly one minus the good-first one's, from the same (cached) judge calls."""
    if not family.arena:
        return pair.good if which == "good" else pair.bad
    first, second = (pair.good, pair.bad) if which == "good" else (pair.bad, pair.good)
    first, second = cast(TestCase, first), cast(TestCase, second)  # arena pairs are single-turn
    return first.model_copy(update={
        "name": f"{pair.name}/{which}-first",
        "contestants": {which: first.actual_output or "", "other": second.actual_output or ""},
    })


def _score(result: MetricResult) -> float | None:
    return None if result.errored or result.score is None else float(result.score)


class CheckStore:
    """Judge checks on disk, one JSON file per judge fingerprint, under ``folder``; and the checks
    localeval ships for its catalog's models (``models/checks/<model sha256>.json``), which say how
    far to trust a model file that was never checked here (:meth:`load_for_trust`)."""

    def __init__(self, folder: Path, shipped: Path | None = None) -> None:
        self.folder = folder
        self.shipped = shipped if shipped is not None else data_path("models", "checks")

    def path(self, fingerprint: Fingerprint) -> Path:
        key = hashlib.sha256(fingerprint.model_dump_json().encode()).hexdigest()[:32]
        return self.folder / f"{key}.json"

    def save(self, check: JudgeCheck) -> Path:
        path = self.path(check.judge)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(path, check.model_dump_json(indent=2) + "\n")
        return path

    def load(self, fingerprint: Fingerprint) -> JudgeCheck | None:
        """The stored check of this judge; None when it has none (or one of another format)."""
        path = self.path(fingerprint)
        try:
            check = JudgeCheck.model_validate_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (ValidationError, OSError) as err:
            raise ConfigError(f"{path}: not a judge check this version reads ({err.__class__.__name__})") from err
        return check if check.judge == fingerprint else None

    def load_for_trust(self, fingerprint: Fingerprint) -> JudgeCheck | None:
        """This judge's own check, else localeval's shipped check of the same model file (same backend
        kind; measured with the runtime its ``judge`` names, which may differ). Never used for a
        calibrated threshold, which must come from this judge's own check."""
        own = self.load(fingerprint)
        if own is not None or fingerprint.model_sha256 is None:
            return own
        path = self.shipped / f"{fingerprint.model_sha256}.json"
        if not path.is_file():
            return None
        check = JudgeCheck.model_validate_json(path.read_text(encoding="utf-8"))
        same_file = (check.judge.kind, check.judge.model_sha256) == (fingerprint.kind, fingerprint.model_sha256)
        return check if same_file else None

"""How far a run may trust its judges, from their stored checks; and thresholds calibrated per judge.

:func:`assess` says, for each judge of a run, what its check measured on each metric family the
run asks it about, or that it was never checked there. :func:`from_checks` reads what metrics leave
to the check, before any judge call: the better verdict reading (``verdict_reading = "checked"``,
:func:`checked_readings`) and then the threshold the check chose for the family
(``threshold = "calibrated"``, :func:`calibrated`); where the check has neither, it refuses the run,
naming the metric and the command that checks the judge. Both know a
run's judges by name (:func:`by_name`): ``localeval run`` and :func:`localeval.evaluate` alike.

A metric that reads its verdicts weighted is trusted by the check of its family's weighted twin
(``faithfulness+weighted``, :func:`~localeval.metaeval.families.family_of`), never by the check of
the written reading, nor the other way round: they score differently.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from localeval.backends.base import Backend, Fingerprint
from localeval.data.results import FamilyTrust, JudgeTrust, ReadingHint
from localeval.errors import ConfigError
from localeval.metaeval.check import CheckStore, FamilyCheck, JudgeCheck
from localeval.metaeval.families import WEIGHTED, family_of, other_reading
from localeval.metrics.base import Metric
from localeval.metrics.items import CHECKED

#: The name of the default judge ([backend]) among a run's judges.
DEFAULT_JUDGE = "backend"


def check_command(fingerprint: Fingerprint, judge: str = DEFAULT_JUDGE, *, weighted: bool = False) -> str:
    """The command a user runs to check this judge (``weighted``: with the metrics reading verdicts weighted)."""
    if judge != DEFAULT_JUDGE:
        command = f"localeval check-judge --config CONFIG --judge {judge}"
    elif fingerprint.kind == "llama.cpp":
        command = f"localeval check-judge --model {fingerprint.model}"
    else:
        command = "localeval check-judge --config CONFIG"
    return f"{command} --verdicts weighted" if weighted else command


def by_name(judge: Backend | None, judges: Mapping[str, Backend]) -> dict[str, Backend]:
    """A run's loaded judges by the name trust and calibration know them by ('backend': the default)."""
    return {**({DEFAULT_JUDGE: judge} if judge is not None else {}), **judges}


def markup_notes(judge: Backend | None, judges: Mapping[str, Backend]) -> dict[str, str]:
    """For a run's judges whose backend cannot promise that chat markup in a case stays text, why."""
    return {name: b.capabilities.notes.get("text_as_data", "the backend does not say that it reads case text as text")
            for name, b in by_name(judge, judges).items() if not b.capabilities.text_as_data}


def judge_fingerprints(judge: Backend | None, judges: Mapping[str, Backend]) -> dict[str, Fingerprint]:
    """A run's loaded judges' fingerprints, by name (see :func:`by_name`)."""
    return {name: b.fingerprint for name, b in by_name(judge, judges).items()}


def parts(metric: Metric) -> Iterator[Metric]:
    """The metric and, for one made of others (composite), each part, depth first."""
    yield metric
    for part in getattr(metric, "metrics", None) or ():
        if isinstance(part, Metric):
            yield from parts(part)


def judge_name(metric: Metric) -> str:
    return metric.judge_name or DEFAULT_JUDGE


def assess(metrics: Sequence[Metric], judges: Mapping[str, Fingerprint], store: CheckStore,
           markup: Mapping[str, str] | None = None) -> list[JudgeTrust]:
    """Each judge's trust on the families the run's ``metrics`` ask it about (judges no metric asks: none);
    ``markup``: for the judges whose backend cannot promise that chat markup in a case stays text, why."""
    asked: dict[str, dict[tuple[str, bool], list[str]]] = {}  # judge -> (family or kind, covered) -> metrics
    for metric in (p for m in metrics for p in parts(m) if p.needs_judge):
        family = family_of(metric)
        key = (family.name, True) if family is not None else (metric.kind, False)
        names = asked.setdefault(judge_name(metric), {}).setdefault(key, [])
        if metric.display_name not in names:
            names.append(metric.display_name)
    trust = []
    for name, families in asked.items():
        fingerprint = judges.get(name)
        if fingerprint is None:
            continue
        check = store.load_for_trust(fingerprint)
        trust.append(JudgeTrust(
            judge=name, model=fingerprint.model, checked_at=None if check is None else check.checked_at,
            shipped_check=check is not None and check.judge != fingerprint,
            families=[_family_trust(family, covered, used, check) for (family, covered), used in families.items()],
            check_command=check_command(fingerprint, name, weighted=any(f.endswith(WEIGHTED) for f, _ in families)),
            markup=(markup or {}).get(name),
        ))
    return trust


def _family_trust(family: str, covered: bool, metrics: list[str], check: JudgeCheck | None) -> FamilyTrust:
    if not covered:  # no planted pairs for this kind of metric: say so, never nothing
        return FamilyTrust(family=family, metrics=metrics, checked=False, covered=False)
    measured: FamilyCheck | None = None if check is None else check.family(family)
    if measured is None:
        return FamilyTrust(family=family, metrics=metrics, checked=False)
    outdated = measured.outdated_prompts()
    if outdated:  # the check measured the metric as its prompts were then: it says nothing of it now
        return FamilyTrust(family=family, metrics=metrics, checked=False, outdated_prompts=outdated)
    calibrated = measured.calibrated
    return FamilyTrust(
        family=family, metrics=metrics, checked=True, ordered=measured.ordered, pairs=measured.pairs,
        bad_failed=measured.bad_failed, good_passed=measured.good_passed,
        calibrated_threshold=None if calibrated is None else calibrated.threshold,
        held_out_accuracy=None if calibrated is None else calibrated.held_out_accuracy,
        at_chance=measured.at_chance, other_reading=_better_reading(family, check) if measured.at_chance else None,
    )


def _better_reading(family: str, check: JudgeCheck | None) -> ReadingHint | None:
    """The family's verdicts read the other way, where the same check found that reading better than chance."""
    twin = other_reading(family)
    if twin is None:
        return None
    name, reading = twin
    measured = _current(check, name)
    if measured is None or measured.ordered is None or measured.at_chance:
        return None
    return ReadingHint(verdict_reading=reading, ordered=measured.ordered, pairs=measured.pairs)


def from_checks(metrics: Sequence[Metric], judges: Mapping[str, Fingerprint], store: CheckStore) -> list[Metric]:
    """``metrics`` with what they leave to the judge's check read from it, before any judge call: first each
    ``verdict_reading = "checked"`` (:func:`checked_readings`), then each ``threshold = "calibrated"``
    (:func:`calibrated`), which is the threshold of the reading chosen."""
    return calibrated(checked_readings(metrics, judges, store), judges, store)


def checked_readings(metrics: Sequence[Metric], judges: Mapping[str, Fingerprint],
                     store: CheckStore) -> list[Metric]:
    """``metrics`` with each ``verdict_reading = "checked"`` replaced by the reading the judge's check found
    better for the metric's family: weighted where it orders more of the planted pairs than written, else
    written (the default). Where only one reading was checked, that one. The check may be localeval's
    shipped check of the same model file (as for trust; a calibrated threshold needs the judge's own). The
    reading and what it rests on are the metric's ``verdict_reading`` and ``verdict_reading_source``, which
    every result records. A judge with neither reading checked is a ``ConfigError`` naming the metric and
    the command that checks it."""
    return [_checked_reading(m, judges, store) if getattr(m, "verdict_reading_source", None) == CHECKED else m
            for m in metrics]


def _checked_reading(metric: Metric, judges: Mapping[str, Fingerprint], store: CheckStore) -> Metric:
    name = judge_name(metric)
    fingerprint = judges.get(name)
    family = family_of(metric)  # the written family: an unresolved reading is written until now
    if fingerprint is None or family is None:
        raise ConfigError(f"metric '{metric.display_name}': verdict_reading 'checked' needs a metric that asks a judge")
    if getattr(metric, "strict_mode", False):  # strict mode counts written verdicts only
        return metric.model_copy(update={"verdict_reading": "written",
                                         "verdict_reading_source": "checked: strict_mode reads verdicts as written"})
    check = store.load_for_trust(fingerprint)
    readings = {reading: _current(check, family_name) for family_name, reading in
                ((family.name, "written"), (family.name + WEIGHTED, "weighted"))}
    measured = {reading: found for reading, found in readings.items() if found is not None}
    if not measured:
        raise ConfigError(
            f"metric '{metric.display_name}': verdict_reading 'checked', but judge '{name}' ({fingerprint.model}) "
            f"has no check of family '{family.name}' read either way; run: {check_command(fingerprint, name)} "
            f"--family {family.name}, and again with --verdicts weighted"
        )
    reading = max(measured, key=lambda r: (measured[r].ordered or 0.0, r == "written"))
    return metric.model_copy(update={"verdict_reading": reading,
                                     "verdict_reading_source": _reading_source(reading, measured, check, fingerprint)})


def _current(check: JudgeCheck | None, family: str) -> FamilyCheck | None:
    """The family's result in the check, where it measured something with the prompts shipped now."""
    measured = None if check is None else check.family(family)
    if measured is None or measured.ordered is None or measured.outdated_prompts():
        return None
    return measured


def _reading_source(reading: str, measured: Mapping[str, FamilyCheck], check: JudgeCheck | None,
                    fingerprint: Fingerprint) -> str:
    assert check is not None  # a reading was measured, so there is a check
    whose = "localeval's shipped check" if check.judge != fingerprint else "judge check"
    figures = ", ".join(f"{r} orders {f.ordered:.0%} of {f.pairs} pairs" for r, f in measured.items()
                        if f.ordered is not None)
    only = "" if len(measured) == 2 else f"; only {reading} was checked"
    return f"checked: {whose} of {fingerprint.model}, {check.checked_at}: {figures}{only}"


def calibrated(metrics: Sequence[Metric], judges: Mapping[str, Fingerprint], store: CheckStore) -> list[Metric]:
    """``metrics`` with each ``threshold = "calibrated"`` replaced by its judge's checked threshold.

    The value used and where it came from are the metric's ``threshold`` and ``threshold_source``,
    which every result records. A judge with no check (or none on the metric's family) is a
    ``ConfigError`` naming the metric and the command that checks the judge.
    """
    return [_calibrated(m, judges, store) if m.threshold_source == "calibrated" else m for m in metrics]


def _calibrated(metric: Metric, judges: Mapping[str, Fingerprint], store: CheckStore) -> Metric:
    name = judge_name(metric)
    fingerprint = judges.get(name)
    family = family_of(metric)
    if fingerprint is None or family is None:
        raise ConfigError(f"metric '{metric.display_name}': threshold 'calibrated' needs a metric that asks a judge")
    check = store.load(fingerprint)
    measured = None if check is None else check.family(family.name)
    if check is None or measured is None or measured.calibrated is None:
        what = "has not been checked" if check is None else f"has no calibrated threshold for family '{family.name}'"
        raise ConfigError(
            f"metric '{metric.display_name}': threshold 'calibrated', but judge '{name}' ({fingerprint.model}) "
            f"{what}; run: {check_command(fingerprint, name, weighted=family.name.endswith(WEIGHTED))}"
        )
    outdated = measured.outdated_prompts()
    if outdated:
        raise ConfigError(
            f"metric '{metric.display_name}': threshold 'calibrated', but judge '{name}' ({fingerprint.model}) was "
            f"checked on '{family.name}' with prompts or scoring that have changed since ({', '.join(outdated)}); "
            f"run: {check_command(fingerprint, name)} --family {family.name}"
        )
    chosen = measured.calibrated
    source = (f"calibrated: judge check of {fingerprint.model} on '{family.name}', {check.checked_at}, "
              f"held-out accuracy {chosen.held_out_accuracy:.2f} ({chosen.held_out_pairs} pairs)")
    return metric.model_copy(update={"threshold": chosen.threshold, "threshold_source": source})

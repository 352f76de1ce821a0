"""The human-judgment excerpts the judge check runs the G-Eval presets on, beside the planted pairs.

The planted pairs say whether a judge tells a good answer from a planted-bad one; these say
whether its preset scores rise and fall with people's. Each set is an excerpt of one of UniEval's
human-judgment files (``tests/data/alignment``, MIT, shipped in the package: see its README) and
one preset scored on it, read as ``meta-eval`` reads it. Thirty-odd records make a rough figure,
not the paper's: ``docs/measurements/alignment.md`` holds the full sets' figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from localeval.backends.base import Backend
from localeval.metaeval.correlations import Correlations
from localeval.metaeval.evaluation import JudgmentSpec, load_judgments, meta_evaluate
from localeval.resources import data_path
from localeval.run.events import Events

SUMMARY = {"input": "source", "actual_output": "system_output"}
DIALOGUE = {**SUMMARY, "context": "context"}


@dataclass(frozen=True)
class HumanSet:
    """One preset scored on one human-judgment excerpt."""

    name: str  #: how the check names it (``--family NAME``)
    file: str  #: the excerpt's file name
    metric: str  #: the preset
    spec: JudgmentSpec  #: QAGS has one summary per document: pooled only, as the paper reports it


HUMAN_SETS: tuple[HumanSet, ...] = (
    HumanSet("human-qags-cnndm-consistency", "qags_cnndm.json", "geval:consistency",
             JudgmentSpec(SUMMARY, "scores.consistency")),
    HumanSet("human-qags-xsum-consistency", "qags_xsum.json", "geval:consistency",
             JudgmentSpec(SUMMARY, "scores.consistency")),
    HumanSet("human-topical-chat-engagingness", "topical_chat.json", "geval:engagingness",
             JudgmentSpec(DIALOGUE, "scores.engagingness", group="source")),
    HumanSet("human-topical-chat-naturalness", "topical_chat.json", "geval:naturalness",
             JudgmentSpec(DIALOGUE, "scores.naturalness", group="source")),
    HumanSet("human-topical-chat-groundedness", "topical_chat.json", "geval:groundedness",
             JudgmentSpec(DIALOGUE, "scores.groundedness", group="source")),
)
HUMAN_BY_NAME = {s.name: s for s in HUMAN_SETS}


def excerpts_folder() -> Path:
    """Where the excerpts are: ``tests/data/alignment`` in a checkout, its copy in a wheel."""
    return data_path("tests", "data", "alignment")


class HumanAgreement(BaseModel):
    """How a judge's preset scores agreed with people's on one excerpt."""

    model_config = ConfigDict(frozen=True)

    name: str
    metric: str
    data: str = Field(description="The excerpt's file name.")
    records: int
    errored: int = Field(description="Records the judge could not score (left out of the correlations).")
    pooled: Correlations
    summary_level: Correlations | None = None
    seconds: float = 0.0


def check_human_set(judge: Backend, human_set: HumanSet, folder: Path | None = None,
                    events: Events | None = None) -> HumanAgreement:
    """Score the excerpt with the preset (its own scoring method) and correlate with the human scores."""
    judgments = load_judgments((folder or excerpts_folder()) / human_set.file, human_set.spec)
    report = meta_evaluate(judgments, human_set.metric, judge=judge, events=events)
    method = report.methods[0]
    return HumanAgreement(
        name=human_set.name, metric=human_set.metric, data=human_set.file, records=report.records,
        errored=method.errored, pooled=method.pooled, summary_level=method.summary_level,
        seconds=round(report.stats.duration_s, 3),
    )


def human_sets_named(names: Sequence[str]) -> tuple[HumanSet, ...]:
    """The sets among ``names``, in the check's order."""
    return tuple(s for s in HUMAN_SETS if s.name in names)

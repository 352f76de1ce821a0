"""The metric families a judge check puts a judge through, and the planted pairs shipped for each.

A family is one metric, with the options the check builds it with, and a file of planted pairs
(``pairs/<family>.jsonl``, shipped in the package): each line a case written twice, ``good`` and
``bad``, differing in the one thing the metric judges (``planted`` says what), with optional
``options`` for that pair (prompt alignment's instructions). :func:`family_of` maps a metric of a
run to the family whose check result speaks for it.

A metric that gives verdicts on a list of items scores differently when it reads them weighted
(``verdict_reading = "weighted"``) than as written, so a check of one reading says nothing of the
other: each such family has a weighted twin (:func:`weighted`, ``faithfulness+weighted``), checked
on the same pairs (``check-judge --verdicts weighted``) and stored under its own name, which is the
family of the metrics that read their verdicts weighted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib.resources import files
from typing import Any, Literal

from pydantic import ValidationError

from localeval.data.case import ConversationalTestCase, TestCase
from localeval.errors import DatasetError, first_problem
from localeval.metrics.base import Metric
from localeval.metrics.registry import metric_class

#: The correctness G-Eval of the quick start (examples/quickstart/eval.toml).
CORRECTNESS = {
    "name": "correctness",
    "evaluation_params": ["input", "actual_output", "expected_output"],
    "evaluation_steps": [
        "Read the question and the expected output.",
        "Check whether the actual output states the same fact as the expected output.",
        "Give a low score if the actual output contradicts the expected output.",
    ],
}
#: The arena of examples/arena/arena.toml.
BETTER_ANSWER = {
    "name": "better_answer",
    "criteria": "The answer is correct and states it directly.",
    "evaluation_params": ["input", "expected_output"],
    "evaluation_steps": [
        "Check which output agrees with the expected output.",
        "Prefer the correct output; between two correct outputs, prefer the more direct one.",
    ],
}
POLITENESS = {"name": "politeness", "criteria": "The assistant is polite and patient with the user in every turn."}


@dataclass(frozen=True)
class Family:
    """One metric family of the judge check."""

    name: str  #: the family, and its pairs file's stem
    kind: str  #: the metric kind (``build_metric``'s first argument)
    options: Mapping[str, Any] = field(default_factory=dict)  #: what the check builds it with
    conversational: bool = False  #: the pairs are conversations
    arena: bool = False  #: a pair is one case: the two outputs as contestants, good named first
    pairs_file: str = ""  #: the pairs file's stem, when it is not ``name`` (a weighted twin's is its family's)

    @property
    def pairs_name(self) -> str:
        """The stem of the family's pairs file (``pairs/<stem>.jsonl``)."""
        return self.pairs_file or self.name


FAMILIES: tuple[Family, ...] = (
    Family("correctness", "geval", CORRECTNESS),
    *(Family(f"geval-{preset}", f"geval:{preset}") for preset in (
        "coherence", "consistency", "fluency", "relevance", "engagingness", "naturalness", "groundedness")),
    Family("summarization", "summarization"),
    Family("faithfulness", "faithfulness"),
    Family("answer-relevancy", "answer_relevancy"),
    Family("contextual-precision", "contextual_precision"),
    Family("contextual-recall", "contextual_recall"),
    Family("contextual-relevancy", "contextual_relevancy"),
    Family("hallucination", "hallucination"),
    Family("bias", "bias"),
    Family("toxicity", "toxicity"),
    Family("pii-leakage", "pii_leakage"),
    Family("prompt-alignment", "prompt_alignment"),
    *(Family(name.replace("_", "-"), name, conversational=True) for name in (
        "role_adherence", "knowledge_retention", "conversation_completeness", "turn_relevancy")),
    Family("conversational-geval", "conversational_geval", POLITENESS, conversational=True),
    Family("argument-correctness", "argument_correctness"),
    Family("task-completion", "task_completion"),
    Family("arena", "arena", BETTER_ANSWER, arena=True),
)
#: The name a family's weighted twin has: the family's, and this.
WEIGHTED = "+weighted"


def reads_verdicts(family: Family) -> bool:
    """Whether the family's metric gives verdicts on items, so that it can read them weighted."""
    cls = metric_class(family.kind)
    return cls is not None and "verdict_reading" in cls.model_fields


def weighted(family: Family) -> Family:
    """The family's weighted twin: its metric reads the verdicts weighted, on the same pairs, under its own name."""
    if family.options.get("verdict_reading") == "weighted":
        return family
    return replace(family, name=family.name + WEIGHTED, options={**family.options, "verdict_reading": "weighted"},
                   pairs_file=family.pairs_name)


#: The weighted twins of the families whose metric gives verdicts on items.
WEIGHTED_FAMILIES: tuple[Family, ...] = tuple(weighted(f) for f in FAMILIES if reads_verdicts(f))
#: Every family by name, the weighted twins too.
BY_NAME = {f.name: f for f in (*FAMILIES, *WEIGHTED_FAMILIES)}


@dataclass(frozen=True)
class Pair:
    """One planted pair: the same case, good and planted-bad."""

    name: str
    domain: str
    planted: str
    good: TestCase | ConversationalTestCase
    bad: TestCase | ConversationalTestCase
    options: Mapping[str, Any] = field(default_factory=dict)


def pairs_text(family: Family) -> str:
    """The family's pairs file as shipped."""
    return files("localeval.metaeval").joinpath("pairs", f"{family.pairs_name}.jsonl").read_text(encoding="utf-8")


def pairs_sha256(pairs: Sequence[Pair]) -> str:
    """One hash of the pairs a check measured (their cases and options): a result names its data."""
    digest = hashlib.sha256()
    for pair in pairs:
        record = [pair.name, pair.good.model_dump(mode="json"), pair.bad.model_dump(mode="json"), dict(pair.options)]
        digest.update(json.dumps(record, sort_keys=True).encode("utf-8") + b"\n")
    return digest.hexdigest()


def load_pairs(family: Family) -> list[Pair]:
    """The family's planted pairs; a malformed line is a ``DatasetError`` naming the file and line."""
    where = f"localeval/metaeval/pairs/{family.pairs_name}.jsonl"
    model = ConversationalTestCase if family.conversational else TestCase
    pairs = []
    for line_number, line in enumerate(pairs_text(family).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            good, bad = (model.model_validate({**record[v], "name": f"{record['name']}/{v}"}) for v in ("good", "bad"))
            pairs.append(Pair(record["name"], record.get("domain", ""), record.get("planted", ""), good, bad,
                              record.get("options") or {}))
        except ValidationError as err:
            key, message = first_problem(err)
            raise DatasetError(f"{where}:{line_number}: field '{key}': {message}") from err
        except (ValueError, KeyError, TypeError) as err:
            raise DatasetError(f"{where}:{line_number}: {err}") from err
    return pairs


def family_of(metric: Metric) -> Family | None:
    """The family whose check speaks for ``metric``: G-Eval presets by preset, any other G-Eval
    (criteria of the user's own) by correctness, the rest by kind, the weighted twin for a metric that
    reads its verdicts weighted; None for metrics that ask no judge."""
    if not metric.needs_judge:
        return None
    kind = type(metric).kind
    if kind == "geval":
        preset = BY_NAME.get(f"geval-{metric.display_name}")
        return preset if preset is not None and preset.kind.startswith("geval:") else BY_NAME["correctness"]
    family = next((f for f in FAMILIES if f.kind == kind), None)
    if family is not None and getattr(metric, "verdict_reading", "written") == "weighted":
        return weighted(family)
    return family


def other_reading(name: str) -> tuple[str, Literal["written", "weighted"]] | None:
    """For a family whose verdicts can be read both ways: its twin's name and the twin's reading; else None."""
    if name.endswith(WEIGHTED):
        return name.removesuffix(WEIGHTED), "written"
    if name + WEIGHTED in BY_NAME:
        return name + WEIGHTED, "weighted"
    return None

"""The metric families a judge check puts a judge through, and the planted pairs shipped for each.

A family is one metric, with the options the check builds it with, and a file of planted pairs
(``pairs/<family>.jsonl``, shipped in the package): each line a case written twice, ``good`` and
``bad``, differing in the one thing the metric judges (``planted`` says what), with optional
``options`` for that pair (prompt alignment's instructions). :func:`family_of` maps a metric of a
run to the family whose check result speaks for it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from pydantic import ValidationError

from localeval.data.case import ConversationalTestCase, TestCase
from localeval.errors import DatasetError, first_problem
from localeval.metrics.base import Metric

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
BY_NAME = {f.name: f for f in FAMILIES}


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
    return files("localeval.metaeval").joinpath("pairs", f"{family.name}.jsonl").read_text(encoding="utf-8")


def pairs_sha256(pairs: Sequence[Pair]) -> str:
    """One hash of the pairs a check measured (their cases and options): a result names its data."""
    digest = hashlib.sha256()
    for pair in pairs:
        record = [pair.name, pair.good.model_dump(mode="json"), pair.bad.model_dump(mode="json"), dict(pair.options)]
        digest.update(json.dumps(record, sort_keys=True).encode("utf-8") + b"\n")
    return digest.hexdigest()


def load_pairs(family: Family) -> list[Pair]:
    """The family's planted pairs; a malformed line is a ``DatasetError`` naming the file and line."""
    where = f"localeval/metaeval/pairs/{family.name}.jsonl"
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
    (criteria of the user's own) by correctness, the rest by kind; None for metrics that ask no judge."""
    if not metric.needs_judge:
        return None
    kind = type(metric).kind
    if kind == "geval":
        preset = BY_NAME.get(f"geval-{metric.display_name}")
        return preset if preset is not None and preset.kind.startswith("geval:") else BY_NAME["correctness"]
    return next((f for f in FAMILIES if f.kind == kind), None)

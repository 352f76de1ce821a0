"""ROUGE, BLEU and chrF: localeval's scores are rouge-score's and sacrebleu's own, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rouge_score import rouge_scorer
from sacrebleu.metrics.bleu import BLEU
from sacrebleu.metrics.chrf import CHRF

from localeval.config import RunConfig
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.errors import DatasetError
from localeval.metrics import Bleu, Chrf, Rouge, build_metric
from localeval.run.runner import check_inputs

PAIRS = [
    ("The cat sat on the mat.", "The cat is sitting on the mat."),
    ("A quick brown fox jumps over the lazy dog", "The quick brown fox jumped over the lazy dogs"),
    (
        "Returns are accepted within 30 days.\nShipping is free.",
        "You can return items within thirty days.\nShipping costs nothing.",
    ),
    ("completely unrelated words here", "The meeting was moved to Tuesday."),
    ("Identical sentence.", "Identical sentence."),
]


def case(actual: str, expected: str) -> TestCase:
    return TestCase(input="q", actual_output=actual, expected_output=expected)


@pytest.mark.parametrize("variant", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
@pytest.mark.parametrize("use_stemmer", [False, True])
@pytest.mark.parametrize(("actual", "expected"), PAIRS)
def test_rouge_equals_rouge_score(variant: str, use_stemmer: bool, actual: str, expected: str) -> None:
    theirs = rouge_scorer.RougeScorer([variant], use_stemmer=use_stemmer).score(expected, actual)[variant]
    result = Rouge(variant=variant, use_stemmer=use_stemmer).measure(case(actual, expected))
    assert result.error is None
    assert result.score == theirs.fmeasure
    assert result.details == {
        "variant": variant, "precision": theirs.precision, "recall": theirs.recall, "fmeasure": theirs.fmeasure
    }
    for statistic in ("precision", "recall"):
        other = Rouge(variant=variant, use_stemmer=use_stemmer, statistic=statistic).measure(case(actual, expected))
        assert other.score == getattr(theirs, statistic)


@pytest.mark.parametrize("tokenize", ["13a", "intl", "char"])
@pytest.mark.parametrize(("actual", "expected"), PAIRS)
def test_bleu_equals_sacrebleu_sentence_bleu(tokenize: str, actual: str, expected: str) -> None:
    theirs = BLEU(tokenize=tokenize, effective_order=True).sentence_score(actual, [expected])
    result = Bleu(tokenize=tokenize).measure(case(actual, expected))
    assert result.error is None
    assert result.score == min(1.0, theirs.score / 100)  # an exact match is 100.00000000000004 to sacrebleu
    assert result.raw_score == theirs.score
    assert result.details["precisions"] == theirs.precisions
    assert result.details["brevity_penalty"] == theirs.bp


@pytest.mark.parametrize("word_order", [0, 2])
@pytest.mark.parametrize(("actual", "expected"), PAIRS)
def test_chrf_equals_sacrebleu_sentence_chrf(word_order: int, actual: str, expected: str) -> None:
    theirs = CHRF(word_order=word_order).sentence_score(actual, [expected])
    result = Chrf(word_order=word_order).measure(case(actual, expected))
    assert (result.error, result.score, result.raw_score) == (None, min(1.0, theirs.score / 100), theirs.score)


def test_known_values_so_a_changed_library_shows() -> None:
    actual, expected = PAIRS[0]
    # rouge1: 5 of 6 output words, 5 of 7 expected words; rouge2: 3 of 5 and 3 of 6 bigrams.
    unigrams = Rouge(variant="rouge1").measure(case(actual, expected)).score
    bigrams = Rouge(variant="rouge2").measure(case(actual, expected)).score
    assert (unigrams, bigrams) == (pytest.approx(2 / (6 / 5 + 7 / 5)), pytest.approx(2 / (5 / 3 + 6 / 3)))
    identical = case("Identical sentence.", "Identical sentence.")
    assert [m.measure(identical).score for m in (Rouge(), Bleu(), Chrf())] == [1.0, 1.0, 1.0]
    unrelated = case(*PAIRS[3])
    assert Rouge().measure(unrelated).score == 0.0


def test_the_threshold_decides_and_the_reason_gives_the_score() -> None:
    result = Rouge(variant="rouge1", threshold=0.8).measure(case(*PAIRS[0]))
    assert result.passed is False
    assert result.reason == f"rouge {result.score:.4f} against the expected output."
    assert Rouge(variant="rouge1", threshold=0.7).measure(case(*PAIRS[0])).passed is True


def test_options_are_checked_when_built() -> None:
    with pytest.raises(Exception, match=r"rouge.variant: Input should be 'rouge1', 'rouge2', 'rougeL' or 'rougeLsum'"):
        build_metric("rouge", {"variant": "rouge3"})
    with pytest.raises(Exception, match=r"bleu.tokenize: Input should be"):
        build_metric("bleu", {"tokenize": "ja-mecab"})


@pytest.mark.parametrize("kind", ["rouge", "bleu", "chrf"])
def test_a_case_without_expected_output_is_named_by_file_line_and_field_before_any_scoring(
    kind: str, tmp_path: Path
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(
        '{"input": "a", "actual_output": "b", "expected_output": "b"}\n{"input": "a", "actual_output": "b"}\n'
    )
    config = tmp_path / "eval.toml"
    config.write_text(f'[dataset]\npath = "d.jsonl"\n\n[[metrics]]\nmetric = "{kind}"\n')
    run = RunConfig.load(config)
    with pytest.raises(DatasetError) as raised:
        check_inputs(Dataset.load(data), run.build_metrics())
    assert str(raised.value) == f"{data}:2: field 'expected_output': metric '{kind}' needs it, and it is missing"


# Runs in a fresh interpreter with every way out to the network closed and an empty HOME:
# importing and scoring (stemmer included) must neither connect nor write a file.
OFFLINE = """
import json, socket, sys

def refuse(*args, **kwargs):
    raise OSError("network access attempted: " + repr(args[:2]))

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

from localeval.data.case import TestCase
from localeval.metrics import Bleu, Chrf, Rouge

case = TestCase(input="q", actual_output="The cats were running home.\\nIt rained.",
                expected_output="A cat runs home.\\nIt was raining.")
metrics = [Rouge(variant=v, use_stemmer=s) for v in ("rouge1", "rouge2", "rougeL", "rougeLsum") for s in (False, True)]
metrics += [Bleu(tokenize=t) for t in ("13a", "intl", "zh", "char", "none")] + [Chrf(), Chrf(word_order=2)]
results = [m.measure(case) for m in metrics]
print(json.dumps({"errors": [r.error for r in results if r.error], "scores": [r.score for r in results],
                  "nltk": "nltk" in sys.modules}))
"""


def test_the_libraries_work_offline_and_write_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "NLTK_", "SACREBLEU"))}
    env.update(HOME=str(home), PYTHONDONTWRITEBYTECODE="1")
    root = Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", OFFLINE], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["errors"] == []
    assert len(found["scores"]) == 15 and all(0.0 <= s <= 1.0 for s in found["scores"])
    assert found["nltk"]  # the stemmer came from nltk, and nltk asked for no data
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["home"]

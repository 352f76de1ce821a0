"""Reference metrics: ROUGE, BLEU and chrF of ``actual_output`` against ``expected_output``. No judge.

The numbers are the libraries' own, not a re-implementation: ROUGE from Google's
``rouge-score`` (the package the ROUGE results of most summarization papers
since 2019 come from), BLEU and chrF from ``sacrebleu`` at sentence level
(Post, 2018: the reference implementation, with its standard tokenization).
Each is scaled to [0, 1] (sacrebleu's 0-100 divided by 100, kept as the
result's ``raw_score``) and passes at ``threshold`` like any metric.

Both libraries are imported when a metric first scores, not when localeval is
imported, and neither touches the network: rouge-score's tokenizer is a regular
expression and its stemmer nltk's Porter stemmer, plain code with no data files
(nltk's sentence splitter, which would want downloaded data, is never used);
sacrebleu's tokenizers offered here are rules (the ones that need MeCab or a
SentencePiece model are not offered).
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.metrics.base import Metric, Verdict

RougeVariant = Literal["rouge1", "rouge2", "rougeL", "rougeLsum"]
RougeStatistic = Literal["fmeasure", "precision", "recall"]
#: sacrebleu's tokenizers that are rules: no extra package, no model file.
Tokenizer = Literal["13a", "intl", "zh", "char", "none"]
Smoothing = Literal["exp", "floor", "add-k", "none"]


def scaled(score: float) -> float:
    """sacrebleu's 0-100 score as 0-1. Clamped: its floating point gives 100.00000000000004 for an
    exact match (a geometric mean of 1.0s through exp and log), which is 100."""
    return min(1.0, max(0.0, score / 100))


class ReferenceMetric(Metric):
    """Base of the metrics that compare ``actual_output`` with ``expected_output`` by a formula."""

    def required_fields(self) -> tuple[str, ...]:
        return ("actual_output", "expected_output")

    def verdict(self, case: TestCase, judge: Backend | None) -> Verdict:
        score, details = self.compare(case.actual_output or "", case.expected_output or "")
        return Verdict(score, f"{self.display_name} {score:.4f} against the expected output.", details)

    def compare(self, actual: str, expected: str) -> tuple[float, dict[str, Any]]:
        """The score in [0, 1] of ``actual`` against ``expected``, and the library's numbers behind it."""
        raise NotImplementedError


@cache
def _rouge_scorer(variant: str, use_stemmer: bool) -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer([variant], use_stemmer=use_stemmer)


class Rouge(ReferenceMetric):
    """ROUGE-1, ROUGE-2 or ROUGE-L (``variant``) of the output against the expected output.

    Unigram, bigram or longest-common-subsequence overlap, computed by
    ``rouge_score.rouge_scorer.RougeScorer``; the score is its F-measure
    (``statistic`` picks precision or recall instead); all three are in
    ``details``. ``rougeLsum`` treats each line as a sentence. rouge-score's
    tokenizer lowercases and keeps only ASCII letters and digits: text in other
    scripts has no tokens and scores 0.
    """

    kind = "rouge"

    variant: RougeVariant = Field("rougeL", description="rouge1, rouge2, rougeL or rougeLsum.")
    statistic: RougeStatistic = Field("fmeasure", description="Which of rouge-score's numbers is the score.")
    use_stemmer: bool = Field(False, description="Porter-stem words first ('runs' matches 'running').")

    def compare(self, actual: str, expected: str) -> tuple[float, dict[str, Any]]:
        scored = _rouge_scorer(self.variant, self.use_stemmer).score(expected, actual)[self.variant]
        numbers = {"precision": scored.precision, "recall": scored.recall, "fmeasure": scored.fmeasure}
        return float(numbers[self.statistic]), {"variant": self.variant, **numbers}


class Bleu(ReferenceMetric):
    """Sentence-level BLEU of the output against the expected output, by sacrebleu, ÷ 100.

    ``sacrebleu.metrics.BLEU(...).sentence_score`` with effective order (a short
    sentence is not zeroed by the n-gram orders it is too short for) and
    ``smooth_method`` smoothing. ``details`` has the n-gram precisions, the
    brevity penalty and the lengths.
    """

    kind = "bleu"

    tokenize: Tokenizer = Field("13a", description="sacrebleu's tokenizer: 13a (default), intl, zh, char, none.")
    smooth_method: Smoothing = Field("exp", description="Smoothing of zero n-gram counts.")
    lowercase: bool = Field(False, description="Compare lowercased text.")

    def compare(self, actual: str, expected: str) -> tuple[float, dict[str, Any]]:
        from sacrebleu.metrics.bleu import BLEU

        bleu = BLEU(
            tokenize=self.tokenize, smooth_method=self.smooth_method, lowercase=self.lowercase, effective_order=True
        )
        scored = bleu.sentence_score(actual, [expected])
        return scaled(scored.score), {
            "raw_score": scored.score,
            "precisions": list(scored.precisions),
            "brevity_penalty": scored.bp,
            "output_length": scored.sys_len,
            "reference_length": scored.ref_len,
        }


class Chrf(ReferenceMetric):
    """Sentence-level chrF (``word_order = 2``: chrF++) of the output against the expected output, ÷ 100.

    Character n-gram F-score (Popović, 2015), by ``sacrebleu.metrics.CHRF(...)
    .sentence_score``: it works in any script and credits partly right words,
    where BLEU's word n-grams do not.
    """

    kind = "chrf"

    char_order: int = Field(6, ge=1, description="The longest character n-gram.")
    word_order: int = Field(0, ge=0, le=2, description="Word n-grams too: 0 is chrF, 2 is chrF++.")
    beta: int = Field(2, ge=1, description="Recall weighs beta times as much as precision.")
    lowercase: bool = Field(False, description="Compare lowercased text.")

    def compare(self, actual: str, expected: str) -> tuple[float, dict[str, Any]]:
        from sacrebleu.metrics.chrf import CHRF

        chrf = CHRF(char_order=self.char_order, word_order=self.word_order, beta=self.beta, lowercase=self.lowercase)
        scored = chrf.sentence_score(actual, [expected])
        details = {"raw_score": scored.score, "char_order": self.char_order, "word_order": self.word_order}
        return scaled(scored.score), details

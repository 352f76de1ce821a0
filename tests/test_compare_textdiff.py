"""The word diff of two outputs: exact spans on crafted pairs, and both texts always joined back whole."""

from __future__ import annotations

import pytest

from localeval.reports.textdiff import MAX_TOKENS, side, word_diff


def spans(before: str, after: str) -> list[tuple[str, str]]:
    return [(s.op, s.text) for s in word_diff(before, after)]


def test_equal_texts_are_one_shared_span_and_empty_ones_none() -> None:
    assert spans("Paris.", "Paris.") == [("same", "Paris.")]
    assert spans("", "") == []
    assert spans("", "new") == [("added", "new")]
    assert spans("old", "") == [("removed", "old")]


def test_a_word_and_its_punctuation_are_apart() -> None:
    assert spans("Answer 5.", "Answer five!") == [("same", "Answer "), ("removed", "5."), ("added", "five!")]
    assert spans("It is Paris.", "It is Lyon.") == [("same", "It is "), ("removed", "Paris"), ("added", "Lyon"),
                                                    ("same", ".")]


def test_whitespace_between_two_changes_belongs_to_the_change() -> None:
    assert spans("The cat sat.", "A dog sat.") == [("removed", "The cat"), ("added", "A dog"), ("same", " sat.")]


def test_a_change_of_whitespace_alone_is_a_change() -> None:
    assert spans("a b", "a\nb") == [("same", "a"), ("removed", " "), ("added", "\n"), ("same", "b")]


@pytest.mark.parametrize(("before", "after"), [
    ("Take two pills a day.", "Take twenty pills at once, then drive."),
    ("line one\nline two\n", "line one\nline 2\nline three\n"),
    ("  leading and trailing  ", "leading and trailing"),
    ("naïve café — 東京 🙂", "naive cafe - 東京 🙂!"),
    ("\x1b]0;title\x07 text", "text \u202e"),
])
def test_the_spans_join_back_into_both_texts(before: str, after: str) -> None:
    diff = word_diff(before, after)
    assert (side(diff, "before"), side(diff, "after")) == (before, after)
    assert all(a.op != b.op for a, b in zip(diff, diff[1:]))  # neighbours of one kind are joined


def test_long_texts_are_diffed_by_lines() -> None:
    before = "".join(f"word{i} " for i in range(MAX_TOKENS)) + "\nlast line\n"
    after = before.replace("last line", "final line")
    diff = word_diff(before, after)
    assert [(s.op, s.text) for s in diff[1:]] == [("removed", "last line\n"), ("added", "final line\n")]
    assert (side(diff, "before"), side(diff, "after")) == (before, after)


def test_a_repetitive_answer_with_one_word_changed_is_one_word_of_diff() -> None:
    """difflib's "autojunk" would treat words that repeat as noise and call half the text changed."""
    before = " ".join(["yes"] * 150 + ["no"] * 150)
    after = before.replace("no", "NO", 1)
    assert [(s.op, s.text) for s in word_diff(before, after) if s.op != "same"] == [("removed", "no"), ("added", "NO")]

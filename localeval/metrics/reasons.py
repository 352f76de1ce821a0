"""A judge's reason without its loops: pure text, no I/O.

Small judges decoding greedily fall into loops inside their reasons ("a perfect 3.71, and the score
is a perfect 3.71, and the score is a perfect 3.71…") until the length limit cuts them off. A reason
is for a person, never for the score, so a loop is cut where it starts repeating, and the result
says it was (``details["reason_loop_cut"]``: how many characters were left out): never silently.

A loop is a run of words that comes back and keeps coming back: the text is cut just before the
first place where the words starting there repeat earlier words (at least :data:`LOOP_WORDS` of
them) for :data:`LOOP_RUN` words, or to the end of the reason with nothing between the repeat
and what it repeats (one phrase over and over, until the length limit). Prose repeats phrases
("the actual output and the expected output") but seldom a dozen words in a row. Measured on
the quick start's reasons (docs/measurements/judges.md): the rule cuts each of SmolLM2's 4
loops and none of Qwen2.5-Coder-1.5B's 12 reasons, where cutting at the first six repeated
words had cut 7 of Qwen's 12.
"""

from __future__ import annotations

import re

#: The fewest consecutive words that must come back for a repeat to count as a loop...
LOOP_WORDS = 6
#: ...and how many they must be unless they run to the end of the reason.
LOOP_RUN = 12
_WORD = re.compile(r"\w+", re.UNICODE)


def cut_loop(text: str, window: int = LOOP_WORDS) -> tuple[str, int]:
    """``text`` up to the first loop (see the module), and how many characters were cut.

    Words compare case-insensitively, by letters and digits only; nothing is cut when no run of
    ``window`` words comes back for :data:`LOOP_RUN` words or to the end. The kept text ends at a
    word's end, trailing punctuation and white space trimmed, with an ellipsis to show the cut.
    """
    words = [m.group().lower() for m in _WORD.finditer(text)]
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    first: dict[tuple[str, ...], int] = {}
    for i in range(len(words) - window + 1):
        gram = tuple(words[i: i + window])
        earlier = first.setdefault(gram, i)
        if earlier != i and _repeats(words, earlier, i):
            end = spans[i - 1][1] if i > 0 else 0
            kept = text[:end].rstrip(" ,;:-–—\n\t")
            return (kept + "…" if kept else text), (len(text) - end if kept else 0)
    return text, 0


def _repeats(words: list[str], earlier: int, i: int) -> bool:
    """Whether the words from ``i`` repeat those from ``earlier`` for :data:`LOOP_RUN` words, or to the
    end with nothing between the two (the text from ``earlier`` on is one phrase over and over)."""
    run = 0
    while i + run < len(words) and words[earlier + run] == words[i + run] and run < LOOP_RUN:
        run += 1
    return run >= LOOP_RUN or (i + run == len(words) and run >= i - earlier)

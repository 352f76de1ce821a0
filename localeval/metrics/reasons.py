"""A judge's reason without its loops: pure text, no I/O.

Small judges decoding greedily fall into loops inside their reasons ("a perfect 3.71, and the score
is a perfect 3.71, and the score is a perfect 3.71…") until the length limit cuts them off. A reason
is for a person, never for the score, so a loop is cut where it starts repeating, and the result
says it was (``details["reason_loop_cut"]``: how many characters were left out): never silently.

A loop is a run of words that comes back: the text is cut just before the first place where the
:data:`LOOP_WORDS` words starting there already appeared earlier in the reason. Phrases of fewer
words repeat in ordinary prose ("the answer", "of the"), which is why the window is that long.
"""

from __future__ import annotations

import re

#: How many consecutive words must come back for a repeat to count as a loop.
LOOP_WORDS = 6
_WORD = re.compile(r"\w+", re.UNICODE)


def cut_loop(text: str, window: int = LOOP_WORDS) -> tuple[str, int]:
    """``text`` up to the first repeat of ``window`` consecutive words, and how many characters were cut.

    Words compare case-insensitively, by letters and digits only; nothing is cut when no run of
    ``window`` words comes back. The kept text ends at a word's end, trailing punctuation
    and white space trimmed, with an ellipsis to show the cut.
    """
    words = [(m.group().lower(), m.start(), m.end()) for m in _WORD.finditer(text)]
    seen: set[tuple[str, ...]] = set()
    for i in range(len(words) - window + 1):
        gram = tuple(w for w, _, _ in words[i: i + window])
        if gram in seen:
            end = words[i - 1][2] if i > 0 else 0
            kept = text[:end].rstrip(" ,;:-–—\n\t")
            return (kept + "…" if kept else text), (len(text) - end if kept else 0)
        seen.add(gram)
    return text, 0

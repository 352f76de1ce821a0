"""The benchmark's test cases: news articles and their summaries from QAGS (CNN/DailyMail).

Each record of ``qags_cnndm.json`` (in ``$ALIGNMENT_DATA``) gives one case, the same
shape for every metric so that every system judges the same text:

* ``input`` = the article (G-Eval's "source document"; for answer relevancy, the
  statements of the summary are judged on whether they address the article);
* ``actual_output`` = the summary (``system_output``);
* ``retrieval_context`` = the article's sentences in order, cut into
  :data:`CHUNKS` consecutive chunks of near-equal sentence counts (the article
  is one line, so there are no paragraphs to split on) — faithfulness judges
  the summary against them.

Stdlib only: the deepeval side reads the cases as JSON, never this module.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

#: UniEval's QAGS-CNN/DM set: $ALIGNMENT_DATA (a folder with the full sets), else the excerpt in tests/.
DATA = Path(os.environ.get("ALIGNMENT_DATA") or Path(__file__).resolve().parents[2] / "tests" / "data" / "alignment") / "qags_cnndm.json"
#: Chunks of retrieval context per article.
CHUNKS = 3

_SENTENCE_END = re.compile(r"(?<= [.!?]) (?=\S)")


def sentences(text: str) -> list[str]:
    """The sentences of a tokenized QAGS text (its full stops stand apart: "word . Next")."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def chunked(text: str, chunks: int = CHUNKS) -> list[str]:
    """``text``'s sentences, in order, cut into ``chunks`` consecutive groups of near-equal size."""
    parts = sentences(text)
    count = min(chunks, len(parts))
    bounds = [round(i * len(parts) / count) for i in range(count + 1)]
    return [" ".join(parts[bounds[i]:bounds[i + 1]]) for i in range(count)]


def load_cases(limit: int, data: Path = DATA) -> list[dict[str, Any]]:
    """The first ``limit`` records as cases (plain dicts, ready for JSON)."""
    records = json.loads(data.read_text())
    if limit > len(records):
        raise SystemExit(f"{data} has {len(records)} records; --cases {limit} asks for more")
    return [
        {
            "name": f"qags_cnndm-{r['doc_id']}",
            "input": r["source"],
            "actual_output": r["system_output"],
            "retrieval_context": chunked(r["source"]),
            "summary_sentences": len(sentences(r["system_output"])),
        }
        for r in records[:limit]
    ]

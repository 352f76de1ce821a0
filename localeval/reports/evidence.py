"""A metric result's evidence (``MetricResult.details``) as readable HTML.

Shapes are recognised, not metric kinds, so a new metric's evidence shows too:

* ``distribution`` (score token → probability): a bar chart, with the covered
  mass and the expected and most likely scores beside it (G-Eval);
* ``verdicts`` (a list of objects with a ``verdict``): a table, item → verdict,
  with ``counts`` as its caption (the RAG metrics);
* ``path`` (a list of objects): an ordered list of steps (DAG metrics);
* ``evaluation_steps`` (strings): an ordered list;
* scalars and short lists of scalars: a line of facts;
* anything else: a collapsed list or pretty JSON block under its key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any

from localeval.reports.svg import distribution_chart

#: Keys shown beside the distribution chart rather than as separate facts.
_DISTRIBUTION_KEYS = ("distribution", "covered_mass", "expected_score", "most_likely_score")
#: Verdict words coloured as good or bad; any other verdict is neutral.
_GOOD = frozenset({"yes", "agrees", "true", "pass", "passed", "supported", "unbiased", "not_toxic", "safe",
                   "kept", "in_role", "relevant", "satisfied"})
_BAD = frozenset({"no", "contradicts", "false", "fail", "failed", "unsupported", "biased", "toxic", "leaks",
                  "forgot", "contradicted", "out_of_role", "irrelevant", "unsatisfied"})
#: The keys of a path step shown first, in this order; the rest follow as facts.
_STEP_KEYS = ("node_id", "node", "id", "kind", "criterion", "verdict", "output", "score")
#: A list of at most this many scalars is a fact, not a block.
_SHORT_LIST = 12


def render_evidence(details: Mapping[str, Any]) -> str:
    """The evidence as HTML: charts, tables and lists first, then facts, then the rest."""
    rest = dict(details)
    blocks: list[str] = []
    dist = rest.get("distribution")
    if isinstance(dist, Mapping) and dist and _numbers(dist.values()):
        blocks.append(_distribution({k: rest.pop(k) for k in _DISTRIBUTION_KEYS if k in rest}))
    if _objects(rest.get("verdicts")):
        blocks.append(_verdicts(rest.pop("verdicts"), rest.pop("counts", None)))
    if _objects(rest.get("path")):
        blocks.append(_path(rest.pop("path")))
    if _strings(rest.get("evaluation_steps")):
        source = rest.pop("steps_source", None)
        title = "evaluation steps" + (f" ({source})" if isinstance(source, str) else "")
        blocks.append(_block(title, _list("ol", rest.pop("evaluation_steps"))))
    facts = {k: v for k, v in rest.items() if _is_fact(v)}
    others = [_other(k, v) for k, v in rest.items() if k not in facts]
    head = [_facts(facts)] if facts else []
    return "".join(head + blocks + others)


def _distribution(evidence: dict[str, Any]) -> str:
    dist = evidence["distribution"]
    expected = evidence.get("expected_score")
    marker = float(expected) if isinstance(expected, (int, float)) and not isinstance(expected, bool) else None
    facts = {
        "expected score": evidence.get("expected_score"),
        "most likely": evidence.get("most_likely_score"),
        "covered mass": _percent(evidence.get("covered_mass")),
    }
    caption = _facts({k: v for k, v in facts.items() if v is not None})
    return (
        '<div class="block distribution"><h5>score distribution</h5>'
        f'<div class="chart-row">{distribution_chart({str(k): float(v) for k, v in dist.items()}, marker)}'
        f"{caption}</div></div>"
    )


def _verdicts(items: list[Mapping[str, Any]], counts: Any) -> str:
    columns = list(dict.fromkeys(k for item in items for k in item if k != "verdict")) + ["verdict"]
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    rows = []
    for item in items:
        cells = "".join(f"<td>{_value(item.get(c))}</td>" for c in columns[:-1])
        verdict = item.get("verdict")
        rows.append(f'<tr>{cells}<td class="verdict {tone(verdict)}">{_value(verdict)}</td></tr>')
    caption = ""
    if isinstance(counts, Mapping):
        caption = "<caption>" + escape(", ".join(f"{k}: {v}" for k, v in counts.items())) + "</caption>"
    return (
        f'<div class="block"><h5>verdicts ({len(items)})</h5><table class="verdicts">{caption}'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _path(steps: list[Mapping[str, Any]]) -> str:
    items = []
    for step in steps:
        shown = [k for k in _STEP_KEYS if k in step]
        parts = [
            f'<span class="step-key">{escape(k)}</span> '
            f'<span class="step-value {tone(step[k]) if k == "verdict" else ""}">{_value(step[k])}</span>'
            for k in shown
        ]
        extra = {k: v for k, v in step.items() if k not in shown}
        items.append(f"<li>{' '.join(parts)}{_facts(extra) if extra else ''}</li>")
    return f'<div class="block"><h5>path ({len(steps)} steps)</h5><ol class="path">{"".join(items)}</ol></div>'


def _other(key: str, value: Any) -> str:
    if _strings(value):
        body = _list("ul", value)
    else:
        body = f'<pre class="json">{escape(json.dumps(value, indent=2, ensure_ascii=False, default=str))}</pre>'
    size = f" ({len(value)})" if isinstance(value, (list, dict)) else ""
    return f'<details class="block other"><summary>{escape(key)}{size}</summary>{body}</details>'


def _facts(facts: Mapping[str, Any]) -> str:
    items = "".join(f"<div><dt>{escape(str(k))}</dt><dd>{_value(v)}</dd></div>" for k, v in facts.items())
    return f'<dl class="facts">{items}</dl>'


def _block(title: str, body: str) -> str:
    return f'<div class="block"><h5>{escape(title)}</h5>{body}</div>'


def _list(tag: str, items: list[str]) -> str:
    return f"<{tag}>" + "".join(f"<li>{escape(s)}</li>" for s in items) + f"</{tag}>"


def _value(value: Any) -> str:
    """A value as short escaped text: floats to 4 significant digits, the rest as JSON."""
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, float):
        return f'<span title="{value!r}">{value:.4g}</span>'
    if isinstance(value, bool) or value is None:
        return escape(json.dumps(value))
    if isinstance(value, list) and all(_is_scalar(v) for v in value):
        return ", ".join(_value(v) for v in value) or "[]"
    if isinstance(value, Mapping) and all(_is_scalar(v) for v in value.values()):
        return ", ".join(f"{escape(str(k))}: {_value(v)}" for k, v in value.items()) or "{}"
    return escape(json.dumps(value, ensure_ascii=False, default=str))


def tone(verdict: Any) -> str:
    """The CSS class of a verdict word: ``good``, ``bad`` or ``neutral``."""
    word = str(verdict).strip().lower()
    return "good" if word in _GOOD else "bad" if word in _BAD else "neutral"


def _percent(value: Any) -> str | None:
    return f"{value:.1%}" if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _is_fact(value: Any) -> bool:
    if _is_scalar(value):
        return not isinstance(value, str) or len(value) <= 200
    if isinstance(value, list):
        return len(value) <= _SHORT_LIST and all(_is_scalar(v) and not isinstance(v, str) for v in value)
    return isinstance(value, Mapping) and len(value) <= _SHORT_LIST and all(
        _is_scalar(v) and not isinstance(v, str) for v in value.values()
    )


def _numbers(values: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _objects(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)

"""Small inline SVG charts for the HTML report: a score histogram and a score distribution.

Drawn as text here, so the report needs no charting library and no network.
Every label and tooltip goes through :func:`html.escape`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

#: Bins of the score histogram over [0, 1].
BINS = 10


def bin_counts(scores: Sequence[float], bins: int = BINS) -> list[int]:
    """How many scores fall in each of ``bins`` equal bins over [0, 1]; 1.0 is in the last."""
    counts = [0] * bins
    for score in scores:
        counts[min(int(score * bins), bins - 1)] += 1
    return counts


def histogram(scores: Sequence[float], threshold: float, *, width: int = 220, height: int = 64) -> str:
    """A histogram of ``scores`` in 10 bins over [0, 1], the threshold a dashed line."""
    counts = bin_counts(scores)
    top = max(counts) or 1
    plot = height - 14  # room for the axis labels
    step = width / len(counts)
    bars = []
    for i, count in enumerate(counts):
        h = plot * count / top
        low, high = i / len(counts), (i + 1) / len(counts)
        tip = f"{low:.1f}–{high:.1f}: {count} case{'s' * (count != 1)}"
        bars.append(
            f'<rect class="bar" x="{i * step + 1:.1f}" y="{plot - h:.1f}" width="{step - 2:.1f}" '
            f'height="{h:.1f}"><title>{escape(tip)}</title></rect>'
        )
        if count:
            bars.append(f'<text class="count" x="{(i + 0.5) * step:.1f}" y="{max(plot - h - 2, 8):.1f}">{count}</text>')
    x = min(max(threshold * width, 1), width - 1)
    label = escape(f"threshold {threshold:g}")
    ends = [(0, "start", "0"), (width, "end", "1")]
    ticks = "".join(  # the end labels, unless the threshold's label would cover one
        f'<text class="tick {anchor}" x="{at}" y="{height - 2}">{text}</text>'
        for at, anchor, text in ends
        if abs(at - x) > 16
    )
    return _svg(
        "histogram", width, height, f"score histogram, {len(scores)} scores, threshold {threshold:g}",
        "".join(bars),
        f'<line class="axis" x1="0" y1="{plot}" x2="{width}" y2="{plot}"/>',
        f'<line class="threshold" x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{plot}"><title>{label}</title></line>',
        ticks,
        f'<text class="tick threshold-label {_anchor(x, width)}" x="{x:.1f}" y="{height - 2}">'
        f"{threshold:g}</text>",
    )


def distribution_chart(
    probabilities: Mapping[str, float], expected: float | None = None, *, width: int = 220, height: int = 64
) -> str:
    """Bars of a judge's probability over score tokens, low score first; ``expected`` a line.

    The line is drawn where the expected score falls between the bars of the
    lowest and the highest score, when the tokens are numbers.
    """
    items = list(probabilities.items())
    if not items:
        return ""
    plot = height - 14
    step = width / len(items)
    top = max(p for _, p in items) or 1.0
    label_every = 1 if len(items) <= 11 else max(1, len(items) // 5)
    parts = []
    for i, (token, p) in enumerate(items):
        h = plot * p / top
        parts.append(
            f'<rect class="bar" x="{i * step + 0.5:.1f}" y="{plot - h:.1f}" width="{max(step - 1, 1):.1f}" '
            f'height="{h:.1f}"><title>{escape(f"score {token}: {p:.1%}")}</title></rect>'
        )
        if i % label_every == 0 or i == len(items) - 1:
            parts.append(f'<text class="tick" x="{(i + 0.5) * step:.1f}" y="{height - 2}">{escape(token)}</text>')
    x = _position(expected, [token for token, _ in items], step)
    if x is not None:
        tip = escape(f"expected score {expected:.3g}")
        parts.append(f'<line class="expected" x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{plot}"><title>{tip}</title></line>')
    return _svg("distribution", width, height, "the judge's probability of each score", "".join(parts),
                f'<line class="axis" x1="0" y1="{plot}" x2="{width}" y2="{plot}"/>')


def _position(value: float | None, tokens: list[str], step: float) -> float | None:
    """Where ``value`` falls on bars labelled by ``tokens`` (ascending numbers), or None."""
    try:
        low, high = float(tokens[0]), float(tokens[-1])
    except ValueError:
        return None
    if value is None or high <= low or not low <= value <= high:
        return None
    return step / 2 + (value - low) / (high - low) * step * (len(tokens) - 1)


def _anchor(x: float, width: int) -> str:
    return "start" if x < 8 else "end" if x > width - 8 else "middle"


def _svg(kind: str, width: int, height: int, label: str, *body: str) -> str:
    # No xmlns: inline SVG in HTML needs none, and the page must name no URL at all.
    return (
        f'<svg class="chart {kind}" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(label)}">{"".join(body)}</svg>'
    )

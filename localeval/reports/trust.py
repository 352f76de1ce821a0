"""How far to trust a run's judges, in words: the lines the terminal, the HTML report and pytest show.

The run's ``trust`` (:class:`~localeval.data.results.JudgeTrust`, one per judge, read from the
judges' stored checks) becomes lines with a level: ``alarm`` (the judge is at chance on a family
the run uses), ``warn`` (never checked there), ``ok`` (checked, with what the check measured).
A run that asked a judge always gets at least one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from localeval.data.results import JudgeTrust

Level = Literal["alarm", "warn", "ok"]


def share(value: float | None) -> str:
    """0.875 -> '88%'; None -> '-'."""
    return "-" if value is None else f"{value:.0%}"


def trust_lines(trust: Sequence[JudgeTrust]) -> list[tuple[Level, str]]:
    """(level, text) lines saying how far to trust each judge of a run; never nothing for a judged run."""
    lines: list[tuple[Level, str]] = []
    for judge in trust:
        who = f"judge {judge.judge} ({judge.model})"
        whose = " (localeval's shipped check of this model file)" if judge.shipped_check else ""
        if judge.at_chance:
            lines.append(("alarm", f"{who} is AT CHANCE on {', '.join(judge.at_chance)}: it ordered fewer than "
                                   f"75% of the planted pairs there, so its verdicts on those metrics mean little{whose}"))
        for f in judge.families:
            if f.other_reading is not None:
                hint = f.other_reading
                lines.append(("warn", f"{who} on {f.family}: read {hint.verdict_reading}, its verdicts ordered "
                                      f"{share(hint.ordered)} of {hint.pairs} planted pairs: set verdict_reading = "
                                      f'"{hint.verdict_reading}" on {", ".join(f.metrics)}, or "checked" to take '
                                      "the better reading of each family"))
        if judge.unchecked:
            lines.append(("warn", f"{who} has not been checked on {', '.join(judge.unchecked)}: "
                                  f"check it with `{judge.check_command}`"))
        if judge.outdated:
            lines.append(("warn", f"{who} was checked on {', '.join(judge.outdated)} with prompts or scoring that "
                                  f"have changed since, so that check no longer speaks for them: check it again with "
                                  f"`{judge.check_command}`"))
        if judge.markup:
            lines.append(("warn", f"{who}: case text may act as chat markup: {judge.markup}"))
        if judge.uncovered:
            lines.append(("warn", f"{who} on {', '.join(judge.uncovered)}: no judge check covers this kind of "
                                  "metric, so nothing has measured its verdicts there"))
        for f in judge.families:
            if f.checked and not f.at_chance:
                lines.append(("ok", f"{who} on {f.family}: ordered {share(f.ordered)} of {f.pairs} planted pairs, "
                                    f"failed {f.bad_failed} of {f.pairs} planted-bad answers ({judge.checked_at}){whose}"))
    return lines



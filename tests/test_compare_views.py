"""What a comparison looks like: the terminal (on a terminal and piped) and the HTML page's markup.
The page in a real browser is tests/test_compare_browser.py."""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser

from rich.console import Console
from test_compare import FILE_1, FILE_2, STEADY_FALL, UNNAMED, Cell, run, scores

from localeval.reports import compare, comparison_html, print_comparison
from localeval.reports.compare import Comparison
from localeval.reports.terminal import diff_lines
from localeval.reports.textdiff import word_diff

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def printed(comparison: Comparison, width: int = 220) -> str:
    console = Console(record=True, width=width, color_system=None)
    print_comparison(console, comparison)
    return console.export_text()


# -- the terminal --------------------------------------------------------------------------------


def test_the_terminal_shows_changes_diffs_verdicts_and_a_summary_line() -> None:
    rows: list[tuple[str | None, dict[str, Cell]]] = [("x", {"m": 0.75}), ("y", {"m": 0.25}), ("z", {"m": 0.5})]
    a = run("a", rows, outputs=["Paris is the capital.", "Four.", "Blue."])
    b = run("b", [("x", {"m": 0.25}), ("y", {"m": 0.75}), ("w", {"m": 0.5})],
            outputs=["Lyon is the capital.", "Four.", "Green."])
    text = printed(compare(a, b))
    for expected in ("pass → fail", "fail → pass", "-0.500", "+0.500", "Per metric", "McNemar p",
                     "Outputs that changed (1): [-removed-] {+added+}", "  [-Paris-]{+Lyon+} is the capital.",
                     "m: no difference the data can show (2 cases scored in both runs: too few for an interval;",
                     "Cases only in A (1): z", "Cases only in B (1): w"):
        assert expected in text, expected
    assert text.strip().endswith(
        "2 cases matched by name: 1 output changed, 1 regression, 1 fix, 1 case only in A, 1 case only in B."
    )


def test_rewritten_outputs_with_unchanged_scores_are_not_nothing() -> None:
    rows: list[tuple[str | None, dict[str, Cell]]] = [("dose", {"m": 1.0})]
    text = printed(compare(run("v1", rows, outputs=["Take two pills a day."]),
                           run("v2", rows, outputs=["Take twenty pills at once."])))
    assert "No changes." not in text and "nothing changed" not in text
    assert "  Take [-two-]{+twenty+} pills [-a day-]{+at once+}." in text
    assert text.strip().endswith("1 case matched by name: 1 output changed.")


def test_without_any_change_the_terminal_says_so() -> None:
    a = run("a", [("x", {"m": 0.75})], outputs=["same"])
    text = printed(compare(a, a, tolerance=0.125))
    assert text.startswith("No changes.")
    assert "Outputs that changed" not in text
    assert text.strip().endswith("1 case matched by name, tolerance 0.125: nothing changed.")


def test_the_verdict_line_says_worse_with_its_numbers() -> None:
    comparison = compare(scores("a", STEADY_FALL[0]), scores("b", STEADY_FALL[1]))
    (m,) = comparison.metrics
    lines = printed(comparison).splitlines()
    assert f"m: worse ({m.reason()})" in lines
    row = next(line for line in lines if line.startswith("│ m "))
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    assert cells[:5] == ["m", "20", "0.900", "0.870", "-0.030"]
    assert cells[6:] == ["100%", "100%", "0", "0", "1", "worse"]


def test_a_multi_line_diff_keeps_its_lines_and_shows_whitespace_changes_as_escapes() -> None:
    lines = diff_lines(word_diff("one\ntwo\nthree", "one\n2\nthree\nfour"))
    assert lines == ["one", "[red][-two-][/][green]{+2+}[/]", "three", "[green]{+four+}[/]"]
    assert diff_lines(word_diff("a b", "a\nb")) == ["a[red][- -][/][green]{+\\n+}[/]b"]


def test_the_runs_dataset_warning_and_summary_are_the_last_two_lines() -> None:
    a = run("a", UNNAMED, FILE_1)
    b = run("b", [*UNNAMED, (None, {"m": 1.0})], FILE_2)
    lines = printed(compare(a, b)).splitlines()
    assert lines[-2] == (
        f"Warning: the runs judged different datasets (A: 2 cases of cases.jsonl, sha256 {'1' * 64}; "
        f"B: 3 cases of cases-v2.jsonl, sha256 {'2' * 64}); each row compares the cases at the same position."
    )
    assert lines[-1] == "2 cases matched by index: 1 case only in B."


def test_outside_a_terminal_tables_are_as_wide_as_their_values() -> None:
    """`localeval compare A B | cat`: rich assumes 80 columns there, and used to cut "exact_match" to "exac…"."""
    metrics: dict[str, Cell] = {"exact_match": 0.75, "answer_relevancy (logprobs)": 0.125, "contextual_precision": 0.5}
    moved: dict[str, Cell] = {"exact_match": 0.25, "answer_relevancy (logprobs)": 0.3125, "contextual_precision": 0.5}
    a = run("20261101-aaaaaaaaaaaa", [("a case with a fairly long name", metrics)])
    b = run("20261101-bbbbbbbbbbbb", [("a case with a fairly long name", moved)])
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)  # what a pipe gets
    assert not console.is_terminal
    print_comparison(console, compare(a, b))
    text = out.getvalue()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) > 80  # the tables did not fit 80 columns
    row = next(line for line in text.splitlines() if "answer_relevancy (logprobs)" in line and "score moved" in line)
    assert "a case with a fairly long name" in row and "+0.188" in row
    summary = next(line for line in text.splitlines() if line.startswith("│ exact_match"))
    cells = [cell.strip() for cell in summary.split("│")[1:-1]]
    assert cells == ["exact_match", "1", "0.750", "0.250", "-0.500", "-", "100%", "0%", "1", "0", "1",
                     "no difference the data can show"]


def test_in_a_terminal_tables_still_fit_its_width() -> None:
    metrics: dict[str, Cell] = {"exact_match": 0.75, "answer_relevancy (logprobs)": 0.125, "contextual_precision": 0.5}
    a = run("a", [("x", metrics)])
    out = io.StringIO()
    console = Console(file=out, width=60, force_terminal=True, color_system=None)
    print_comparison(console, compare(a, run("b", [("x", {**metrics, "exact_match": 0.25})])))
    tables = [line for line in out.getvalue().splitlines() if line[:1] in "┏┃┡│└"]
    assert tables and max(len(line) for line in tables) <= 60


def test_the_terminal_escapes_markup_in_an_output() -> None:
    rows: list[tuple[str | None, dict[str, Cell]]] = [("x", {"m": 1.0})]
    text = printed(compare(run("a", rows, outputs=["plain"]), run("b", rows, outputs=["[bold]loud[/] \x1b[2J"])))
    assert "{+[bold]loud[/] \\x1b[2J+}" in text and "\x1b" not in text


# -- the HTML page -------------------------------------------------------------------------------


class Tags(HTMLParser):
    """Every start tag of a page, and its text outside tags."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    return tags


def hostile_comparison() -> Comparison:
    rows: list[tuple[str | None, dict[str, Cell]]] = [(f"case {HOSTILE}", {f"m {HOSTILE}": 0.9}), ("same", {f"m {HOSTILE}": 0.9})]
    a = run(f"run {HOSTILE}", rows, FILE_1, outputs=["Take two pills a day.", "ok"])
    b = run("b", [(f"case {HOSTILE}", {f"m {HOSTILE}": 0.2}), ("same", {f"m {HOSTILE}": 0.9})], FILE_2,
            outputs=[f"Take twenty pills at once. {HOSTILE}", "ok"])
    return compare(a, b)


def test_the_page_is_self_contained_and_its_text_from_data_stays_text() -> None:
    page = comparison_html(hostile_comparison())
    tags = parsed(page)
    assert "script" not in tags.tags and "img" not in tags.tags  # no script at all; none from the data
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", page)  # nothing loaded from a URL
    assert "<link" not in page and "@import" not in page
    text = "".join(tags.text)
    assert f"case {HOSTILE}" in text and HOSTILE in text  # shown, as text


def test_the_page_shows_the_verdict_the_numbers_and_the_diff_with_del_and_ins() -> None:
    comparison = hostile_comparison()
    page = comparison_html(comparison)
    (m,) = comparison.metrics
    assert '<p class="verdict none">no difference the data can show</p>' in page  # one case: no interval
    assert "0.900 → 0.550" in page and "100% → 50%" in page and "1 pass → fail" in page
    assert "Take <del>two</del><ins>twenty</ins> pills <del>a day</del><ins>at once</ins>.<ins> &lt;script&gt;" in page
    assert page.count('<article class="compared-case"') == 1  # "same" did not change
    assert '<details class="names unchanged"><summary>1 unchanged cases</summary><ul><li>same</li>' in page
    assert "Warning: the runs judged different datasets" in page
    assert m.reason() in page


def test_a_page_without_changes_says_so() -> None:
    a = run("a", [("x", {"m": 0.75})], outputs=["same"])
    page = comparison_html(compare(a, a))
    assert "No case changed: every output and every result is as it was." in page
    assert "compared-case" not in page.split("</style>")[1]


def test_the_page_names_one_dataset_once_and_two_datasets_each() -> None:
    same = run("a", [("x", {"m": 0.5})], FILE_1)
    page = comparison_html(compare(same, same))
    assert f"<dt>dataset</dt><dd>cases.jsonl</dd></div><div><dt>sha256</dt><dd>{'1' * 64}</dd>" in page
    other = run("b", [("x", {"m": 0.5})], FILE_2)
    page = comparison_html(compare(same, other))
    assert "<dt>dataset A</dt><dd>cases.jsonl</dd>" in page and "<dt>dataset B</dt><dd>cases-v2.jsonl</dd>" in page

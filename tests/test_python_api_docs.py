"""The walkthrough of docs/python-api.md runs as a notebook in a real Jupyter kernel: the notebook
examples/notebook/walkthrough.py writes from the page (its ```python blocks as code cells, in order),
run in a folder of its own with the CLI's cache and runs there too (tests/kernel.py). What the page
says happens, happens, and each evaluate() shows its progress as a notebook shows it: one display,
updated in place, ending at every result done; with progress off, none.

The fast tests put a stand-in judge (tests/standin_judge.py) where the default judge's model would
load, in the kernel; the slow one loads the real default judge (SmolLM2 in the tests: LOCALEVAL_MODEL)."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat
import pytest
from kernel import Message, run_notebook
from nbformat import NotebookNode

from localeval.reports.run_index import list_runs

TESTS = Path(__file__).resolve().parent
PAGE = TESTS.parent / "docs" / "python-api.md"
#: Results each evaluate() of the walkthrough judges: 3 cases, 2 metrics.
RESULTS = 6
#: The cell, run before the page's, that puts the stand-in judge where the default judge would load.
STAND_IN = f"import sys\nsys.path.insert(0, {str(TESTS)!r})\nimport standin_judge\nstandin_judge.install()"
#: The cell, run after the page's, that tells the test what the page's code left.
FACTS = """import json
import sys

print(json.dumps({
    "model_calls": [first.stats.model_calls, rerun.stats.model_calls, after.stats.model_calls,
                    report.stats.model_calls],
    "rerun_cache_hits": rerun.stats.cache_hits,
    "fixes": {change.metric: change.fixes for change in compare(first, after).metrics},
    "judge_model": first.backend.model,
    "loaded": [[t.kind, getattr(t, "model", None)] for t in getattr(sys.modules.get("standin_judge"), "LOADED", [])],
}))"""


def examples_module(name: str) -> ModuleType:
    """examples/notebook/<name>.py, imported."""
    spec = importlib.util.spec_from_file_location(name, TESTS.parent / "examples" / "notebook" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def walkthrough() -> NotebookNode:
    """The page's walkthrough as the notebook a user opens."""
    nb: NotebookNode = examples_module("walkthrough").notebook(PAGE.read_text(encoding="utf-8"))
    nbformat.validate(nb)
    return nb


def run_cells(folder: Path, monkeypatch: pytest.MonkeyPatch, cells: list[NotebookNode]) -> list[list[Message]]:
    """``cells`` run in a kernel started in ``folder``, with the CLI's cache and runs there; each
    one's output messages. None is an error, went to stderr (which a notebook shows as an error) or
    holds a terminal's control codes (a spinner, colours)."""
    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(folder / "cache"))
    monkeypatch.setenv("LOCALEVAL_RUNS_DIR", str(folder / "runs"))
    sent = run_notebook(nbformat.v4.new_notebook(cells=cells), folder)
    assert not [m for messages in sent for m in messages
                if m.type == "error" or m.content.get("name") == "stderr" or "\x1b" in m.text]
    return sent


@dataclass(frozen=True)
class Ran:
    """The walkthrough run: each of the page's code cells with its output messages, and what :data:`FACTS` printed."""

    cells: list[tuple[str, list[Message]]]
    facts: dict[str, Any]


def run_walkthrough(folder: Path, monkeypatch: pytest.MonkeyPatch, setup: str = "") -> Ran:
    """The page's notebook run after ``setup`` and before :data:`FACTS`."""
    page = walkthrough().cells
    cells = [nbformat.v4.new_code_cell(setup), *page, nbformat.v4.new_code_cell(FACTS)]
    sent = run_cells(folder, monkeypatch, cells)
    code = [(cell.source, messages) for cell, messages in zip(page, sent[1:-1]) if cell.cell_type == "code"]
    return Ran(code, json.loads(printed(sent[-1])))


def printed(messages: list[Message]) -> str:
    """What a cell printed."""
    return "".join(m.text for m in messages if m.type == "stream")


def progress_of(messages: list[Message]) -> list[Message]:
    """A cell's progress: the displays it showed and updated."""
    return [m for m in messages if m.type in {"display_data", "update_display_data"}]


def check_progress(messages: list[Message], total: int) -> None:
    """One display, shown at the start and updated in place (through its display id) to every result done."""
    shown = progress_of(messages)
    assert [m.type for m in shown] == ["display_data"] + ["update_display_data"] * (len(shown) - 1)
    assert len(shown) >= 2 and shown[0].display_id and {m.display_id for m in shown} == {shown[0].display_id}
    assert shown[0].text.startswith(f"judging: 0/{total} (0%)")
    assert shown[-1].text.startswith(f"judging: {total}/{total} (100%)")
    html = shown[-1].content["data"]["text/html"]
    assert html.startswith(f'<progress value="{total}" max="{total}"></progress> <code>judging: {total}/{total}')


def check_the_walkthrough(ran: Ran, folder: Path, calls_per_case: int) -> None:
    """What the page says happens, happened, and every evaluate() in it showed its progress."""
    assert len(ran.cells) >= 5  # a broken pattern would run nothing and pass
    first, rerun, after, aevaluated = ran.facts["model_calls"]
    assert first == 3 * calls_per_case
    assert (rerun, ran.facts["rerun_cache_hits"]) == (0, first)
    assert after == calls_per_case  # only the fixed answer is judged again
    assert aevaluated == 0  # aevaluate: the same cache
    assert ran.facts["fixes"]["exact_match"] == 1
    assert (folder / "baseline.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    listed = list_runs(folder / "runs")  # what `localeval runs` lists
    assert sorted(str(e.name) for e in listed) == ["None", "None", "baseline", "fixed"]  # started within a second
    assert {e.status for e in listed} == {"finished"}
    assert all((Path(e.folder) / "report.html").is_file() for e in listed)
    evaluating = [messages for source, messages in ran.cells if "evaluate(" in source]
    assert len(evaluating) == 4
    for messages in evaluating:
        check_progress(messages, RESULTS)
    assert [progress_of(messages) for source, messages in ran.cells if "evaluate(" not in source] == [[]] * (
        len(ran.cells) - 4)


def test_the_walkthrough_runs_as_a_notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALEVAL_HOME", str(tmp_path / "home"))
    ran = run_walkthrough(tmp_path, monkeypatch, STAND_IN)
    assert ran.facts["loaded"] == [["llama.cpp", None]] * 4  # the default judge, once per evaluate()
    check_the_walkthrough(ran, tmp_path, calls_per_case=2)  # G-Eval's score, then its reason
    run_line, summary = printed(ran.cells[1][1]).splitlines()[:2]  # the first evaluate()'s cell
    baseline = next(e for e in list_runs(tmp_path / "runs") if e.name == "baseline")
    assert run_line == f"Run {baseline.run_id}: {baseline.folder}"  # in the cell's output, not its stderr
    assert summary.startswith("exact_match 2 1 ")


def test_with_progress_off_a_notebook_shows_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALEVAL_HOME", str(tmp_path / "home"))
    cases = next(cell for cell in walkthrough().cells if cell.cell_type == "code")  # the page's cases and metrics
    quiet = nbformat.v4.new_code_cell("from localeval import evaluate\n\n"
                                      "first = evaluate(cases, metrics, progress=False)\n"
                                      "for summary in first.summary:\n    print(summary.metric, summary.passed)")
    sent = run_cells(tmp_path, monkeypatch, [nbformat.v4.new_code_cell(STAND_IN), cases, quiet])
    assert {(m.type, m.content.get("name")) for m in sent[2]} == {("stream", "stdout")}  # what the cell printed, alone
    assert printed(sent[2]).startswith("exact_match 2\n")
    assert [e.status for e in list_runs(tmp_path / "runs")] == ["finished"]


@pytest.mark.model
def test_the_walkthrough_runs_with_the_real_default_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = run_walkthrough(tmp_path, monkeypatch)
    check_the_walkthrough(ran, tmp_path, calls_per_case=2)
    assert ran.facts["judge_model"] == "smollm2-135m-instruct"

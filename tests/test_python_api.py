"""``localeval.evaluate`` as good as ``localeval run``: the CLI's cache, a run folder the CLI reads, resume,
progress, the async twin, and bad input in one line before any model loads."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from pathlib import Path
from typing import Any

import pytest
from command_line import localeval
from scripted import ScriptedBackend

from localeval import GEval, TestCase, aevaluate, evaluate, runs
from localeval.api import evaluation
from localeval.backends.base import DistributionReply, DistributionRequest
from localeval.cli.runs import load_report
from localeval.data.dataset import Dataset
from localeval.errors import ConfigError, InputError, ModelNotFound
from localeval.metrics import ExactMatch
from localeval.reports import REPORT_FILES, compare
from localeval.reports.run_index import list_runs
from localeval.run.journal import read_journal
from localeval.run.runner import RunInterrupted

#: p = .1 .2 .3 .2 .2 on the scores 1..5: 0.55 on [0, 1].
SCORES = {str(score): math.log(p) for score, p in zip(range(1, 6), (0.1, 0.2, 0.3, 0.2, 0.2), strict=True)}


def cases(outputs: tuple[str, ...] = ("Paris", "Lyon", "Paris.")) -> list[TestCase]:
    return [TestCase(name=f"case-{i}", input="What is the capital of France?", actual_output=output,
                     expected_output="Paris") for i, output in enumerate(outputs)]


METRICS = [ExactMatch(), GEval(name="correct", evaluation_steps=["Compare the answer with the expected one."],
                               include_reason=False)]


def judge(calls: int = 3) -> ScriptedBackend:
    """A judge with ``calls`` G-Eval scores to give (one per case); asked once more, it errors."""
    return ScriptedBackend(logprobs=[SCORES] * calls)


@pytest.fixture(autouse=True)
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI's folders, for this test alone: its cache and its runs."""
    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LOCALEVAL_RUNS_DIR", str(tmp_path / "runs"))
    return tmp_path


def scores(report: object) -> list[list[float | None]]:
    return [[r.score for r in c.results] for c in report.cases]  # type: ignore[attr-defined]


# --- the cache ---------------------------------------------------------------------------------


def test_a_rerun_answers_from_the_cli_cache_with_no_model_call(homes: Path) -> None:
    first_judge, second_judge = judge(), judge(0)
    first = evaluate(cases(), METRICS, first_judge)
    second = evaluate(cases(), METRICS, second_judge)  # a judge with nothing to say: the cache answers
    assert (first.stats.model_calls, first.stats.cache_hits) == (3, 0)
    assert (second.stats.model_calls, second.stats.cache_hits) == (0, 3)
    assert second_judge.requests == [] and len(first_judge.requests) == 3
    assert scores(second) == scores(first) == [[1.0, 0.55], [0.0, 0.55], [0.0, 0.55]]
    assert (homes / "cache" / "cache.db").is_file()  # the CLI's folder (LOCALEVAL_CACHE_DIR)


def test_cache_false_asks_the_model_every_time() -> None:
    evaluate(cases(), METRICS, judge(), save=False)
    again = judge()
    report = evaluate(cases(), METRICS, again, cache=False, save=False)
    assert (report.stats.model_calls, report.stats.cache_hits, len(again.requests)) == (3, 0, 3)


# --- the run folder ----------------------------------------------------------------------------


def test_a_saved_run_is_listed_read_and_compared_as_a_cli_run_is(homes: Path) -> None:
    before = evaluate(cases(), METRICS, judge(), name="baseline", tags=["nightly"])
    after = evaluate(cases(("Paris", "Paris", "Paris.")), METRICS, judge(1), name="fixed")
    listed = list_runs(homes / "runs")  # what `localeval runs` and `view` read (newest first: to the second)
    assert sorted((e.name, e.run_id, e.status) for e in listed) == [("baseline", before.run_id, "finished"),
                                                                     ("fixed", after.run_id, "finished")]
    assert [e.run_id for e in runs()] == [e.run_id for e in listed]
    baseline = next(e for e in listed if e.name == "baseline")
    assert baseline.tags == ["nightly"] and baseline.judges == ["scripted-model"]
    folder = Path(baseline.folder)
    assert sorted(p.name for p in folder.iterdir()) == sorted(["journal.jsonl", *REPORT_FILES.values()])
    loaded = load_report(before.run_id, homes / "runs")  # as `localeval compare RUN_A RUN_B` reads a run
    assert loaded.model_dump() == before.model_dump()
    comparison = compare(loaded, load_report(after.run_id, homes / "runs"))
    assert [(m.metric, m.fixes, m.regressions) for m in comparison.metrics] == [("exact_match", 1, 0),
                                                                               ("correct", 0, 0)]


def test_the_cli_lists_a_python_run(homes: Path) -> None:
    report = evaluate(cases(), METRICS, judge(), name="from python")
    done = localeval("runs", "list", "--json", env={"LOCALEVAL_RUNS_DIR": str(homes / "runs")})
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [(r["run_id"], r["name"], r["status"]) for r in listed] == [(report.run_id, "from python", "finished")]


def test_save_false_leaves_no_run_and_run_dir_names_the_folder(homes: Path) -> None:
    evaluate(cases(), METRICS, judge(), save=False)
    assert not (homes / "runs").exists()
    report = evaluate(cases(), METRICS, judge(0), run_dir=homes / "mine")
    assert (homes / "mine" / "report.html").is_file() and not (homes / "runs").exists()
    assert json.loads((homes / "mine" / "report.json").read_text())["run_id"] == report.run_id


# --- resume ------------------------------------------------------------------------------------


class Stopping(ScriptedBackend):
    """A scripted judge that is Ctrl-C'd at its ``stop_at``-th score."""

    def __init__(self, stop_at: int) -> None:
        super().__init__(logprobs=[SCORES] * 10)
        self.stop_at = stop_at

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        if len(self.requests) + 1 == self.stop_at:
            raise KeyboardInterrupt
        return super().candidate_distribution(request)


def test_resume_judges_only_what_the_run_lacks(homes: Path) -> None:
    with pytest.raises(RunInterrupted) as stopped:
        evaluate(cases(), METRICS, Stopping(stop_at=3), cache=False)
    run_id = stopped.value.run_id
    journal = read_journal(homes / "runs" / run_id / "journal.jsonl")
    assert len([key for key in journal.results if key[1] == "correct"]) == 2
    rest = judge(1)
    report = evaluate(cases(), METRICS, rest, cache=False, resume=run_id)
    assert len(rest.requests) == 1  # the one score the journal lacks
    assert report.run_id == run_id and report.stats.resumed == len(journal.results)
    assert scores(report) == [[1.0, 0.55], [0.0, 0.55], [0.0, 0.55]]
    assert (homes / "runs" / run_id / "report.html").is_file()


@pytest.mark.parametrize(("change", "message"), [
    ({"dataset": cases(("Paris", "Lyon", "Rome"))}, "the cases differ from those run"),
    ({"metrics": METRICS[:1]}, "has metrics ['exact_match', 'correct'], this call ['exact_match']"),
    ({"metrics": [METRICS[0], METRICS[1].model_copy(update={"threshold": 0.9})]}, "options or the judges differ"),
    ({"name": "renamed"}, "name and tags are the resumed run's own"),
])
def test_a_resume_with_other_cases_metrics_or_judges_is_refused_in_one_line(change: dict[str, object],
                                                                             message: str) -> None:
    with pytest.raises(RunInterrupted) as stopped:
        evaluate(cases(), METRICS, Stopping(stop_at=2), cache=False)
    rest = judge(0)
    asked = {"dataset": cases(), "metrics": METRICS, **change}
    with pytest.raises(InputError) as refused:
        evaluate(asked.pop("dataset"), asked.pop("metrics"), rest, resume=stopped.value.run_id, **asked)  # type: ignore[arg-type]
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert rest.requests == []


def test_a_cli_run_is_resumed_by_the_cli_and_a_python_run_from_python(homes: Path, tmp_path: Path) -> None:
    data = tmp_path / "cases.jsonl"
    Dataset.from_cases(cases()).save(data)
    cli = localeval("run", str(data), "--metric", "exact_match", env={"LOCALEVAL_RUNS_DIR": str(homes / "runs")})
    assert cli.returncode in (0, 1), cli.stderr
    (cli_run,) = list_runs(homes / "runs")
    with pytest.raises(InputError, match="started by `localeval run`; resume it with: localeval run --resume"):
        evaluate(Dataset.load(data), [ExactMatch()], resume=cli_run.run_id)
    python_run = evaluate(Dataset.load(data), [ExactMatch()])
    refused = localeval("run", "--resume", python_run.run_id, env={"LOCALEVAL_RUNS_DIR": str(homes / "runs")})
    assert refused.returncode == 2
    assert f"was started from Python; resume it there, with localeval.evaluate(..., resume='{python_run.run_id}')" \
        in refused.stderr


# --- progress ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("terminal", "progress", "bar"), [
    (False, "auto", False), (True, "auto", True), (True, False, False), (True, True, True),
])
def test_a_bar_is_drawn_on_a_terminal_unless_progress_is_off(terminal: bool, progress: bool | str, bar: bool,
                                                             capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    if terminal:
        monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich takes stderr for a terminal
    report = evaluate(cases(), METRICS, judge(), progress=progress)  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert ("judging" in err and "6/6" in err) is bar
    assert (f"Run {report.run_id}: " in err) is bar
    if not bar:
        assert err == ""


def test_piped_with_progress_on_the_run_says_where_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    report = evaluate(cases(), METRICS, judge(), progress=True)
    err = capsys.readouterr().err
    assert err.startswith(f"Run {report.run_id}: ") and "\x1b" not in err  # no bar drawn, no control code


# --- async -------------------------------------------------------------------------------------


class Held(ScriptedBackend):
    """A scripted judge whose every score waits until the test lets it go (``go``); ``asked`` is set
    when one is waiting."""

    def __init__(self, calls: int) -> None:
        super().__init__(logprobs=[SCORES] * calls)
        self.asked, self.go = threading.Event(), threading.Event()

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        self.asked.set()
        assert self.go.wait(30), "the test never let the judge go"
        return super().candidate_distribution(request)


def test_aevaluate_leaves_the_event_loop_free_while_it_judges() -> None:
    held = Held(3)

    async def main() -> object:
        run = asyncio.create_task(aevaluate(cases(), METRICS, held, cache=False))
        await asyncio.to_thread(held.asked.wait, 30)  # a judge call is in flight: the loop still runs this
        held.go.set()
        return await run

    report = asyncio.run(main())
    assert scores(report) == [[1.0, 0.55], [0.0, 0.55], [0.0, 0.55]]


def test_cancelling_aevaluate_stops_after_the_call_in_flight_and_keeps_it(homes: Path) -> None:
    held = Held(3)

    async def main() -> None:
        run = asyncio.create_task(aevaluate(cases(), METRICS, held, cache=False, run_dir=homes / "run"))
        await asyncio.to_thread(held.asked.wait, 30)
        run.cancel()
        await asyncio.sleep(0)  # one turn of the loop: the cancellation reaches the run's task
        held.go.set()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())
    assert len(held.requests) == 1  # nothing started after the cancellation
    journal = read_journal(homes / "run" / "journal.jsonl")
    assert [metric for _, metric in journal.results] == ["correct"]  # the one in flight, journaled; no other
    assert not (homes / "run" / "report.json").exists()
    rest = judge(2)
    report = evaluate(cases(), METRICS, rest, cache=False, resume=homes / "run")
    assert len(rest.requests) == 2 and scores(report) == [[1.0, 0.55], [0.0, 0.55], [0.0, 0.55]]


def test_cancelling_aevaluate_while_its_judges_load_leaves_no_run_behind(
        homes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loading, loaded = threading.Event(), threading.Event()
    real_load = evaluation.load_judges

    def slow_load(*args: Any, **kwargs: Any) -> Any:  # a model that takes a while to load
        loading.set()
        assert loaded.wait(30), "the test never let the load finish"
        return real_load(*args, **kwargs)

    monkeypatch.setattr(evaluation, "load_judges", slow_load)
    held = Held(3)
    held.go.set()

    async def main() -> None:
        run = asyncio.create_task(aevaluate(cases(), METRICS, held, cache=False, run_dir=homes / "run"))
        await asyncio.to_thread(loading.wait, 30)
        run.cancel()
        await asyncio.sleep(0)
        loaded.set()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())
    assert held.requests == [] and not (homes / "run").exists()


# --- bad input ---------------------------------------------------------------------------------


def test_a_misspelt_model_is_one_line_with_a_guess_before_any_model_loads(homes: Path) -> None:
    with pytest.raises(ModelNotFound) as refused:  # this tier cannot import llama_cpp: nothing loaded
        evaluate(cases(), METRICS, "smollm2-135m-instrct")
    message = str(refused.value)
    assert "unknown model 'smollm2-135m-instrct' (did you mean 'smollm2-135m-instruct'?" in message
    assert "\n" not in message and not (homes / "runs").exists()


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: evaluate(cases(), METRICS, {"kind": "llama.cpp", "modle": "x"}), ConfigError,
     "judge: option 'modle' does not apply to the llama.cpp backend (did you mean 'model'?)"),
    (lambda: evaluate(cases(), METRICS, {"kind": "lama.cpp"}), ConfigError, "did you mean 'llama.cpp'?"),
    (lambda: evaluate(cases(), METRICS, judges={"strict": 3}), ConfigError,
     "judges.strict: expected a backend, a model's name or a table of backend options, not int"),
    (lambda: evaluate(cases(), METRICS, judge(), progress="yes"), ConfigError,
     "progress: expected True, False or 'auto', not 'yes'"),
    (lambda: evaluate(cases(), [GEval(criteria="c", judge="strict")], judge()), ConfigError,
     "metric 'geval': judge 'strict' is not given (judges=: none)"),
])
def test_bad_input_is_one_line_before_any_judge_call(call: object, error: type[Exception], message: str,
                                                     homes: Path) -> None:
    with pytest.raises(error) as refused:
        call()  # type: ignore[operator]
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert not (homes / "runs").exists()

"""`localeval arena RUN_A RUN_B` and arena datasets through the command line, in a subprocess."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from command_line import Project
from scripted import ScriptedBackend

from localeval.cli.arena import arena_exit_code
from localeval.cli.exits import EXIT_ERRORED, EXIT_FAILED, EXIT_OK
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.data.results import RunReport
from localeval.metrics import Arena
from localeval.metrics.arena import better_than_first
from localeval.run.runner import RunOptions, evaluate

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "arena"


def judged_run(data: Path, folder: Path, project: Project) -> Path:
    """A run of ``data`` with exact_match only (no judge), its folder."""
    done = project.localeval("run", str(data), "-c", str(EXAMPLE / "runs.toml"), "--run-dir", str(folder))
    assert done.returncode == EXIT_FAILED, done.stderr  # some answers are wrong in every version
    return folder


@pytest.mark.model
def test_two_runs_of_the_same_inputs_are_judged_against_each_other(tmp_path: Path, project: Project) -> None:
    v1 = judged_run(EXAMPLE / "v1.jsonl", tmp_path / "v1", project)
    v2 = judged_run(EXAMPLE / "v2.jsonl", tmp_path / "v2", project)
    done = project.localeval("arena", str(v2), str(v1 / "report.json"), "--names", "v2,v1",
                             "-c", str(EXAMPLE / "arena.toml"), "--run-dir", str(tmp_path / "arena"))
    report = json.loads((tmp_path / "arena" / "report.json").read_text())
    verdicts = {(p["a"], p["b"]): p["verdict"] for p in report["summary"][0]["details"]["pairs"]}
    # exit 1 only when v1, the other, is significantly better than v2, the first-named (a 135M judge, 4 cases)
    assert done.returncode == (EXIT_FAILED if verdicts[("v2", "v1")] == "v1 better" else EXIT_OK), done.stderr
    assert len(report["cases"]) == 4
    first = report["cases"][0]
    v1_outputs = [json.loads(line)["actual_output"] for line in (EXAMPLE / "v1.jsonl").read_text().splitlines()]
    v2_outputs = [json.loads(line)["actual_output"] for line in (EXAMPLE / "v2.jsonl").read_text().splitlines()]
    assert first["inputs"]["contestants"] == {"v2": v2_outputs[0], "v1": v1_outputs[0]}
    assert first["inputs"]["input"] == "What is the capital of Australia?"
    result = first["results"][0]
    assert result["error"] is None, result["error"]
    pair = result["details"]["pairs"][0]
    assert (pair["a"], pair["b"]) == ("v2", "v1")
    assert result["score"] == pytest.approx((pair["p_first"][0] + 1 - pair["p_first"][1]) / 2, abs=1e-12)
    assert all(order["covered_mass"] > 0.5 for order in pair["orders"])  # the judge writes a letter there
    assert result["reason"]  # include_reason: the judge's follow-up
    summary = report["summary"][0]["details"]
    assert {r["name"] for r in summary["ranking"]} == {"v1", "v2"}
    assert "Ranking: better_answer" in done.stdout and "mean P(first)" in done.stdout
    assert "Verdicts: better_answer" in done.stdout and verdicts[("v2", "v1")] in done.stdout
    cases_file = Path(report["dataset"]["path"])
    assert cases_file.parent == tmp_path / "runs" / "arena" and cases_file.is_file()
    # The arena is an ordinary run: again, everything comes from the cache.
    again = project.localeval("arena", str(v2), str(v1), "--names", "v2,v1", "-c", str(EXAMPLE / "arena.toml"),
                              "--run-dir", str(tmp_path / "again"))
    assert again.returncode == done.returncode, again.stderr
    assert json.loads((tmp_path / "again" / "report.json").read_text())["stats"]["model_calls"] == 0


def test_runs_of_different_inputs_are_refused_before_any_judge_call(tmp_path: Path, project: Project) -> None:
    other = tmp_path / "other.jsonl"
    lines = (EXAMPLE / "v2.jsonl").read_text().splitlines()
    lines[2] = lines[2].replace("Which planet in the solar system is the largest?", "Which planet is the hottest?")
    other.write_text("\n".join(lines) + "\n")
    v1 = judged_run(EXAMPLE / "v1.jsonl", tmp_path / "v1", project)
    changed = judged_run(other, tmp_path / "other", project)
    done = project.localeval("arena", str(v1), str(changed), "-c", str(EXAMPLE / "arena.toml"))
    assert done.returncode == 2, done.stderr
    assert "are of different datasets: case largest-planet (" in done.stderr
    assert "has a different input in each" in done.stderr
    assert not (tmp_path / "cache").exists()  # no judge was loaded, nothing was asked
    twice = project.localeval("arena", str(v1), str(v1 / "report.json"), "-c", str(EXAMPLE / "arena.toml"))
    assert twice.returncode == 2 and "is given twice" in twice.stderr
    rerun = judged_run(EXAMPLE / "v1.jsonl", tmp_path / "rerun", project)
    same = project.localeval("arena", str(v1), str(rerun), "-c", str(EXAMPLE / "arena.toml"))
    assert same.returncode == 2 and "judged the same file" in same.stderr and "their outputs are the same" in same.stderr


def test_an_arena_config_refuses_other_metrics_and_its_own_dataset(tmp_path: Path, project: Project) -> None:
    config = tmp_path / "arena.toml"
    config.write_text((EXAMPLE / "arena.toml").read_text() + '\n[[metrics]]\nmetric = "exact_match"\n')
    done = project.localeval("arena", "a", "b", "-c", str(config))
    assert done.returncode == 2
    assert "only arena metrics judge them, not exact_match (exact_match)" in done.stderr
    config.write_text('[dataset]\npath = "x.jsonl"\n' + (EXAMPLE / "arena.toml").read_text())
    done = project.localeval("arena", "a", "b", "-c", str(config))
    assert done.returncode == 2 and "the arena takes its cases from the runs" in done.stderr
    config.write_text((EXAMPLE / "arena.toml").read_text() + '\n[[targets]]\nname = "a"\n')
    done = project.localeval("arena", "a", "-c", str(config))
    assert done.returncode == 2 and "the arena judges outputs the runs hold; drop [target] and [[targets]]" in done.stderr


def test_a_case_with_one_contestant_stops_the_run_with_file_line_and_field(tmp_path: Path, project: Project) -> None:
    shutil.copy(EXAMPLE / "eval.toml", tmp_path / "eval.toml")
    lines = (EXAMPLE / "answers.jsonl").read_text().splitlines()
    lines[2] = json.dumps({"input": "Which planet is the largest?", "contestants": {"concise": "Jupiter."}})
    (tmp_path / "answers.jsonl").write_text("\n".join(lines) + "\n")
    done = project.localeval("run", "-c", str(tmp_path / "eval.toml"))
    assert done.returncode == 2
    assert f"{tmp_path / 'answers.jsonl'}:3: field 'contestants': " in done.stderr
    assert "at least two contestants" in done.stderr
    assert not (tmp_path / "cache").exists() and not (tmp_path / "runs").exists()  # before any judge call


def targets_report(folder: Path, run_id: str, answers: dict[str, list[str | None]]) -> Path:
    """A run's report.json in ``folder``: each target's answers (None: none) to the goldens "fr" and "sum"."""
    from localeval.backends.base import Fingerprint
    from localeval.data.results import CaseResult, RunReport, TargetRecord

    cases = [CaseResult(index=i, name=name, location=f"g.jsonl:{g + 1}", results=[], target=target,
                        inputs={"input": name} | ({"actual_output": out} if out else {}))
             for i, (g, name, target, out) in enumerate(
                 (g, name, t, outs[g]) for g, name in enumerate(["fr", "sum"]) for t, outs in answers.items())]
    records = [TargetRecord(name=t, fingerprint=Fingerprint(kind="x", model=t, runtime="x"), template_sha256="0")
               for t in answers]
    report = RunReport(run_id=run_id, created_at="now", localeval_version="0", cases=cases, summary=[],
                       targets=records)
    folder.mkdir(parents=True)
    report.save(folder / "report.json")
    return folder / "report.json"


def test_one_run_needs_two_targets_each_answering_every_golden(tmp_path: Path, project: Project) -> None:
    def saved(run_id: str, answers: dict[str, list[str | None]]) -> Path:
        return targets_report(tmp_path / run_id, run_id, answers)

    one = project.localeval("arena", str(saved("0000000000a1", {"a": ["Paris", "4"]})), "-c",
                            str(EXAMPLE / "arena.toml"))
    assert one.returncode == 2 and "run 0000000000a1 has 1 target(s) (a); the arena of one run compares" in one.stderr
    gap = saved("0000000000b2", {"a": ["Paris", "4"], "b": ["Lyon", None]})
    done = project.localeval("arena", str(gap), "-c", str(EXAMPLE / "arena.toml"))
    assert done.returncode == 2
    assert "run 0000000000b2, target b: case sum (g.jsonl:2) has no actual_output" in done.stderr
    named = project.localeval("arena", str(gap), "--names", "x,y", "-c", str(EXAMPLE / "arena.toml"))
    assert named.returncode == 2 and "one run's contestants are its targets" in named.stderr
    assert not (tmp_path / "cache").exists()  # no judge was loaded, nothing was asked


def test_a_report_whose_run_id_localeval_did_not_make_is_refused_before_any_file_is_written(
        tmp_path: Path, project: Project) -> None:
    """The cases file is named by the run ids: ``./../../x`` would put it outside the runs folder."""
    up = "../" * (len((project / "runs" / "arena").parts) - 1)  # from the arena's folder to the root
    escape = f"./{up}{str(tmp_path / 'escaped').lstrip('/')}"
    report = targets_report(tmp_path / "crafted", escape, {"a": ["Paris", "4"], "b": ["Lyon", "5"]})
    done = project.localeval("arena", str(report), "-c", str(EXAMPLE / "arena.toml"))
    assert done.returncode == 2
    assert done.stderr.strip() == (f"error: {report}: run_id {escape!r} is not a run id localeval makes "
                                   "(12 hexadecimal digits)")
    assert list(tmp_path.glob("escaped*")) == [] and not (project / "runs" / "arena").exists()
    good = targets_report(tmp_path / "good", "0123456789ab", {"a": ["Paris", "4"], "b": ["Lyon", "5"]})
    other = project.localeval("arena", str(good), str(report), "-c", str(EXAMPLE / "arena.toml"))
    assert other.returncode == 2 and other.stderr.startswith(f"error: {report}: run_id ")


def test_the_arena_takes_every_run_id_localeval_makes() -> None:
    from localeval.cli.arena import RUN_ID
    from localeval.run.runner import new_run_id

    assert all(RUN_ID.fullmatch(new_run_id()) for _ in range(1000))


def arena_run(preferences: list[tuple[float, float]]) -> RunReport:
    """An arena of new against old over one case per pair of P(first) readings, by a scripted judge."""
    cases = [TestCase(input=f"q{i}", contestants={"new": "1", "old": "2"}) for i in range(len(preferences))]
    judge = ScriptedBackend(logprobs=[{" A": math.log(p), " B": math.log(1 - p)} for pair in preferences for p in pair])
    metric = Arena(evaluation_steps=("Compare.",), include_reason=False)
    return evaluate(Dataset.from_cases(cases), [metric], judge, options=RunOptions(order="input"))


def test_the_arena_exits_1_only_when_another_contestant_is_significantly_better() -> None:
    old_wins = arena_run([(0.2, 0.8)] * 5)  # old preferred on all 5 cases: Wilson 0.57-1.0 for old
    assert better_than_first(old_wins.summary[0].details) == ["old"]
    assert (old_wins.any_failed, arena_exit_code(old_wins)) == (True, EXIT_FAILED)
    few = arena_run([(0.2, 0.8)] * 2 + [(0.9, 0.9)] * 3)  # old on 2, 3 ties: not significant, though 2 cases fail
    assert (few.summary[0].failed, few.summary[0].details["pairs"][0]["verdict"]) == (2, "no significant difference")
    assert arena_exit_code(few) == EXIT_OK
    new_wins = arena_run([(0.8, 0.2)] * 5)
    assert new_wins.summary[0].details["pairs"][0]["verdict"] == "new better"
    assert arena_exit_code(new_wins) == EXIT_OK


def test_an_errored_comparison_exits_3_before_any_verdict() -> None:
    errored = arena_run([(0.2, 0.8)] * 5).model_copy(deep=True)
    result = errored.cases[0].results[0].model_copy(update={"error": "BackendError: gone", "score": None, "passed": None})
    errored.cases[0].results[0] = result
    summary = errored.summary[0].model_copy(update={"errored": 1})
    assert arena_exit_code(errored.model_copy(update={"summary": [summary]})) == EXIT_ERRORED

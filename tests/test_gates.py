"""Gates: ``[gate]`` and ``--min-pass-rate`` / ``--min-mean``, what they decide and the exit codes of a run.

The gates' arithmetic is checked on summaries with known counts; the command line end to end on
``exact_match`` (no model: 2 of 3 cases pass) and on a plugin metric that raises on one case (an
errored result), and the resume of an interrupted run on the plugin judge of tests/test_resume_options.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from command_line import Project
from test_resume_options import CONFIG as DIGIT_CONFIG
from test_resume_options import PLUGIN as DIGIT_PLUGIN
from test_resume_options import score

from localeval.cli.exits import EXIT_ERRORED, EXIT_FAILED, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK
from localeval.config import GateConfig, RunConfig
from localeval.data.results import MetricSummary
from localeval.errors import ConfigError
from localeval.reports.run_index import read_run
from localeval.run.gates import gate_results
from localeval.stats import wilson


def summary(metric: str, passed: int, failed: int, errored: int = 0, mean: float | None = None) -> MetricSummary:
    scored = passed + failed
    return MetricSummary(metric=metric, cases=scored + errored, passed=passed, failed=failed, errored=errored,
                         pass_rate=passed / scored if scored else None, mean_score=mean)


# --- the arithmetic ---------------------------------------------------------------------


def test_a_pass_rate_gate_is_reached_at_the_rate_itself_and_carries_its_wilson_interval() -> None:
    gate = GateConfig(min_pass_rate={"correct": 0.9, "polite": 0.95})
    results = gate_results(gate, [summary("correct", 9, 1, errored=2), summary("polite", 18, 1)])
    assert [(r.metric, r.rule, r.required, r.actual, r.scored, r.passed) for r in results] == [
        ("correct", "min_pass_rate", 0.9, 0.9, 10, True),  # 9 of 10 scored: exactly 0.9 reaches 0.9
        ("polite", "min_pass_rate", 0.95, 18 / 19, 19, False),
    ]
    interval = wilson(9, 10)
    assert interval is not None
    assert (results[0].low, results[0].high) == (interval.low, interval.high)


def test_a_mean_gate_compares_the_mean_score_and_has_no_interval() -> None:
    gate = GateConfig(min_mean={"correct": 0.7})
    reached, missed = (gate_results(gate, [summary("correct", 3, 1, mean=m)])[0] for m in (0.7, 0.6999))
    assert (reached.passed, reached.actual, reached.low, reached.high) == (True, 0.7, None, None)
    assert (missed.passed, missed.actual) == (False, 0.6999)


def test_a_metric_that_scored_nothing_fails_its_gates() -> None:
    gate = GateConfig(min_pass_rate={"correct": 0.0}, min_mean={"correct": 0.0})
    results = gate_results(gate, [summary("correct", 0, 0, errored=3)])
    assert [(r.rule, r.actual, r.passed, r.low) for r in results] == [
        ("min_pass_rate", None, False, None), ("min_mean", None, False, None)]


# --- the config file ------------------------------------------------------------------------


def config(tmp_path: Path, text: str) -> RunConfig:
    path = tmp_path / "eval.toml"
    path.write_text(text)
    return RunConfig.load(path)


METRICS = '[[metrics]]\nmetric = "exact_match"\n\n[[metrics]]\nmetric = "toxicity"\n'


def test_the_gate_table_is_read_and_checked_against_the_metrics(tmp_path: Path) -> None:
    loaded = config(tmp_path, METRICS + "[gate]\nmin_pass_rate = { exact_match = 0.9, toxicity = 0.8 }\n"
                                         "min_mean = { exact_match = 0.5 }\n")
    assert [m.display_name for m in loaded.build_metrics()] == ["exact_match", "toxicity"]
    assert loaded.gate.rules() == [("min_pass_rate", "exact_match", 0.9), ("min_pass_rate", "toxicity", 0.8),
                                   ("min_mean", "exact_match", 0.5)]


@pytest.mark.parametrize(("gate", "problem"), [
    ("min_pass_rate = { exact_mach = 0.9 }",
     "gate.min_pass_rate (--min-pass-rate): unknown metric 'exact_mach' (did you mean 'exact_match'?; "
     "known: exact_match, toxicity)"),
    ("min_mean = { toxicity = 0.2 }",
     "gate.min_mean (--min-mean): metric 'toxicity' is better lower; gate it with min_pass_rate"),
])
def test_a_gate_on_no_metric_of_the_run_is_refused_when_the_metrics_are_built(tmp_path: Path, gate: str,
                                                                                problem: str) -> None:
    loaded = config(tmp_path, METRICS + f"[gate]\n{gate}\n")
    with pytest.raises(ConfigError) as info:
        loaded.build_metrics()
    assert str(info.value) == f"{tmp_path / 'eval.toml'}: {problem}"


@pytest.mark.parametrize(("gate", "problem"), [
    ("min_pass_rate = { exact_match = 1.5 }", "gate.min_pass_rate.exact_match: Input should be less than or equal to 1"),
    ("min_rate = { exact_match = 0.5 }", "gate: unknown key 'min_rate' (did you mean 'min_pass_rate' or 'min_mean'?; "
                                           "known: min_pass_rate, min_mean)"),
])
def test_a_bad_gate_table_names_the_key(tmp_path: Path, gate: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        config(tmp_path, METRICS + f"[gate]\n{gate}\n")
    assert str(info.value).startswith(f"{tmp_path / 'eval.toml'}: {problem}")


def test_gates_change_no_config_hash_but_a_metric_option_does(tmp_path: Path) -> None:
    base = config(tmp_path, METRICS)
    gated = config(tmp_path, 'name = "x"\ntags = ["a"]\n' + METRICS + '[gate]\nmin_pass_rate = { exact_match = 0.9 }\n'
                                                          '[report]\npath = "r.json"\n[backend]\nn_threads = 4\n')
    assert (gated.name, gated.tags, gated.backend.model_dump()["n_threads"]) == ("x", ["a"], 4)
    other = config(tmp_path, METRICS.replace('"exact_match"', '"exact_match"\nignore_case = true'))
    assert base.scoring_sha256() == gated.scoring_sha256()
    assert base.scoring_sha256() != other.scoring_sha256()


# --- the command line: exit codes ----------------------------------------------------------

FRAGILE = '''
from localeval import metric

@metric("fragile", required=("actual_output",))
def fragile(case):
    if case.actual_output == "boom":
        raise RuntimeError("boom")
    return 1.0, "fine"
'''


@pytest.fixture
def cases(project: Project) -> Project:
    """Three cases, two of which exact_match passes; the plugin metric ``fragile`` errors on the third."""
    project.write_cases([{"input": "a", "actual_output": "x", "expected_output": "x"},
                         {"input": "b", "actual_output": "x", "expected_output": "x"},
                         {"input": "c", "actual_output": "boom", "expected_output": "x"}])
    project.write("fragile.py", FRAGILE)
    return project


@pytest.mark.parametrize(("options", "code", "said"), [
    ([], EXIT_FAILED, None),  # no gate: a case failed
    (["--min-pass-rate", "exact_match=0.6"], EXIT_OK, "Gates: 1 of 1 reached."),  # the gate, not the case
    (["--min-pass-rate", "exact_match=0.7"], EXIT_FAILED, "Gates: 0 of 1 reached."),
    (["--min-mean", "exact_match=0.6", "--min-pass-rate", "exact_match=0.5"], EXIT_OK, "Gates: 2 of 2 reached."),
    (["--min-mean", "exact_match=0.9"], EXIT_FAILED, "Gates: 0 of 1 reached."),
    (["--min-pass-rate", "exact_match=0", "-m", "fragile", "--plugin", "fragile.py"], EXIT_ERRORED,
     "Gates: 1 of 1 reached."),  # an errored result is exit 3 whatever the gates say
])
def test_the_exit_code_follows_the_gates_when_there_are_any(cases: Project, options: list[str], code: int,
                                                            said: str | None) -> None:
    done = cases.localeval("run", "cases.jsonl", "-m", "exact_match", "--run-dir", "run", *options)
    assert done.returncode == code, done.stderr
    assert (said in done.stdout) if said else ("Gates" not in done.stdout)
    report = json.loads((cases / "run" / "report.json").read_text())
    assert len(report["gates"]) == sum(o.startswith("--min") for o in options)


def test_the_config_gate_with_the_command_line_on_top_and_in_the_report(cases: Project) -> None:
    cases.write("eval.toml", '[dataset]\npath = "cases.jsonl"\n[[metrics]]\nmetric = "exact_match"\n'
                             "[gate]\nmin_pass_rate = { exact_match = 0.9 }\n")
    strict = cases.localeval("run", "-c", "eval.toml", "--run-dir", "strict")
    lenient = cases.localeval("run", "-c", "eval.toml", "--run-dir", "lenient", "--min-pass-rate", "exact_match=0.5")
    assert (strict.returncode, lenient.returncode) == (EXIT_FAILED, EXIT_OK), (strict.stderr, lenient.stderr)
    gate = json.loads((cases / "strict" / "report.json").read_text())["gates"][0]
    interval = wilson(2, 3)
    assert interval is not None
    assert gate == {"metric": "exact_match", "rule": "min_pass_rate", "required": 0.9, "actual": 2 / 3,
                    "passed": False, "scored": 3, "low": interval.low, "high": interval.high}
    assert json.loads((cases / "lenient" / "report.json").read_text())["gates"][0]["required"] == 0.5


@pytest.mark.parametrize(("options", "problem"), [
    (["--min-pass-rate", "coherense=0.9"],
     "<command line>: gate.min_pass_rate (--min-pass-rate): unknown metric 'coherense' (did you mean "
     "'coherence'?; known: exact_match, coherence)"),
    (["--min-mean", "coherence=high"], "--min-mean takes METRIC=SCORE with SCORE from 0 to 1, got coherence=high"),
    (["--min-pass-rate", "coherence"], "--min-pass-rate takes METRIC=RATE, got 'coherence'"),
])
def test_a_bad_gate_is_exit_2_before_any_judge_loads(cases: Project, options: list[str], problem: str) -> None:
    """G-Eval's coherence needs the default judge, which a fast-tier test may not load (tests/tiers.py):
    the gate is refused before it, and before the run's folder is made."""
    done = cases.localeval("run", "cases.jsonl", "-m", "exact_match", "-m", "geval:coherence", *options)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT_INPUT, "", f"error: {problem}\n")
    assert not (cases / "runs").exists()


# --- resume -----------------------------------------------------------------------------------


@pytest.fixture
def digits(project: Project) -> Project:
    """tests/test_resume_options.py's plugin judge and cases (4 of 6 pass G-Eval's 0.5), gated at 0.6."""
    project.write("digit.py", DIGIT_PLUGIN)
    project.write_cases({"name": f"q{i}", "input": f"Question {i}?", "actual_output": f"The answer {d}",
                         "expected_output": f"The answer {d}"} for i, d in enumerate([2, 5, 3, 4, 1, 5]))
    project.write("eval.toml", DIGIT_CONFIG.format(plugins='plugins = ["digit.py"]')
                  + "\n[gate]\nmin_pass_rate = { correct = 0.6 }\n")
    project.env["DIGIT_LOG"] = str(project / "digit.log")
    return project


def test_a_resume_keeps_the_runs_gates_and_takes_new_ones(digits: Project) -> None:
    assert [score(d) >= 0.5 for d in [2, 5, 3, 4, 1, 5]].count(True) == 4
    first = digits.localeval("run", "-c", "eval.toml", "--run-dir", "kept", DIGIT_STOP_AT="3")
    again = digits.localeval("run", "-c", "eval.toml", "--run-dir", "raised", DIGIT_STOP_AT="3")
    assert (first.returncode, again.returncode) == (EXIT_INTERRUPTED, EXIT_INTERRUPTED), first.stderr
    stopped = read_run(digits / "kept")  # as `localeval runs` lists it: its judge is in its journal
    held = len((digits / "kept" / "journal.jsonl").read_text().splitlines()) - 1
    assert (stopped.status, stopped.judges, stopped.note) == ("interrupted", ["digit-1"], f"{held} of 6 results")
    assert 0 < held < 6
    kept = digits.localeval("run", "--resume", "kept")
    raised = digits.localeval("run", "--resume", "raised", "--min-pass-rate", "correct=0.7")
    assert (kept.returncode, raised.returncode) == (EXIT_OK, EXIT_FAILED), (kept.stderr, raised.stderr)
    gates = [json.loads((digits / name / "report.json").read_text())["gates"] for name in ("kept", "raised")]
    assert [(g[0]["required"], g[0]["actual"], g[0]["passed"]) for g in gates] == [
        (0.6, 4 / 6, True), (0.7, 4 / 6, False)]

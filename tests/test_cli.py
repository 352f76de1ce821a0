"""The `localeval` command end to end, in a subprocess: what it refuses before any judge loads (the
fast tier), and runs with the real default model (marked ``model``)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from command_line import localeval

from localeval.cli.exits import EXIT_FAILED, EXIT_OK
from localeval.prompts import load_prompt

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "quickstart" / "eval.toml"
GOLDEN = Path(__file__).parent / "golden" / "quickstart.json"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """On top of the test process's environment (it says where the model is): a fresh cache, narrow lines."""
    return {"LOCALEVAL_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "60"}


def scores(report: dict) -> dict[str, dict[str, float | None]]:
    return {
        case["name"]: {r["metric"]: r["score"] for r in case["results"]} for case in report["cases"]
    }


@pytest.mark.model
def test_example_run_is_reproducible_and_the_rerun_makes_no_model_calls(env, tmp_path):
    first = localeval("run", "-c", str(EXAMPLE), "--report", str(tmp_path / "a.json"), env=env)
    assert first.returncode == 1, first.stderr  # exact_match fails on 3 of 6 cases
    assert "Summary" in first.stdout and "correctness" in first.stdout
    second = localeval("run", "-c", str(EXAMPLE), "--report", str(tmp_path / "b.json"), env=env)
    assert second.returncode == 1, second.stderr
    a = json.loads((tmp_path / "a.json").read_text())
    b = json.loads((tmp_path / "b.json").read_text())
    assert list(a)[0] == "format_version"
    assert scores(a) == scores(b)
    assert a["stats"]["model_calls"] > 0
    assert b["stats"]["model_calls"] == 0
    # per case: two G-Eval scores and two reasons; once per run: conciseness' steps
    assert b["stats"]["cache_hits"] == 4 * 6 + 1
    assert a["stats"]["model_calls"] == 4 * 6 + 1
    assert b["backend"]["model_sha256"] == a["backend"]["model_sha256"]


@pytest.mark.model
def test_example_scores_match_the_golden_report(env, tmp_path):
    """Tight tolerances, with the provenance that makes them meaningful."""
    golden = json.loads(GOLDEN.read_text())
    prompts = {name: load_prompt(name).sha256 for name in golden["prompt_sha256"]}
    assert prompts == golden["prompt_sha256"], "a prompt changed: regenerate tests/golden (see its README)"
    result = localeval("run", "-c", str(EXAMPLE), "--report", str(tmp_path / "r.json"), env=env)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["backend"]["model_sha256"] == golden["model_sha256"]
    assert report["backend"]["runtime"] == golden["runtime"], "llama.cpp changed: regenerate the golden"
    assert result.returncode == 1
    for case, metrics in golden["scores"].items():
        for metric, expected in metrics.items():
            assert scores(report)[case][metric] == pytest.approx(expected, abs=1e-6), (case, metric)


@pytest.mark.model
def test_the_cli_works_with_networking_disabled(env, tmp_path):
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if shutil.which("unshare") is None or probe.returncode != 0:
        pytest.skip("unshare -n is not permitted here")
    result = localeval("run", "-c", str(EXAMPLE), "--no-cache", env=env, prefix=("unshare", "-n"))
    assert result.returncode == 1, result.stderr
    assert "6 cases" in result.stdout


def test_exact_match_alone_loads_no_model(env, tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text('{"input": "q", "actual_output": "a", "expected_output": "a"}\n')
    env = {**env, "LOCALEVAL_HOME": str(tmp_path / "empty-home")}  # no model there
    result = localeval("run", str(data), "-m", "exact_match", "--report", str(tmp_path / "r.json"), env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "r.json").read_text())["backend"] is None


BAD_INPUTS = {
    "missing file": ([], "nope.jsonl", None, "nope.jsonl"),
    "malformed jsonl line": (["-m", "exact_match"], "d.jsonl",
                             '{"input": "a", "actual_output": "b", "expected_output": "b"}\n{"input": oops}\n',
                             "d.jsonl:2"),
    "csv without input column": (["-m", "exact_match"], "d.csv", "expected_output,actual_output\nq,a\n",
                                 "d.csv:1: field 'input'"),
    "csv unknown column": (["-m", "exact_match"], "d.csv", "question,actual_output\nq,a\n",
                           "d.csv:1: field 'question': not a test-case field; map it"),
    "metric lacks a field": (["-m", "exact_match"], "d.jsonl",
                             '{"input": "a", "actual_output": "b", "expected_output": "b"}\n{"input": "a", "actual_output": "b"}\n',
                             "d.jsonl:2: field 'expected_output'"),
    "reference metric lacks expected_output": (["-m", "rouge"], "d.jsonl",
                                               '{"input": "a", "actual_output": "b", "expected_output": "b"}\n'
                                               '{"input": "a", "actual_output": "b"}\n',
                                               "d.jsonl:2: field 'expected_output': metric 'rouge' needs it, and it is missing"),
    "reference metric given an empty expected_output": (["-m", "rouge"], "d.jsonl",
                                                        '{"input": "a", "actual_output": "b", "expected_output": ""}\n',
                                                        "d.jsonl:1: field 'expected_output': metric 'rouge' needs it, and it is empty"),
    "unknown metric": (["-m", "bleurt"], "d.jsonl", '{"input": "a"}\n', "unknown metric 'bleurt'"),
    "bad --map": (["-m", "exact_match", "--map", "query"], "d.jsonl", '{"input": "a"}\n', "--map"),
    "bad --threads": (["-m", "exact_match", "--threads", "0"], "d.jsonl", '{"input": "a"}\n',
                      "command line: backend.n_threads: Input should be greater than or equal to 1"),
    # A run over no case would judge nothing and report that every metric passed.
    "empty jsonl": (["-m", "exact_match"], "d.jsonl", "", "d.jsonl: no test cases (the file is empty)"),
    "blank jsonl": (["-m", "exact_match"], "d.jsonl", " \n\n\t\n", "d.jsonl: no test cases (the file is empty)"),
    "csv with only a header": (["-m", "exact_match"], "d.csv", "input,actual_output,expected_output\n",
                               "d.csv: no test cases (the file has only its header row)"),
    "empty json list": (["-m", "exact_match"], "d.json", "[]\n", "d.json: no test cases (the file is an empty list)"),
    # Python reads NaN as a float that the reports would write as null.
    "NaN in jsonl": (["-m", "exact_match"], "d.jsonl",
                     '{"input": "a", "actual_output": "b", "expected_output": "b"}\n'
                     '{"input": "a", "actual_output": "b", "expected_output": "b", "metadata": {"score": NaN}}\n',
                     "d.jsonl:2: field 'metadata.score': NaN is not a JSON value"),
    "Infinity in json": (["-m", "exact_match"], "d.json",
                         '[\n{"input": "a", "actual_output": "b", "expected_output": "b", "metadata": {"s": -Infinity}}\n]',
                         "d.json:2: field 'metadata.s': -Infinity is not a JSON value"),
    # Conversations: a bad turn, and a metric of the other kind, before any judge loads.
    "turn with an unknown role": (["-m", "knowledge_retention"], "c.jsonl",
                                  '{"turns": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "yo"}]}\n',
                                  "c.jsonl:1: field 'turns[1].role': Input should be 'user', 'assistant' or 'system', got 'bot'"),
    "conversational metric on single-turn data": (["-m", "role_adherence"], "d.jsonl", '{"input": "a"}\n',
                                                  "d.jsonl:1: field 'turns': metric 'role_adherence' judges conversations"),
    "single-turn metric on conversations": (["-m", "exact_match"], "c.jsonl",
                                            '{"turns": [{"role": "assistant", "content": "hi"}]}\n',
                                            "c.jsonl:1: field 'input': metric 'exact_match' judges single-turn test cases"),
    # The run folder is made before any judge loads; a file in its way is one line, not a traceback.
    "run folder under a file": (["-m", "exact_match", "--run-dir", "d.jsonl/run"], "d.jsonl",
                                '{"input": "a", "actual_output": "b", "expected_output": "b"}\n',
                                "d.jsonl/run: cannot create the run folder (Not a directory)"),
}


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_bad_input_is_one_line_and_exit_2(name, env, tmp_path):
    options, filename, content, expected = BAD_INPUTS[name]
    if content is not None:
        (tmp_path / filename).write_text(content)
    result = localeval("run", filename, *options, env=env, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and expected in lines[0]
    assert result.stdout == ""  # nothing was judged, so no table either


def test_an_unknown_model_is_no_error_when_no_metric_needs_a_judge(env, tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text('{"input": "a", "actual_output": "b", "expected_output": "b"}\n')
    result = localeval("run", str(data), "-m", "exact_match", "--model", "gpt-9", env=env)
    assert result.returncode == 0, result.stderr
    assert "1 cases in" in result.stdout


@pytest.mark.parametrize("option", ["--cache-dir", "--run-dir"])
def test_a_folder_that_cannot_be_made_is_named_before_the_judge_loads(option, env, tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text('{"input": "a", "actual_output": "b"}\n')
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    # gpt-9 would be the error if the judge were loaded first.
    result = localeval("run", str(data), "-m", "geval:coherence", "--model", "gpt-9",
                       option, str(blocker / "sub"), env=env)
    assert result.returncode == 2, (result.stdout, result.stderr)
    what = "cache folder" if option == "--cache-dir" else "run folder"
    way_on = "; run with --no-cache, or give a writable --cache-dir" if option == "--cache-dir" else ""
    assert result.stderr == f"error: {blocker / 'sub'}: cannot create the {what} (Not a directory){way_on}\n"


PICKY_PLUGIN = """
from localeval import metric

@metric("picky", required=("input",))
def picky(case):
    if case.input == "boom":
        raise ValueError("cannot score boom")
    return 1.0
"""


def test_a_result_that_errors_exits_3_and_names_the_case(env, tmp_path):
    (tmp_path / "picky.py").write_text(PICKY_PLUGIN)
    (tmp_path / "d.jsonl").write_text('{"input": "fine"}\n{"input": "boom"}\n{"input": "also fine"}\n')
    result = localeval("run", "d.jsonl", "--plugin", "picky.py", "-m", "picky", "--report", "r.json",
                       env=env, cwd=tmp_path)
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert "d.jsonl:2 picky: unexpected ValueError: cannot score boom" in result.stderr.splitlines()
    report = json.loads((tmp_path / "r.json").read_text())
    assert [r["error"] is None for c in report["cases"] for r in c["results"]] == [True, False, True]


def test_unknown_model_for_a_judge_metric_is_a_clear_error(env, tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text('{"input": "a", "actual_output": "b"}\n')
    config = tmp_path / "c.toml"
    config.write_text(
        '[backend]\nmodel = "gpt-9"\n[[metrics]]\nmetric = "geval"\ncriteria = "good"\n'
    )
    result = localeval("run", str(data), "-c", str(config), env=env)
    assert result.returncode == 2
    assert "unknown model 'gpt-9'" in result.stderr and "Traceback" not in result.stderr


def test_bad_config_key_names_the_file_and_key(env, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("[backend]\nn_thread = 2\n")
    result = localeval("run", "-c", str(config), env=env)
    assert result.returncode == 2
    assert f"{config}: backend: option 'n_thread' does not apply to the llama.cpp backend" in result.stderr


def test_models_list_shows_the_default_model_present(env):  # present: pulled; nothing loads it
    result = localeval("models", "list", env={**env, "COLUMNS": "300"})
    assert result.returncode == 0
    line = next(line for line in result.stdout.splitlines() if "smollm2-135m-instruct" in line)
    assert "yes" in line and "absent" not in line


@pytest.mark.model
def test_cache_info_and_clear(env, tmp_path):
    localeval("run", "-c", str(EXAMPLE), env=env)
    info = localeval("cache", "info", env=env)
    assert "26 entries" in info.stdout  # 25 distinct judge calls + the model file's sha256
    cleared = localeval("cache", "clear", env=env)
    assert "removed 26 entries" in cleared.stdout
    assert "0 entries" in localeval("cache", "info", env=env).stdout


def test_compare_of_runs_over_different_files_says_so_and_keeps_values_whole_in_a_pipe(env, tmp_path):
    case = '{{"input": "q{0}", "actual_output": "{1}", "expected_output": "a"}}\n'
    (tmp_path / "a.jsonl").write_text(case.format(1, "a") + case.format(2, "a"))
    (tmp_path / "b.jsonl").write_text(case.format(1, "a") + case.format(2, "b") + case.format(3, "a"))
    for name in ("a", "b"):
        ran = localeval("run", f"{name}.jsonl", "-m", "exact_match", "--run-dir", f"run-{name}", env=env, cwd=tmp_path)
        assert ran.returncode == {"a": EXIT_OK, "b": EXIT_FAILED}[name], ran.stderr  # b's case 2 fails
    result = localeval("compare", "run-a", "run-b", "--fail-on-regression", "flip", env=env, cwd=tmp_path)  # COLUMNS=60, a pipe
    assert result.returncode == 1, result.stderr  # case 2 went from pass to fail
    lines = result.stdout.splitlines()
    assert "…" not in result.stdout
    sha = {name: hashlib.sha256((tmp_path / f"{name}.jsonl").read_bytes()).hexdigest() for name in ("a", "b")}
    assert lines[-2] == (
        f"Warning: the runs judged different datasets (A: 2 cases of a.jsonl, sha256 {sha['a']}; "
        f"B: 3 cases of b.jsonl, sha256 {sha['b']}); each row compares the cases at the same position."
    )
    assert lines[-1] == "2 cases matched by index: 1 output changed, 1 regression, 1 case only in B."
    summary = next(line for line in lines if line.startswith("│ exact_match"))
    cells = [cell.strip() for cell in summary.split("│")[1:-1]]
    assert cells[:5] + cells[6:] == ["exact_match", "2", "1.000", "0.500", "-0.500", "100%", "50%", "1", "0", "1",
                                     "no difference the data can show"]


def test_models_list_in_a_pipe_keeps_each_model_on_one_line(env, tmp_path):
    from localeval.backends.catalog import ModelCatalog

    home = tmp_path / "home"
    result = localeval("models", "list", env={**env, "LOCALEVAL_HOME": str(home)})  # COLUMNS=60
    assert result.returncode == 0, result.stderr
    specs = ModelCatalog(home).specs()
    assert specs
    for spec in specs:
        line = next(line for line in result.stdout.splitlines() if f" {spec.name} " in line)
        assert spec.description in line and spec.license in line and "absent" in line


def test_a_line_naming_a_long_path_is_not_wrapped(env, tmp_path):
    folder = tmp_path / ("a-long-folder-name-" * 8) / "cache"  # far wider than COLUMNS=60
    result = localeval("cache", "info", "--cache-dir", str(folder), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{folder}: empty (no cache yet)\n"


# -- per-metric judges ---------------------------------------------------------------------------

TWO_JUDGES = """
[dataset]
path = "{data}"

[backend]                      # the default judge
n_threads = 1

[judges.second]                # a second judge, another model: asked by the metric that names it
model = "gemma-3-270m"
n_threads = 1

[[metrics]]
metric = "geval"
name = "by_default"
evaluation_steps = ["Check that the answer is correct."]
include_reason = false

[[metrics]]
metric = "geval"
name = "by_second"
judge = "second"
evaluation_steps = ["Check that the answer is correct."]
include_reason = false
"""


@pytest.mark.model
def test_each_metric_is_judged_by_the_judge_it_names_and_each_judge_has_its_own_cache_keys(env, tmp_path):
    data = tmp_path / "qa.jsonl"
    data.write_text('{"input": "Capital of France?", "actual_output": "Paris"}\n'
                    '{"input": "2 + 2?", "actual_output": "5"}\n')
    config = tmp_path / "eval.toml"
    config.write_text(TWO_JUDGES.format(data=data))
    runs = []
    for name in ("first", "again"):
        result = localeval("run", "-c", str(config), "--report", str(tmp_path / f"{name}.json"), env=env)
        assert result.returncode == EXIT_FAILED, result.stderr  # gemma-3-270m fails both answers (by_second)
        runs.append(json.loads((tmp_path / f"{name}.json").read_text()))
    first, again = runs
    default, second = first["backend"], first["judges"]["second"]
    assert default["model"] == "smollm2-135m-instruct" and second["model"] == "gemma-3-270m"
    assert default["model_sha256"] != second["model_sha256"]
    by_metric = [{r["metric"]: r for r in case["results"]} for case in first["cases"]]
    # The two judges are different models: the same prompt scores differently.
    assert all(case["by_default"]["raw_score"] != case["by_second"]["raw_score"] for case in by_metric)
    assert all(case[m]["usage"]["model_calls"] == 1 for case in by_metric for m in ("by_default", "by_second"))
    assert first["stats"]["model_calls"] == 4 and first["stats"]["prompt_tokens"] > 0
    assert (again["stats"]["model_calls"], again["stats"]["cache_hits"]) == (0, 4)
    assert scores(again) == scores(first)


def test_a_metric_naming_a_judge_without_a_table_is_one_line_before_any_model_loads(env, tmp_path):
    data = tmp_path / "qa.jsonl"
    data.write_text('{"input": "q", "actual_output": "a"}\n')
    config = tmp_path / "eval.toml"
    config.write_text(TWO_JUDGES.format(data=data).replace('judge = "second"', 'judge = "third"'))
    result = localeval("run", "-c", str(config), env={**env, "LOCALEVAL_HOME": str(tmp_path / "no-models")})
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: {config}: metrics[2]: judge 'third': there is no [judges.third] table (judges: second)"
    )
    config.write_text(TWO_JUDGES.format(data=data).replace('model = "gemma-3-270m"', 'base_url = "http://x"'))
    result = localeval("run", "-c", str(config), env=env)
    assert result.returncode == 2
    assert "judges.second" in result.stderr and "base_url" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.model
def test_backends_check_checks_every_judge_of_a_config(env, tmp_path):
    data = tmp_path / "qa.jsonl"
    data.write_text('{"input": "q", "actual_output": "a"}\n')
    config = tmp_path / "eval.toml"
    config.write_text(TWO_JUDGES.format(data=data))
    result = localeval("backends", "check", "-c", str(config), env=env)
    assert result.returncode == 0, result.stderr
    sections = result.stdout.split("[judges.second]")
    assert len(sections) == 2 and "[backend]" in sections[0]
    assert "smollm2-135m-instruct" in sections[0] and "gemma-3-270m" in sections[1]
    assert sections[0].count("valid:") == sections[1].count("valid:") == 1


@pytest.mark.model
def test_backends_check_probes_a_target_with_free_text(env, tmp_path):
    config = tmp_path / "eval.toml"
    config.write_text('[backend]\nn_threads = 1\n\n[[targets]]\nname = "small"\n[targets.backend]\nn_threads = 1\n')
    result = localeval("backends", "check", "-c", str(config), env=env)
    assert result.returncode == 0, result.stderr
    judge, target = result.stdout.split("[targets.small.backend]")
    assert "[backend]" in judge and judge.count("valid:") == 1 and "free text" not in judge
    assert "smollm2-135m-instruct" in target and "free text" in target and "(finish: " in target
    assert "valid:" not in target and "score distribution" not in target

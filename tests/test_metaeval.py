"""`localeval meta-eval`: reading human-judgment files, judging them, correlating with humans."""

from __future__ import annotations

import io
import json
import math
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from command_line import localeval
from rich.console import Console
from scripted import ScriptedBackend

from localeval.backends.base import DistributionRequest
from localeval.cli import meta_eval as meta_eval_glue
from localeval.cli import session
from localeval.cli import settings as cli_settings
from localeval.data.case import TestCase
from localeval.data.dataset import read_records
from localeval.errors import BackendError, ConfigError, DatasetError
from localeval.metaeval.evaluation import JudgmentSpec, load_judgments, meta_evaluate, metric_variants
from localeval.metrics import GEval, build_metric
from localeval.metrics.length import OutputLength
from localeval.paths import Paths

# Excerpts of UniEval's human-judgment sets, MIT (tests/data/README.md says which records).
ALIGNMENT = Path(__file__).resolve().parent / "data" / "alignment"

# (file, human score, group, extra fields): the length baseline on the public sets.
PUBLIC_SETS = {
    "qags_cnndm": ("scores.consistency", "doc_id"),
    "qags_xsum": ("scores.consistency", "doc_id"),
    # 6 responses per dialogue: summary-level correlation is defined here (QAGS has
    # one summary per document, so there it is not).
    "topical_chat": ("scores.coherence", "source"),
}


def alignment_file(name: str) -> Path:
    path = ALIGNMENT / f"{name}.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing from the repository")
    return path


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``localeval ARGS`` in ``cwd``, with no model to be found there."""
    return localeval(*args, env={"COLUMNS": "100", "LOCALEVAL_HOME": str(cwd / "no-models")}, cwd=cwd)


def by_hand(records: list[dict[str, Any]], human: str, group: str) -> dict[str, Any]:
    """The length baseline's correlations, computed from the records with scipy directly."""
    from scipy import stats

    def three(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
        return (
            stats.pearsonr(xs, ys).statistic,
            stats.spearmanr(xs, ys).statistic,
            stats.kendalltau(xs, ys).statistic,
        )

    words = [len(r["system_output"].split()) for r in records]
    scores = [float(_get(r, human)) for r in records]
    per_group: dict[Any, list[tuple[int, float]]] = defaultdict(list)
    for w, h, r in zip(words, scores, records):
        per_group[_get(r, group)].append((w, h))
    used = []
    for pairs in per_group.values():
        ws, hs = [p[0] for p in pairs], [p[1] for p in pairs]
        if len(pairs) >= 2 and len(set(ws)) > 1 and len(set(hs)) > 1:
            used.append(three(ws, hs))
    summary = [sum(c[i] for c in used) / len(used) if used else None for i in range(3)]
    return {
        "pooled": three(words, scores),
        "summary": tuple(summary),
        "groups": len(used),
    }


def _get(record: dict[str, Any], keypath: str) -> Any:
    for part in keypath.split("."):
        record = record[part]
    return record


def coefficients(c: Any) -> tuple[float | None, float | None, float | None]:
    return (c["pearson"], c["spearman"], c["kendall"]) if isinstance(c, dict) else (c.pearson, c.spearman, c.kendall)


def assert_close(actual: tuple[float | None, ...], expected: tuple[float | None, ...]) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        if e is None:
            assert a is None
        else:
            assert a is not None and abs(a - e) <= 1e-12, (actual, expected)


@pytest.mark.parametrize("name", list(PUBLIC_SETS))
def test_length_baseline_matches_scipy_through_the_cli_and_the_function(name, tmp_path):
    """The issue's acceptance test: the numbers agree with an independent computation."""
    path = alignment_file(name)
    human, group = PUBLIC_SETS[name]
    records = json.loads(path.read_text())
    expected = by_hand(records, human, group)

    spec = JudgmentSpec({"input": "source", "actual_output": "system_output"}, human=human, group=group)
    report = meta_evaluate(load_judgments(path, spec), "output_length")
    [method] = report.methods
    assert (method.method, method.judged, method.errored) == ("-", len(records), 0)
    assert method.pooled.items == len(records)
    assert_close(coefficients(method.pooled), expected["pooled"])
    assert method.summary_level is not None
    assert method.summary_level.groups == expected["groups"]
    assert_close(coefficients(method.summary_level), expected["summary"])

    result = cli(
        "meta-eval", str(path), "--metric", "output_length",
        "--field", "actual_output=system_output", "--field", "input=source",
        "--human", human, "--group", group,
        "--report", "report.json", "--out", "items.jsonl", cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    saved = json.loads((tmp_path / "report.json").read_text())
    assert list(saved)[0] == "format_version"
    [cli_method] = saved["methods"]
    assert_close(coefficients(cli_method["pooled"]), expected["pooled"])
    assert_close(coefficients(cli_method["summary_level"]), expected["summary"])
    assert cli_method["summary_level"]["groups"] == expected["groups"]
    assert f"{expected['pooled'][1]:.3f}" in result.stdout
    low, high = cli_method["pooled"]["spearman_interval"]  # ρ's bootstrap interval, saved and shown
    assert low < expected["pooled"][1] < high
    assert f"[{low:.2f}, {high:.2f}]" in result.stdout
    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert [i["judge"] for i in items] == [len(r["system_output"].split()) for r in records]
    assert [i["human"] for i in items] == [_get(r, human) for r in records]
    assert [i["group"] for i in items] == [_get(r, group) for r in records]
    assert items[0]["line"] == 2 and items[0]["method"] == "-" and items[0]["error"] is None
    assert sorted(items[0]) == ["error", "group", "human", "judge", "line", "method", "score"]


def test_qags_has_one_summary_per_document_so_summary_level_is_undefined(tmp_path):
    spec = JudgmentSpec({"input": "source", "actual_output": "system_output"}, "scores.consistency", "doc_id")
    summary = meta_evaluate(load_judgments(alignment_file("qags_cnndm"), spec), "output_length").methods[0].summary_level
    assert summary is not None
    assert (summary.groups, summary.items, summary.spearman) == (0, 0, None)


# -- a G-Eval judge, scripted ------------------------------------------------------------

PROBABILITIES = [  # per record: p(1) .. p(5)
    (0.7, 0.1, 0.1, 0.05, 0.05),  # expected 1.65, most likely 1
    (0.1, 0.2, 0.5, 0.1, 0.1),  # expected 2.9, most likely 3
    (0.05, 0.45, 0.05, 0.05, 0.4),  # expected 3.3, most likely 2
    (0.05, 0.05, 0.1, 0.2, 0.6),  # expected 4.25, most likely 5
]
EXPECTED = [1.65, 2.9, 3.3, 4.25]
MOST_LIKELY = [1.0, 3.0, 2.0, 5.0]


def logprobs(probabilities: tuple[float, ...]) -> dict[str, float]:
    return {str(score): math.log(p) for score, p in enumerate(probabilities, start=1)}


def pearson(xs: list[float], ys: list[float]) -> float:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    return sxy / math.sqrt(sum((x - mx) ** 2 for x in xs) * sum((y - my) ** 2 for y in ys))


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """Four records, human scores 1..4, two groups; a blank line so line numbers are not indexes."""
    records = [
        {"id": i, "doc": f"document {i}", "out": f"summary {i}", "fact": "a fact",
         "scores": {"quality": i}, "group": "ab"[(i - 1) // 2]}
        for i in range(1, 5)
    ]
    path = tmp_path / "tiny.jsonl"
    lines = [json.dumps(r) for r in records]
    path.write_text("\n".join(lines[:2] + [""] + lines[2:]) + "\n")
    return path


TINY_SPEC = JudgmentSpec(
    {"input": "doc", "actual_output": "out", "context": "fact"}, human="scores.quality", group="group"
)
GEVAL_OPTIONS = {"evaluation_steps": ["Judge it."], "evaluation_params": ["input", "actual_output"]}


def test_geval_methods_logprobs_and_top_are_scored_in_one_run(tiny):
    if "scoring" not in GEval.model_fields:
        pytest.fail("GEval has no 'scoring' option")
    # Case by case, each case's methods in order: both methods read the same distribution.
    judge = ScriptedBackend(logprobs=[logprobs(p) for p in PROBABILITIES for _ in range(2)])
    report = meta_evaluate(load_judgments(tiny, TINY_SPEC), "geval", GEVAL_OPTIONS, ["logprobs", "top"], judge)

    assert len(judge.requests) == 8  # no reason was asked for: only the scores
    assert all(isinstance(r, DistributionRequest) for r in judge.requests)
    assert judge.requests[0].messages == judge.requests[1].messages
    assert judge.requests[0].candidates == ("1", "2", "3", "4", "5")
    by_method = {m: [i for i in report.items if i.method == m] for m in ("logprobs", "top")}
    assert [i.judge for i in by_method["logprobs"]] == pytest.approx(EXPECTED, abs=1e-12)
    assert [i.judge for i in by_method["top"]] == MOST_LIKELY
    assert [i.line for i in by_method["top"]] == [1, 2, 4, 5]
    assert [i.group for i in by_method["top"]] == ["a", "a", "b", "b"]

    human = [1.0, 2.0, 3.0, 4.0]
    logprob, top = report.method("logprobs"), report.method("top")
    assert (logprob.judged, logprob.errored, logprob.pooled.items) == (4, 0, 4)
    assert_close(coefficients(logprob.pooled), (pearson(EXPECTED, human), 1.0, 1.0))
    assert_close(coefficients(top.pooled), (pearson(MOST_LIKELY, human), 0.8, 4 / 6))
    for method in (logprob, top):  # two items per group, in the humans' order
        assert method.summary_level is not None
        assert (method.summary_level.groups, method.summary_level.items) == (2, 4)
        assert_close(coefficients(method.summary_level), (1.0, 1.0, 1.0))


def test_a_judge_error_is_counted_and_the_item_dropped(tiny):
    replies: list[Any] = [logprobs(p) for p in PROBABILITIES]
    replies[1] = BackendError("the judge fell over")
    judge = ScriptedBackend(logprobs=replies)
    report = meta_evaluate(load_judgments(tiny, TINY_SPEC), "geval", GEVAL_OPTIONS, judge=judge)

    [method] = report.methods
    assert (method.judged, method.errored, method.pooled.items) == (4, 1, 3)
    kept = [EXPECTED[0], EXPECTED[2], EXPECTED[3]]
    assert_close(coefficients(method.pooled), (pearson(kept, [1.0, 3.0, 4.0]), 1.0, 1.0))
    assert method.summary_level is not None  # group "a" has one item left: only "b" counts
    assert (method.summary_level.groups, method.summary_level.items) == (1, 2)
    failed = report.items[1]
    assert (failed.line, failed.judge, failed.score) == (2, None, None)
    assert failed.error is not None and "the judge fell over" in failed.error


def test_the_cli_glue_exits_3_when_items_errored_and_writes_the_items(tiny, tmp_path, monkeypatch):
    replies: list[Any] = [logprobs(p) for p in PROBABILITIES]
    replies[3] = BackendError("no reply")
    monkeypatch.setattr(meta_eval_glue, "load_judge", lambda *args: ScriptedBackend(logprobs=replies))
    settings = session.meta_eval_settings_from_cli(
        data=tiny, metric="geval", methods=None, fields=["input=doc", "actual_output=out"],
        human="scores.quality", group=None, limit=None,
        metric_options=['evaluation_steps=["Judge it."]'], items_out=tmp_path / "items.jsonl",
        report=None, model=None, threads=None, no_cache=True, cache_dir=None,
    )
    out, err = io.StringIO(), io.StringIO()
    paths = Paths(home=tmp_path / "home", cache=tmp_path / "cache")
    # Narrower than the error line, as a console is for a long temporary path: it must not wrap.
    code = session.meta_eval(settings, paths, Console(file=out, width=100), Console(file=err, width=40), {})
    assert code == 3
    assert f"{tiny}:5 logprobs: BackendError: no reply" in err.getvalue().splitlines()
    assert any(line.startswith(f"4 records of {tiny}, metric geval.") for line in out.getvalue().splitlines())
    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert [i["error"] is not None for i in items] == [False, False, False, True]
    assert "Summary-level" not in out.getvalue()  # no group given


@pytest.mark.model
def test_geval_methods_with_the_real_default_model(tmp_path):
    """Both methods read one distribution per item; the cached rerun makes no model call."""
    path = alignment_file("topical_chat")
    args = (
        "meta-eval", str(path), "-m", "geval:naturalness", "--method", "logprobs", "--method", "top",
        "--field", "input=source", "--field", "actual_output=system_output", "--field", "context=context",
        "--human", "scores.naturalness", "--group", "source", "--limit", "6",
        "--cache-dir", str(tmp_path / "cache"), "--out", "items.jsonl",
    )
    for run in ("first", "rerun"):  # LOCALEVAL_HOME says where the model is
        result = localeval(*args, "--report", f"{run}.json", env={"COLUMNS": "100"}, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    first, rerun = (json.loads((tmp_path / f"{run}.json").read_text()) for run in ("first", "rerun"))
    assert first["backend"]["model_sha256"] and first["stats"]["model_calls"] > 0
    assert rerun["stats"]["model_calls"] == 0
    assert first["methods"] == rerun["methods"]
    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert [i["method"] for i in items] == ["logprobs", "top"] * 6
    assert all(i["error"] is None and 1.0 <= i["judge"] <= 3.0 for i in items)
    assert all(i["judge"] in (1.0, 2.0, 3.0) for i in items if i["method"] == "top")


# -- reading human-judgment files ----------------------------------------------------------


def test_records_become_cases_with_their_real_locations(tiny):
    judgments = load_judgments(tiny, TINY_SPEC)
    assert judgments.dataset.locations == [f"{tiny}:{n}" for n in (1, 2, 4, 5)]
    assert judgments.lines == [1, 2, 4, 5]
    assert judgments.human == [1.0, 2.0, 3.0, 4.0]
    assert judgments.groups == ["a", "a", "b", "b"]
    assert judgments.dataset.cases[0] == TestCase(
        input="document 1", actual_output="summary 1", context=["a fact"]  # a string becomes a list
    )


def test_a_json_list_locates_each_record_at_its_first_line(tmp_path):
    path = tmp_path / "d.json"
    path.write_text('[\n  {"q": "a", "s": {"h": 1}},\n  {\n    "q": "b",\n    "s": {"h": 2}\n  }\n]\n')
    judgments = load_judgments(path, JudgmentSpec({"input": "q"}, "s.h"))
    assert judgments.lines == [2, 3]
    assert judgments.groups is None


def test_limit_takes_the_first_records_and_ignores_the_rest(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"q": "a", "h": 1}\n{"q": "b", "h": 2}\n{"q": "c", "h": 3}\nnot json\n')
    judgments = load_judgments(path, JudgmentSpec({"input": "q"}, "h", limit=2))
    assert [c.input for c in judgments.dataset.cases] == ["a", "b"]
    assert [line for line, _ in read_records(path, limit=3)] == [1, 2, 3]
    with pytest.raises(DatasetError, match=r"d\.jsonl:4: invalid JSON"):
        read_records(path)


BAD_RECORDS = {
    "missing human key": ('{"q": "b", "scores": {"other": 2}}', "scores.coherence",
                          "field 'scores.coherence': missing: no key 'coherence' here (keys: other)"),
    "human key under a number": ('{"q": "b", "scores": 2}', "scores.coherence",
                                 "field 'scores.coherence': missing: 'scores' is a number, not an object"),
    "human score is text": ('{"q": "b", "scores": {"coherence": "high"}}', "scores.coherence",
                            "field 'scores.coherence': the human score must be a finite number, got a string"),
    "human score is null": ('{"q": "b", "scores": {"coherence": null}}', "scores.coherence",
                            "must be a finite number, got null"),
    "human score is a boolean": ('{"q": "b", "scores": {"coherence": true}}', "scores.coherence",
                                 "must be a finite number, got a boolean"),
    "human score is NaN": ('{"q": "b", "scores": {"coherence": NaN}}', "scores.coherence",
                           "field 'scores.coherence': NaN is not a JSON value"),
    "Infinity elsewhere": ('{"q": "b", "scores": {"coherence": 2}, "x": [-Infinity]}', "scores.coherence",
                           "field 'x[0]': -Infinity is not a JSON value"),
    "missing field key": ('{"scores": {"coherence": 2}}', "scores.coherence",
                          "field 'q': missing: no key 'q' here (keys: scores)"),
    "field of the wrong type": ('{"q": 5, "scores": {"coherence": 2}}', "scores.coherence",
                                "field 'q': Input should be a valid string (for input)"),
}


@pytest.mark.parametrize("name", list(BAD_RECORDS))
def test_a_bad_record_names_the_file_line_and_key(name, tmp_path):
    second, human, message = BAD_RECORDS[name]
    path = tmp_path / "d.jsonl"
    path.write_text('{"q": "a", "scores": {"coherence": 1}}\n' + second + "\n")
    with pytest.raises(DatasetError) as caught:
        load_judgments(path, JudgmentSpec({"input": "q"}, human))
    assert str(caught.value).startswith(f"{path}:2: ")
    assert message in str(caught.value)


@pytest.mark.parametrize(("group", "shown"), [("[1]", "a list"), ("null", "null"), ("true", "a boolean")])
def test_a_group_must_be_a_string_or_a_number(tmp_path, group: str, shown: str):
    path = tmp_path / "d.jsonl"
    path.write_text('{"q": "a", "h": 1, "g": 1}\n{"q": "b", "h": 2, "g": ' + group + "}\n")
    with pytest.raises(DatasetError) as caught:
        load_judgments(path, JudgmentSpec({"input": "q"}, "h", group="g"))
    assert str(caught.value) == f"{path}:2: field 'g': a group must be a string or a number, got {shown}"


@pytest.mark.parametrize(
    "fields, human, group, limit, message",
    [
        ({"input": "q", "answer": "a"}, "h", None, None, "'answer' is not a test-case field"),
        ({"actual_output": "a"}, "h", None, None, "fields must give 'input'"),
        ({"input": "q"}, "scores..h", None, None, "dotted keys"),
        ({"input": "q"}, "h", "", None, "dotted keys"),
        ({"input": "q"}, "h", None, 0, "limit must be at least 1"),
    ],
)
def test_a_bad_spec_is_a_config_error(fields, human, group, limit, message):
    with pytest.raises(ConfigError, match=message):
        JudgmentSpec(fields, human, group, limit)


# -- metrics and their methods ----------------------------------------------------------


def test_a_metric_with_scoring_runs_once_per_method_and_without_writing_reasons():
    variants = metric_variants("geval", GEVAL_OPTIONS, ["top", "logprobs", "top"])
    assert [m for m, _ in variants] == ["top", "logprobs"]
    assert [metric.scoring for _, metric in variants] == ["top", "logprobs"]
    assert [metric.display_name for _, metric in variants] == ["geval (top)", "geval (logprobs)"]
    assert all(metric.include_reason is False for _, metric in variants)
    [(method, metric)] = metric_variants("geval", {**GEVAL_OPTIONS, "include_reason": True})
    assert (method, metric.include_reason) == ("logprobs", True)  # asked for: kept


def test_a_preset_name_with_a_colon_is_passed_through():
    [(method, metric)] = metric_variants("geval:coherence", {"scoring": "top"})
    name = build_metric("geval:coherence").display_name
    assert (method, metric.scoring, metric.display_name) == ("top", "top", f"{name} (top)")


def test_method_conflicts_are_config_errors():
    with pytest.raises(ConfigError, match="no scoring methods"):
        metric_variants("output_length", {}, ["logprobs"])
    with pytest.raises(ConfigError, match="not both"):
        metric_variants("geval", {**GEVAL_OPTIONS, "scoring": "top"}, ["logprobs"])
    with pytest.raises(ConfigError, match="scoring"):
        metric_variants("geval", GEVAL_OPTIONS, ["best"])


def test_output_length_counts_words_and_always_passes():
    metric = build_metric("output_length", {"max_words": 4})
    assert isinstance(metric, OutputLength)
    short = metric.measure(TestCase(input="q", actual_output=" two\twords\n"))
    assert (short.score, short.passed, short.raw_score) == (0.5, True, 2)
    long = metric.measure(TestCase(input="q", actual_output="one two three four five six"))
    assert (long.score, long.passed, long.raw_score) == (1.0, True, 6)
    assert OutputLength().threshold == 0.0 and OutputLength().max_words == 1000
    empty = metric.measure(TestCase(input="q", actual_output=""))
    assert empty.errored and "actual_output" in (empty.error or "")


# -- the command line ---------------------------------------------------------------------


def test_metric_options_are_json_when_they_parse(tiny, tmp_path):
    result = cli(
        "meta-eval", str(tiny), "-m", "output_length", "--field", "input=doc", "--field", "actual_output=out",
        "--human", "scores.quality", "--metric-option", "max_words=4", "--out", "items.jsonl", cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert [i["score"] for i in items] == [0.5] * 4  # "summary N" is 2 words of 4
    assert [i["line"] for i in items] == [1, 2, 4, 5]
    assert cli_settings._option_value("Is it coherent?") == "Is it coherent?"
    assert cli_settings._option_value("[1,3]") == [1, 3]
    assert cli_settings._option_value("true") is True


CLI_ERRORS = {
    "missing key": (["--human", "scores.coherence"], "tiny.jsonl:1: field 'scores.coherence': missing"),
    "method for a metric without": (["--human", "scores.quality", "--method", "top"], "no scoring methods"),
    "option of the wrong type": (["--human", "scores.quality", "--metric-option", "max_words=ten"],
                                 "output_length.max_words: Input should be a valid integer"),
    "bad --field": (["--human", "scores.quality", "--field", "context"], "--field takes FIELD=KEY.PATH"),
    "option given twice": (["--human", "scores.quality", "--metric-option", "max_words=4", "--metric-option",
                            "max_words=5"], "--metric-option gives max_words twice: max_words=4 and max_words=5"),
    "JSON key given twice": (["--human", "scores.quality", "--metric-option", 'weights={"a": 1, "a": 2}'],
                             "--metric-option weights"),
    "bad --threads": (["--human", "scores.quality", "--threads", "0"], "command line: backend.n_threads"),
    "unknown metric": (["--human", "scores.quality", "-m", "bleurt"], "unknown metric 'bleurt'"),
    "missing file": (["--human", "scores.quality", "--limit", "2", "nope.jsonl"], "nope.jsonl: no such file"),
}


@pytest.mark.parametrize("name", list(CLI_ERRORS))
def test_bad_input_is_one_line_and_exit_2(name, tiny, tmp_path):
    options, expected = CLI_ERRORS[name]
    data = [] if "nope.jsonl" in options else [str(tiny)]
    metric = [] if "-m" in options else ["-m", "output_length"]
    result = cli(
        "meta-eval", *data, *metric, "--field", "input=doc", "--field", "actual_output=out", *options,
        cwd=tmp_path,
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert expected in lines[0]


def test_a_file_without_records_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "empty.json").write_text("[]\n")
    result = cli("meta-eval", "empty.json", "-m", "output_length", "--human", "h", "--field", "input=q",
                       cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr == "error: empty.json: no records (the file is an empty list)\n"


def test_a_cache_folder_that_cannot_be_made_is_named_before_the_judge_loads(tiny, tmp_path):
    (tmp_path / "a-file").write_text("")
    result = cli(  # no model is there: loading the judge would be the error
        "meta-eval", str(tiny), "-m", "geval:coherence", "--human", "scores.quality", "--field", "input=doc",
        "--field", "actual_output=out", "--cache-dir", "a-file/cache", cwd=tmp_path,
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr == ("error: a-file/cache: cannot create the cache folder (Not a directory); "
                             "run with --no-cache, or give a writable --cache-dir\n")

"""Input that would change without a word, or be found bad only while judging, is refused when read.

Issue 25, items 3 and 6: duplicate keys, lone surrogates and nesting too deep to write back, in every
JSON file a user gives (datasets, conversations, human judgments, schema files, reports); a JSON
Schema checked whole (its draft, its patterns, its references); overlapping rubric ranges; a model
file that is not GGUF; a report copy that cannot be written; a CSV cell longer than the csv module's
default limit. Each is one line naming the file and where, exit 2, before any judge loads.
"""

from __future__ import annotations

import csv
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from command_line import localeval
from pydantic import ValidationError

from localeval.backends.catalog import ModelCatalog
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.data.results import RunReport
from localeval.data.strict_json import MAX_DEPTH, REPORT_DEPTH
from localeval.errors import ConfigError, DatasetError, InputError
from localeval.metaeval.evaluation import JudgmentSpec, load_judgments
from localeval.metrics import build_metric
from localeval.metrics.geval import GEval


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def load_error(path: Path) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        Dataset.load(path)
    return info.value


def where(err: DatasetError) -> tuple[str | None, int | None, str | None]:
    return err.path, err.line, err.field


def nested(levels: int, inner: Any = "x") -> Any:
    """``levels`` objects inside one another, ``inner`` in the innermost: {"a": {"a": ... inner}}."""
    value = inner
    for _ in range(levels):
        value = {"a": value}
    return value


# --- duplicate keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "line", "field"),
    [
        ("d.jsonl", '{"input": "q"}\n{"input": "q", "expected_output": "a", "expected_output": "b"}\n', 2,
         "expected_output"),
        ("d.jsonl", '{"input": "q", "metadata": {"k": 1, "j": 2, "k": 3}}\n', 1, "metadata.k"),
        ("d.jsonl", '{"input": "q", "context": ["c"], "metadata": {"runs": [{"a": 1, "a": 1}]}}\n', 1,
         "metadata.runs[0].a"),
        ("d.json", '[\n {"input": "q"},\n {"input": "q",\n  "expected_output": "a",\n  "expected_output": "b"}\n]',
         3, "expected_output"),
        ("d.csv", 'input,metadata\nq,"{""k"": 1, ""k"": 2}"\n', 2, "metadata.k"),
        ("c.jsonl", '{"turns": [{"role": "user", "content": "hi", "content": "bye"}]}\n', 1, "turns[0].content"),
    ],
)
def test_a_key_given_twice_is_refused_naming_file_line_and_key(
    tmp_path: Path, name: str, text: str, line: int, field: str
) -> None:
    # Python's parser keeps the last value: the case would be judged against "b" without a word.
    path = write(tmp_path / name, text)
    err = load_error(path)
    assert where(err) == (str(path), line, field)
    assert "appears twice" in err.detail


def test_a_key_given_twice_in_a_human_judgment_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "h.jsonl", '{"src": "a", "scores": {"coh": 2, "coh": 4}}\n')
    with pytest.raises(DatasetError) as info:
        load_judgments(path, JudgmentSpec(fields={"input": "src"}, human="scores.coh"))
    assert where(info.value) == (str(path), 1, "scores.coh")


def test_a_key_given_twice_in_the_cli_is_one_line_and_exit_2(tmp_path: Path) -> None:
    write(tmp_path / "d.jsonl", '{"input": "q", "actual_output": "{}", "expected_output": "a", "expected_output": "b"}\n')
    result = localeval("run", "d.jsonl", "-m", "exact_match", cwd=tmp_path,
                       env={"LOCALEVAL_CACHE_DIR": str(tmp_path / "cache"), "LOCALEVAL_RUNS_DIR": str(tmp_path / "runs")})
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.splitlines() == [
        "error: d.jsonl:1: field 'expected_output': the key appears twice in one object, and the first value "
        "would be dropped without a word; keep one"
    ]
    assert not (tmp_path / "runs").exists()


# --- lone surrogates --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"input": "a\\ud800b"}\n', "input"),
        ('{"input": "q", "context": ["fine", "\\udfff"]}\n', "context[1]"),
        ('{"input": "q", "metadata": {"k\\udc00": 1}}\n', "metadata.k\\udc00"),
        ('{"input": "q", "metadata": {"pair": "\\ud83d\\ude00", "half": "\\ude00\\ud83d"}}\n', "metadata.half"),
    ],
)
def test_a_lone_surrogate_is_refused_where_it_is(tmp_path: Path, text: str, field: str) -> None:
    # JSON allows the escape, but UTF-8 cannot hold it: no report of the run could be written.
    path = write(tmp_path / "d.jsonl", text)
    err = load_error(path)
    assert where(err) == (str(path), 1, field)
    assert "lone surrogate" in err.detail
    str(err).encode("utf-8")  # the message itself can be printed


def test_a_surrogate_pair_is_one_character_and_loads(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", '{"input": "\\ud83d\\ude00", "metadata": {"\\ud83d\\ude00": "\\\\ud800"}}\n')
    assert Dataset.load(path).cases == [TestCase(input="\N{GRINNING FACE}", metadata={"\N{GRINNING FACE}": "\\ud800"})]


# --- nesting ----------------------------------------------------------------------------------------


def test_the_nesting_limit_is_well_under_what_the_writers_handle() -> None:
    # pydantic's JSON parser (a resumed run's journal, cases.jsonl) gives up near 200 levels and its
    # serializer (every report) near 255; a report holds a record a few levels down.
    assert MAX_DEPTH == 64
    assert MAX_DEPTH < REPORT_DEPTH <= 100


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_record_nested_up_to_the_limit_loads_and_its_report_is_written(tmp_path: Path, suffix: str) -> None:
    # The record is level 1, metadata level 2 and the innermost object level MAX_DEPTH.
    metadata = nested(MAX_DEPTH - 1)
    record = json.dumps({"input": "q", "actual_output": "{}", "metadata": metadata})
    path = write(tmp_path / f"d{suffix}", record + "\n" if suffix == ".jsonl" else f"[{record}]")
    [case] = Dataset.load(path).cases
    assert case.metadata == metadata
    from localeval.reports import write_reports
    from localeval.run.runner import evaluate

    report = evaluate(Dataset.load(path), [build_metric("json_correctness", {})], None)
    write_reports(report, tmp_path / "run")
    assert RunReport.load(tmp_path / "run" / "report.json") == report


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
@pytest.mark.parametrize("levels", [MAX_DEPTH, MAX_DEPTH + 10, 5_000])
def test_a_record_nested_past_the_limit_is_refused(tmp_path: Path, suffix: str, levels: int) -> None:
    # At 5,000 levels Python's parser itself would raise RecursionError.
    text = '{"input": "q", "metadata": ' + '{"a": ' * levels + "1" + "}" * levels + "}"
    path = write(tmp_path / f"d{suffix}", text + "\n" if suffix == ".jsonl" else f"[\n{text}]")
    err = load_error(path)
    line = 1 if suffix == ".jsonl" else 2
    assert (err.path, err.line) == (str(path), line)
    assert err.field in ("metadata", None)
    assert f"nested deeper than {MAX_DEPTH} levels" in err.detail


def test_a_json_file_nested_too_deep_to_parse_is_refused_where_it_starts(tmp_path: Path) -> None:
    path = write(tmp_path / "d.json", "\n" + "[" * 5_000 + "]" * 5_000)  # not even a list of objects
    err = load_error(path)
    assert (err.path, err.line, err.field) == (str(path), 2, None)
    assert f"nested deeper than {MAX_DEPTH} levels" in err.detail


def test_lists_count_as_levels_too(tmp_path: Path) -> None:
    ok = {"input": "q", "metadata": {"m": json.loads("[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2))}}
    too_deep = {"input": "q", "metadata": {"m": json.loads("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))}}
    path = write(tmp_path / "d.jsonl", json.dumps(ok) + "\n" + json.dumps(too_deep) + "\n")
    err = load_error(path)
    assert where(err) == (str(path), 2, "metadata")


def test_a_deep_csv_metadata_cell_is_refused(tmp_path: Path) -> None:
    cell = json.dumps(nested(MAX_DEPTH)).replace('"', '""')
    path = write(tmp_path / "d.csv", f'input,metadata\nq,"{cell}"\n')
    err = load_error(path)
    assert where(err) == (str(path), 2, "metadata")
    assert f"nested deeper than {MAX_DEPTH} levels" in err.detail


# --- reports read by report, compare and arena ------------------------------------------------------


def saved_report(tmp_path: Path) -> tuple[Path, str]:
    report = evaluate_one(tmp_path)
    path = tmp_path / "report.json"
    report.save(path)
    return path, path.read_text(encoding="utf-8")


def evaluate_one(tmp_path: Path) -> RunReport:
    from localeval.run.runner import evaluate

    data = write(tmp_path / "d.jsonl", '{"input": "q", "actual_output": "{}"}\n')
    return evaluate(Dataset.load(data), [build_metric("json_correctness", {})], None)


def test_a_report_with_a_key_given_twice_is_refused_at_its_line(tmp_path: Path) -> None:
    path, text = saved_report(tmp_path)
    lines = text.splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if line.strip().startswith('"run_id"'))
    lines.insert(number, lines[number - 1])  # "run_id" twice
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(InputError) as info:
        RunReport.load(path)
    assert str(info.value).startswith(f"{path}:{number + 1}: field 'run_id': the key appears twice")


def test_a_report_with_a_lone_surrogate_is_refused(tmp_path: Path) -> None:
    path, text = saved_report(tmp_path)
    path.write_text(text.replace('"input": "q"', '"input": "q\\ud800"'), encoding="utf-8")
    with pytest.raises(InputError) as info:
        RunReport.load(path)
    assert "field 'cases[0].inputs.input': holds a lone surrogate" in str(info.value)


def test_a_report_nested_too_deep_is_refused_and_one_within_the_limit_loads(tmp_path: Path) -> None:
    path, text = saved_report(tmp_path)
    raw = json.loads(text)
    raw["config"] = {"x": nested(REPORT_DEPTH - 2)}  # the report is level 1, config 2, x's objects 3 and on
    path.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    assert RunReport.load(path).config == raw["config"]
    raw["config"] = {"x": nested(REPORT_DEPTH - 1)}
    path.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    with pytest.raises(InputError) as info:
        RunReport.load(path)
    assert f"nested deeper than {REPORT_DEPTH} levels" in str(info.value)


# --- json_correctness: the schema checked when the config is read -----------------------------------


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "string", "pattern": "(unclosed"}, "'(unclosed' is not a 'regex' (at $.pattern)"),
        ({"properties": {"a": {"type": "string", "pattern": "[z-a]"}}}, "'[z-a]' is not a 'regex' (at $.properties.a.pattern)"),
        ({"patternProperties": {"*bad": {}}}, "'*bad' is not a 'regex' (at $.patternProperties)"),
        ({"$schema": "http://json-schema.org/draft-04/schema#", "patternProperties": {"+x": {}}},
         "patternProperties key '+x' (at $) is not a regex"),
        ({"properties": {"a": {"$ref": "#/$defs/missing"}}},
         "$ref '#/$defs/missing' (at $.properties.a) points nowhere in the schema"),
        ({"properties": {"a": {"$ref": "#nowhere"}}}, "$ref '#nowhere' (at $.properties.a) points nowhere in the schema"),
        ({"items": {"$ref": "https://example.com/item.json"}},
         "$ref 'https://example.com/item.json' (at $.items) points outside the schema"),
        ({"$ref": "other.json#/x"}, "$ref 'other.json#/x' (at $) points outside the schema"),
        ({"$schema": "https://json-schema.org/draft/2099-01/schema", "type": "string"},
         "$schema 'https://json-schema.org/draft/2099-01/schema' is not a JSON Schema draft"),
        ({"$schema": 7}, "$schema 7 is not a JSON Schema draft"),
    ],
)
def test_a_schema_that_would_fail_every_case_is_refused_when_built(schema: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_metric("json_correctness", {"schema": schema})
    assert str(info.value).startswith("json_correctness: schema: ")
    assert problem in str(info.value)


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"sku": {"type": "string", "pattern": "^[A-Z][0-9]+$"}}, "properties": {"s": {"$ref": "#/$defs/sku"}}},
        {"$id": "https://example.com/order", "$defs": {"n": {"$id": "n.json", "type": "integer"}},
         "properties": {"n": {"$ref": "n.json"}, "m": {"$ref": "https://example.com/order#/$defs/n"}}},
        {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"type": "integer"}},
         "properties": {"a": {"$ref": "#/definitions/a"}}, "patternProperties": {"^x-": {}}},
        {"$defs": {"a": {"$anchor": "item", "type": "integer"}}, "items": {"$ref": "#item"}},
        {"properties": {"self": {"$ref": "#"}}},
        {"const": {"$ref": "not a reference, data"}, "enum": [{"pattern": "(not a regex, data"}]},
    ],
)
def test_a_schema_whose_references_resolve_inside_it_is_accepted(schema: dict[str, Any]) -> None:
    build_metric("json_correctness", {"schema": schema})


def test_a_schema_file_with_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "s.json", '{\n  "type": "object",\n  "required": ["a"],\n  "type": "array"\n}\n')
    with pytest.raises(ConfigError) as info:
        build_metric("json_correctness", {"schema_file": str(path)})
    assert str(info.value) == (
        f"json_correctness: schema_file '{path}': line 4: field 'type': the key appears twice in one object, "
        "and the first value would be dropped without a word; keep one"
    )


def test_a_schema_file_nested_too_deep_is_refused_at_the_line_it_gets_too_deep(tmp_path: Path) -> None:
    lines = ['{"properties": {"a":'] + ['{"items":'] * 5_000 + ["{}"] + ["}"] * 5_002
    path = write(tmp_path / "s.json", "\n".join(lines))
    with pytest.raises(ConfigError) as info:
        build_metric("json_correctness", {"schema_file": str(path)})
    assert str(info.value).startswith(
        f"json_correctness: schema_file '{path}': line {MAX_DEPTH}: nested deeper than {MAX_DEPTH} levels"
    )


# --- G-Eval's rubric --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rubric", "problem"),
    [
        ([(1, 3), (3, 5)], "rubric ranges 1-3 and 3-5 overlap (both hold 3)"),
        ([(4, 5), (1, 2), (2, 2)], "rubric ranges 1-2 and 2-2 overlap (both hold 2)"),
        ([(1, 5), (2, 3)], "rubric ranges 1-5 and 2-3 overlap (both hold 2-3)"),
    ],
)
def test_overlapping_rubric_ranges_are_refused(rubric: list[tuple[int, int]], problem: str) -> None:
    items = [{"score_range": list(r), "expected_outcome": f"{r}"} for r in rubric]
    with pytest.raises(ConfigError) as info:
        build_metric("geval", {"criteria": "c", "rubric": items})
    assert str(info.value) == f"geval: {problem}"


def test_rubric_ranges_that_touch_but_do_not_overlap_are_kept_in_their_order() -> None:
    items = [{"score_range": [4, 5], "expected_outcome": "good"}, {"score_range": [1, 3], "expected_outcome": "bad"}]
    metric = GEval(criteria="c", evaluation_steps=("s",), rubric=items)
    assert [item.score_range for item in metric.rubric] == [(4, 5), (1, 3)]


def test_the_conversational_geval_refuses_overlapping_rubric_ranges_too() -> None:
    items = [{"score_range": [1, 3], "expected_outcome": "a"}, {"score_range": [2, 5], "expected_outcome": "b"}]
    with pytest.raises(ConfigError, match=r"rubric ranges 1-3 and 2-5 overlap \(both hold 2-3\)"):
        build_metric("conversational_geval", {"criteria": "c", "rubric": items})


def test_a_rubric_error_in_python_is_a_validation_error() -> None:
    items = [{"score_range": [1, 3], "expected_outcome": "a"}, {"score_range": [3, 5], "expected_outcome": "b"}]
    with pytest.raises(ValidationError, match="rubric ranges 1-3 and 3-5 overlap"):
        GEval(criteria="c", evaluation_steps=("s",), rubric=items)


# --- models add: a GGUF file, by its header ---------------------------------------------------------


def gguf_header(version: int = 3, tensors: int = 1, kvs: int = 1, padding: int = 128) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, tensors, kvs) + bytes(padding)


def register(tmp_path: Path, content: bytes) -> ConfigError:
    path = tmp_path / "m.gguf"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        ModelCatalog(home=tmp_path / "home").register("mine", path)
    assert not (tmp_path / "home" / "registry.json").exists()
    return info.value


def test_a_sane_gguf_header_registers(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(gguf_header())
    assert ModelCatalog(home=tmp_path / "home").register("mine", path).path == path.resolve()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "is empty"),
        (b"PK\x03\x04" + bytes(60), "it starts with b'PK\\x03\\x04', not b'GGUF' (a zip archive"),
        (struct.pack("<Q", 40) + b'{"weight": {"dtype": "F16"}}' + bytes(40), "(a safetensors file"),
        (b"version https://git-lfs.github.com/spec/v1\noid sha256:ab\n", "(a Git LFS pointer"),
        (b"<!DOCTYPE html><html>Not found</html>", "(an HTML page"),
        (b"GGUF\x03\x00", "its GGUF header is cut short"),
        (gguf_header(version=1), "GGUF version 1, which llama.cpp does not read (it reads 2 and 3)"),
        (gguf_header(version=4), "GGUF version 4, which llama.cpp does not read (it reads 2 and 3)"),
        (gguf_header(version=3 << 24), "a big-endian GGUF file"),
        (gguf_header(tensors=0), "holds no tensors"),
        (gguf_header(tensors=10**9), "claims 1000000000 tensors and 1 metadata entries, more than its 152 bytes hold"),
        (gguf_header(kvs=2**63), "more than its 152 bytes hold"),
    ],
)
def test_a_file_that_is_not_a_gguf_model_is_refused(tmp_path: Path, content: bytes, problem: str) -> None:
    err = register(tmp_path, content)
    assert str(err).startswith(f"{tmp_path / 'm.gguf'}: not a GGUF model file: ")
    assert problem in str(err)


def test_models_add_of_a_file_that_is_not_gguf_exits_2(tmp_path: Path) -> None:
    (tmp_path / "m.gguf").write_bytes(b"PK\x03\x04" + bytes(60))
    result = localeval("models", "add", "mine", str(tmp_path / "m.gguf"), env={"LOCALEVAL_HOME": str(tmp_path / "home")})
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith(f"error: {tmp_path / 'm.gguf'}: not a GGUF model file: ")
    assert len(result.stderr.splitlines()) == 1


# --- the report's copies: checked before the judge loads --------------------------------------------


@pytest.mark.parametrize(
    ("option", "target", "why"),
    [
        ("--report", "blocker/report.json", "blocker is not a folder"),
        ("--html", "blocker/sub/report.html", "blocker is not a folder"),
        ("--junit", "a-folder", "it is a folder"),
    ],
)
def test_a_report_copy_that_cannot_be_written_is_named_before_the_judge_loads(
    tmp_path: Path, option: str, target: str, why: str
) -> None:
    write(tmp_path / "d.jsonl", '{"input": "a", "actual_output": "b"}\n')
    write(tmp_path / "blocker", "")
    (tmp_path / "a-folder").mkdir()
    # gpt-9 would be the error if the judge were loaded first; the judge's whole run, if after it.
    result = localeval("run", "d.jsonl", "-m", "geval:coherence", "--model", "gpt-9", option, target, cwd=tmp_path,
                       env={"LOCALEVAL_CACHE_DIR": str(tmp_path / "cache"), "LOCALEVAL_RUNS_DIR": str(tmp_path / "runs")})
    assert result.returncode == 2, (result.stdout, result.stderr)
    what = {"--report": "json", "--html": "html", "--junit": "junit"}[option]
    assert result.stderr == f"error: {target}: cannot write the {what} report there ({why})\n"
    assert not (tmp_path / "runs").exists()


def test_a_report_path_from_the_config_file_is_checked_too(tmp_path: Path) -> None:
    write(tmp_path / "d.jsonl", '{"input": "a", "actual_output": "b"}\n')
    write(tmp_path / "blocker", "")
    config = write(tmp_path / "eval.toml", '[dataset]\npath = "d.jsonl"\n[backend]\nmodel = "gpt-9"\n'
                   '[[metrics]]\nmetric = "geval:coherence"\n[report]\npath = "blocker/r.json"\n')
    result = localeval("run", "-c", str(config), cwd=tmp_path,
                       env={"LOCALEVAL_CACHE_DIR": str(tmp_path / "cache"), "LOCALEVAL_RUNS_DIR": str(tmp_path / "runs")})
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "cannot write the json report there (" in result.stderr and "blocker is not a folder)" in result.stderr


# --- CSV cells as long as JSONL strings -------------------------------------------------------------


def test_a_csv_cell_longer_than_the_csv_modules_default_limit_loads(tmp_path: Path) -> None:
    default = csv.field_size_limit()
    text = "word " * 40_000  # 200,000 characters, over the default 131,072
    csv_path = write(tmp_path / "d.csv", f'input,actual_output\nq,"{text}"\n')
    jsonl_path = write(tmp_path / "d.jsonl", json.dumps({"input": "q", "actual_output": text}) + "\n")
    assert Dataset.load(csv_path).cases == Dataset.load(jsonl_path).cases
    assert csv.field_size_limit() == default  # the process's own limit is left as it was

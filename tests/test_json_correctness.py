"""json_correctness: parsing, schema validation, the reason's JSON path, code blocks, bad schemas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from command_line import localeval

from localeval.config import RunConfig
from localeval.data.case import TestCase
from localeval.errors import ConfigError
from localeval.metrics import JsonCorrectness, build_metric
from localeval.testing import assert_fails, assert_passes

ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 1},
        "items": {"type": "array", "items": {"type": "object", "required": ["sku"]}, "minItems": 1},
    },
    "required": ["id", "items"],
    "additionalProperties": False,
}


def case(output: str) -> TestCase:
    return TestCase(input="Give the order as JSON.", actual_output=output)


def test_conforming_json_scores_1() -> None:
    result = JsonCorrectness(schema=ORDER).measure(case('{"id": 7, "items": [{"sku": "A1"}]}'))
    assert (result.score, result.passed, result.error) == (1.0, True, None)
    assert result.reason == "The output is JSON that conforms to the schema."
    assert result.details == {"from_code_block": False, "errors": [], "error_count": 0}


def test_the_reason_is_the_best_violation_with_its_json_path_and_details_list_them_all() -> None:
    result = JsonCorrectness(schema=ORDER).measure(case('{"id": 0, "items": [{"name": "x"}]}'))
    assert (result.score, result.passed) == (0.0, False)
    assert result.details["error_count"] == 2
    assert result.details["errors"] == [  # sorted by path, then message: the same order every time
        {"path": "$.id", "message": "0 is less than the minimum of 1"},
        {"path": "$.items[0]", "message": "'sku' is a required property"},
    ]
    assert result.reason in {f"At {e['path']}: {e['message']}" for e in result.details["errors"]}
    again = JsonCorrectness(schema=ORDER).measure(case('{"items": [{"name": "x"}], "id": 0}'))
    assert again.reason == result.reason


def test_a_missing_property_is_named_at_the_root() -> None:
    result = JsonCorrectness(schema=ORDER).measure(case('{"items": [{"sku": "A1"}], "extra": 1}'))
    assert result.score == 0.0
    assert result.reason == "At $: 'id' is a required property"
    assert [e["path"] for e in result.details["errors"]] == ["$", "$"]


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("not json", "Not JSON: Expecting value at line 1 column 1."),
        ('{"id": 1,\n "items": [}', "Not JSON: Expecting value at line 2 column 12."),
        ('{"id": NaN}', "Not JSON: NaN is not a JSON value."),
        (" \n", "Not JSON: Expecting value at line 2 column 1."),
    ],
)
def test_output_that_is_not_json_scores_0_with_where_it_broke(output: str, reason: str) -> None:
    result = JsonCorrectness(schema=ORDER).measure(case(output))
    assert (result.score, result.reason, result.error) == (0.0, reason, None)


def test_an_empty_output_is_a_missing_field() -> None:
    result = JsonCorrectness(schema=ORDER).measure(case(""))
    assert result.error == "MetricInputError: metric 'json_correctness' needs field 'actual_output', which is empty"


def test_without_a_schema_any_json_passes() -> None:
    assert JsonCorrectness().measure(case("[1, 2]")).score == 1.0
    assert JsonCorrectness().measure(case("[1, 2")).score == 0.0


FENCED = 'Here is the order:\n```json\n{"id": 7, "items": [{"sku": "A1"}]}\n```\nAnything else?'


def test_code_block_reads_the_first_fenced_block() -> None:
    assert JsonCorrectness(schema=ORDER).measure(case(FENCED)).score == 0.0
    result = JsonCorrectness(schema=ORDER, code_block=True).measure(case(FENCED))
    assert (result.score, result.details["from_code_block"]) == (1.0, True)
    bare = JsonCorrectness(schema=ORDER, code_block=True).measure(case('```\n{"id": 2, "items": [{"sku": 1}]}```'))
    assert (bare.score, bare.details["from_code_block"]) == (1.0, True)
    plain = JsonCorrectness(schema=ORDER, code_block=True).measure(case('{"id": 7, "items": [{"sku": "A1"}]}'))
    assert (plain.score, plain.details["from_code_block"]) == (1.0, False)


def test_the_testing_assertions_take_it_with_no_judge() -> None:
    assert_passes(case('{"id": 7, "items": [{"sku": "A1"}]}'), JsonCorrectness(schema=ORDER))
    assert_fails(case('{"id": 7}'), JsonCorrectness(schema=ORDER))


# --- the schema: inline or a file relative to the config; checked when the metric is built ----------


def write_config(folder: Path, metric: str) -> Path:
    (folder / "d.jsonl").write_text('{"input": "q", "actual_output": "{\\"id\\": 7, \\"items\\": [{\\"sku\\": 1}]}"}\n')
    config = folder / "eval.toml"
    config.write_text(f'[dataset]\npath = "d.jsonl"\n\n[[metrics]]\n{metric}\n')
    return config


def test_schema_file_is_relative_to_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "order.json").write_text(json.dumps(ORDER))
    config = write_config(tmp_path, 'metric = "json_correctness"\nschema_file = "schemas/order.json"')
    monkeypatch.chdir("/")
    [metric] = RunConfig.load(config).build_metrics()
    assert isinstance(metric, JsonCorrectness)
    assert metric.schema_file == tmp_path / "schemas" / "order.json"
    assert metric.measure(case('{"id": 7, "items": [{"sku": 1}]}')).score == 1.0


def test_an_inline_schema_in_toml() -> None:
    metric = build_metric("json_correctness", {"schema": {"type": "array", "maxItems": 1}})
    assert metric.measure(case("[1, 2]")).reason == "At $: [1, 2] is too long"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            '{"type": "strng"}',
            "not a valid JSON Schema: 'strng' is not valid under any of the given schemas (at $.type)",
        ),
        ('{"properties": {"id": {"minimum": "one"}}}', "not a valid JSON Schema: 'one' is not of type 'number' "
         "(at $.properties.id.minimum)"),
        ("[1]", "a JSON Schema is an object, not list"),
        ('{"type": ', "not JSON: Expecting value at line 1 column 10"),
    ],
)
def test_a_bad_schema_file_is_a_config_error_naming_the_file_and_field(
    tmp_path: Path, content: str, problem: str
) -> None:
    (tmp_path / "bad.json").write_text(content)
    config = write_config(tmp_path, 'metric = "json_correctness"\nschema_file = "bad.json"')
    with pytest.raises(ConfigError) as raised:
        RunConfig.load(config).build_metrics()
    assert str(raised.value) == (
        f"{config}: metrics[1]: json_correctness: schema_file '{tmp_path / 'bad.json'}': {problem}"
    )


def test_a_missing_schema_file_and_two_schemas_are_config_errors(tmp_path: Path) -> None:
    config = write_config(tmp_path, 'metric = "json_correctness"\nschema_file = "none.json"')
    with pytest.raises(ConfigError, match=r"schema_file '.*none.json': cannot read it \(No such file or directory\)"):
        RunConfig.load(config).build_metrics()
    with pytest.raises(ConfigError, match="give 'schema' or 'schema_file', not both"):
        build_metric("json_correctness", {"schema": {}, "schema_file": "x.json"})
    with pytest.raises(ConfigError, match=r"json_correctness: schema: not a valid JSON Schema"):
        build_metric("json_correctness", {"schema": {"type": 3}})


def test_a_composite_part_reads_its_schema_file_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "order.json").write_text(json.dumps(ORDER))
    config = write_config(
        tmp_path,
        'metric = "composite"\nmetrics = [{metric = "json_correctness", schema_file = "order.json"}, '
        '{metric = "output_length", max_words = 5}]',
    )
    [composite] = RunConfig.load(config).build_metrics()
    assert composite.measure(case('{"id": 7, "items": [{"sku": 1}]}')).error is None


def test_the_cli_exits_2_on_a_bad_schema_before_anything_is_judged(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"type": "strng"}')
    config = write_config(tmp_path, 'metric = "json_correctness"\nschema_file = "bad.json"')
    result = localeval("run", "-c", str(config))
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: {config}: metrics[1]: json_correctness: schema_file '")
    assert "bad.json': not a valid JSON Schema" in result.stderr
    assert result.stdout == ""

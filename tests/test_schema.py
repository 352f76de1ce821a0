"""Bounding arrays in JSON Schemas and validating replies against them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from localeval.backends.schema import DEFAULT_MAX_ITEMS, bound_arrays, check_schema, parse_reply
from localeval.errors import SchemaViolation

NESTED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
            },
        },
        "pair": {"prefixItems": [{"type": "string"}, {"type": "integer"}]},
        "ref": {"$ref": "#/$defs/Listing"},
    },
    "$defs": {"Listing": {"type": "array", "items": {"type": "integer"}}},
}


# --- bound_arrays ----------------------------------------------------------------------


def test_bound_arrays_bounds_every_nested_array() -> None:
    bounded = bound_arrays(NESTED, max_items=7)
    props = bounded["properties"]
    assert props["verdicts"]["maxItems"] == 7
    assert props["verdicts"]["items"]["properties"]["tags"]["maxItems"] == 7
    assert props["pair"]["maxItems"] == 7  # prefixItems makes it an array too
    assert bounded["$defs"]["Listing"]["maxItems"] == 7
    check_schema(bounded)


def test_bound_arrays_adds_nothing_else() -> None:
    bounded = bound_arrays(NESTED, max_items=7)
    expected = copy.deepcopy(NESTED)
    expected["properties"]["verdicts"]["maxItems"] = 7
    expected["properties"]["verdicts"]["items"]["properties"]["tags"]["maxItems"] = 7
    expected["properties"]["pair"]["maxItems"] = 7
    expected["$defs"]["Listing"]["maxItems"] = 7
    assert bounded == expected


def test_bound_arrays_default_bound() -> None:
    assert bound_arrays({"type": "array"}) == {"type": "array", "maxItems": DEFAULT_MAX_ITEMS}
    assert DEFAULT_MAX_ITEMS == 32


def test_bound_arrays_keeps_an_existing_max_items() -> None:
    schema = {"type": "array", "items": {"type": "string"}, "maxItems": 100}
    assert bound_arrays(schema, max_items=5)["maxItems"] == 100


def test_bound_arrays_never_bounds_below_min_items() -> None:
    schema = {"type": "array", "minItems": 40}
    assert bound_arrays(schema, max_items=5) == {"type": "array", "minItems": 40, "maxItems": 40}


def test_bound_arrays_leaves_its_input_alone() -> None:
    original = copy.deepcopy(NESTED)
    bound_arrays(NESTED, max_items=3)
    assert NESTED == original


def test_bound_arrays_leaves_non_arrays_alone() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}
    assert bound_arrays(schema) == schema


def test_bound_arrays_handles_a_property_named_items() -> None:
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "string"}}},
        "required": ["items"],
        "additionalProperties": False,
    }
    bounded = bound_arrays(schema, max_items=4)
    assert set(bounded["properties"]) == {"items"}
    assert bounded["properties"]["items"]["maxItems"] == 4
    check_schema(bounded)


def test_bound_arrays_leaves_data_keywords_alone_and_bounds_nullable_arrays() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": ["array", "null"]},
            "mode": {"enum": [{"items": [1]}], "default": {"type": "array"}},
        },
        "$defs": {"items": {"type": "string"}},
    }
    bounded = bound_arrays(schema, max_items=3)
    assert bounded["properties"]["tags"]["maxItems"] == 3
    assert bounded["properties"]["mode"] == schema["properties"]["mode"]
    assert bounded["$defs"] == {"items": {"type": "string"}}
    check_schema(bounded)


def test_parse_reply_refuses_nan_and_infinity() -> None:
    with pytest.raises(SchemaViolation, match="not JSON"):
        parse_reply('{"x": NaN}', {"type": "object"})


# --- check_schema ----------------------------------------------------------------------


def test_check_schema_accepts_a_valid_schema() -> None:
    check_schema(NESTED)  # raises on failure
    check_schema({"type": "array", "items": {"type": "string"}, "maxItems": 8})


@pytest.mark.parametrize(
    "schema", [{"type": "no-such-type"}, {"type": "array", "maxItems": -1}, {"required": "steps"}]
)
def test_check_schema_rejects_an_invalid_schema(schema: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        check_schema(schema)


# --- parse_reply -----------------------------------------------------------------------

STEPS = {
    "type": "object",
    "properties": {"steps": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
    "required": ["steps"],
    "additionalProperties": False,
}


def test_parse_reply_returns_the_value() -> None:
    assert parse_reply('{"steps": ["a", "b"]}', STEPS) == {"steps": ["a", "b"]}
    assert parse_reply(" 3 ", {"type": "integer"}) == 3


def test_parse_reply_rejects_text_that_is_not_json() -> None:
    with pytest.raises(SchemaViolation) as info:
        parse_reply('{"steps": ["a"', STEPS)
    message = str(info.value)
    assert message.startswith("reply is not JSON (")
    assert "at char 14" in message
    assert repr('{"steps": ["a"') in message


def test_parse_reply_never_repairs_json_inside_prose() -> None:
    with pytest.raises(SchemaViolation, match="reply is not JSON"):
        parse_reply('Sure! {"steps": ["a"]}', STEPS)


def test_parse_reply_names_the_failing_path() -> None:
    with pytest.raises(SchemaViolation) as info:
        parse_reply('{"steps": ["a", 5]}', STEPS)
    assert str(info.value) == "reply does not match the schema at steps/1: 5 is not of type 'string'"


def test_parse_reply_names_the_root_for_a_missing_key() -> None:
    with pytest.raises(SchemaViolation) as info:
        parse_reply("{}", STEPS)
    assert str(info.value) == "reply does not match the schema at (root): 'steps' is a required property"


def test_parse_reply_enforces_max_items() -> None:
    with pytest.raises(SchemaViolation, match="at steps: "):
        parse_reply('{"steps": ["a", "b", "c"]}', STEPS)


def test_checked_reply_refuses_a_cut_off_reply_before_parsing_it() -> None:
    from localeval.backends.base import Usage
    from localeval.backends.schema import checked_reply
    from localeval.errors import TruncatedOutput

    usage = Usage(prompt_tokens=10, completion_tokens=7)
    with pytest.raises(TruncatedOutput, match=r"^generation stopped by 'length' after 7 tokens \(max_tokens=7\)$"):
        checked_reply('{"a": 1}', {"type": "object"}, "length", usage, 7)
    reply = checked_reply('{"a": 1}', {"type": "object"}, "stop", usage, 7)
    assert (reply.value, reply.finish_reason, reply.usage) == ({"a": 1}, "stop", usage)
    with pytest.raises(SchemaViolation):
        checked_reply('{"a": 1}', {"type": "array"}, "stop", usage, 7)

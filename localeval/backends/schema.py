"""JSON Schema handling shared by every backend: bounding arrays, validating replies."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema

from localeval.backends.base import JsonReply, Usage
from localeval.errors import SchemaViolation, TruncatedOutput

#: Arrays without ``maxItems`` get this bound. A small model asked for an
#: unbounded list can repeat items until it runs out of tokens; a bound inside
#: the grammar makes it close the array instead.
DEFAULT_MAX_ITEMS = 32


def bound_arrays(schema: dict[str, Any], max_items: int = DEFAULT_MAX_ITEMS) -> dict[str, Any]:
    """A copy of ``schema`` in which every array has a ``maxItems``."""
    bounded = copy.deepcopy(schema)
    _bound(bounded, max_items)
    return bounded


# Keywords whose value is one subschema, a list of them, or a name -> subschema map.
# Only these are walked: "items" inside "properties" is a property's name, and the
# values of const, enum, default and examples are data, not schemas.
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems")
_LIST = ("prefixItems", "anyOf", "oneOf", "allOf", "items")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def _bound(schema: Any, max_items: int) -> None:
    if not isinstance(schema, dict):
        return
    types = schema.get("type")
    is_array = types == "array" or (isinstance(types, list) and "array" in types)
    if is_array or "items" in schema or "prefixItems" in schema:
        schema.setdefault("maxItems", max(max_items, schema.get("minItems", 0)))
    for key in _ONE:
        if isinstance(schema.get(key), dict):
            _bound(schema[key], max_items)
    for key in _LIST:
        if isinstance(schema.get(key), list):
            for sub in schema[key]:
                _bound(sub, max_items)
    for key in _MAP:
        if isinstance(schema.get(key), dict):
            for sub in schema[key].values():
                _bound(sub, max_items)


def check_schema(schema: dict[str, Any]) -> None:
    """Raise ``ValueError`` when ``schema`` is not a valid JSON Schema."""
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as err:
        raise ValueError(f"invalid JSON Schema: {err.message}") from err


def _reject_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)


def parse_reply(text: str, schema: dict[str, Any]) -> Any:
    """Parse ``text`` as JSON and validate it against ``schema``.

    Raises :class:`SchemaViolation` naming the first failing path; never repairs.
    """
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise SchemaViolation(f"reply is not JSON ({err.msg} at char {err.pos}): {text[:200]!r}") from err
    error = jsonschema.exceptions.best_match(
        jsonschema.validators.validator_for(schema)(schema).iter_errors(value)
    )
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise SchemaViolation(f"reply does not match the schema at {where}: {error.message}")
    return value


def checked_reply(
    text: str, schema: dict[str, Any], finish_reason: str, usage: Usage, max_tokens: int
) -> JsonReply:
    """A backend's reply, accepted only when generation ended on its own and it matches the schema.

    Every backend ends its JSON generation here: a reply cut off by the token limit
    is a :class:`TruncatedOutput`, never parsed; anything else is parsed and validated.
    """
    if finish_reason == "length":
        raise TruncatedOutput(
            f"generation stopped by 'length' after {usage.completion_tokens} tokens "
            f"(max_tokens={max_tokens})"
        )
    return JsonReply(value=parse_reply(text, schema), text=text, finish_reason=finish_reason, usage=usage)

"""JSON Schema handling shared by every backend: bounding arrays, validating replies."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema

from localeval.errors import SchemaViolation

#: Arrays without ``maxItems`` get this bound. A small model asked for an
#: unbounded list can repeat items until it runs out of tokens; a bound inside
#: the grammar makes it close the array instead.
DEFAULT_MAX_ITEMS = 32


def bound_arrays(schema: dict[str, Any], max_items: int = DEFAULT_MAX_ITEMS) -> dict[str, Any]:
    """A copy of ``schema`` in which every array has a ``maxItems``."""
    bounded = copy.deepcopy(schema)
    _bound(bounded, max_items)
    return bounded


def _bound(node: Any, max_items: int) -> None:
    if isinstance(node, dict):
        if node.get("type") == "array" or "items" in node or "prefixItems" in node:
            node.setdefault("maxItems", max(max_items, node.get("minItems", 0)))
        for value in node.values():
            _bound(value, max_items)
    elif isinstance(node, list):
        for value in node:
            _bound(value, max_items)


def check_schema(schema: dict[str, Any]) -> None:
    """Raise ``ValueError`` when ``schema`` is not a valid JSON Schema."""
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as err:
        raise ValueError(f"invalid JSON Schema: {err.message}") from err


def parse_reply(text: str, schema: dict[str, Any]) -> Any:
    """Parse ``text`` as JSON and validate it against ``schema``.

    Raises :class:`SchemaViolation` naming the first failing path; never repairs.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise SchemaViolation(f"reply is not JSON ({err.msg} at char {err.pos}): {text[:200]!r}") from err
    error = jsonschema.exceptions.best_match(
        jsonschema.validators.validator_for(schema)(schema).iter_errors(value)
    )
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise SchemaViolation(f"reply does not match the schema at {where}: {error.message}")
    return value

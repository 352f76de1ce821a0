"""JSON correctness: the output is JSON that conforms to a JSON Schema. No judge.

The schema is given inline (``schema = {...}`` in the config, ``schema=`` in
Python) or as a file (``schema_file = "order.json"``, relative to the config
file; in Python, to the working directory). It is read and checked against its
own meta-schema when the metric is built: a schema that is not valid is a
configuration error naming the file and the field, before any case is judged.
So is one that would fail every case while scoring: a ``$schema`` that names no
draft jsonschema knows, a ``pattern`` (or a ``patternProperties`` key) that is no
Python regex, a ``$ref`` that points nowhere. A schema file is read strictly
(:mod:`localeval.data.strict_json`: no key given twice).

References (``$ref``) resolve inside the schema only: one that points outside
it (another file, a URL) is refused when the metric is built, so scoring never
reads a file or the network.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.data.strict_json import json_document
from localeval.errors import DatasetError
from localeval.metrics.base import Metric, Verdict

#: A fenced code block: three backticks, an optional ``json`` tag, the code, three backticks.
CODE_BLOCK = re.compile(r"```[ \t]*(?:json)?[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)
#: A key a JSON path writes after a dot, as jsonschema's ``json_path`` does; others go in ['...'].
_PLAIN_KEY = re.compile("^[a-zA-Z][a-zA-Z0-9_]*$")
#: How many validation errors the details list, beyond the one the reason names.
MAX_ERRORS = 10


def check_schema(schema: Any) -> None:
    """Raise ``ValueError`` unless ``schema`` is a valid JSON Schema (of the draft its ``$schema`` names,
    2020-12 when it names none), with the JSON path of the first problem.

    Valid means what scoring needs too: a draft jsonschema knows, every pattern a Python regex (what
    jsonschema matches with), every ``$ref`` resolved inside the schema.
    """
    from jsonschema import FormatChecker, exceptions, validators

    if not isinstance(schema, dict):
        # ValueError, not TypeError: pydantic reports a ValueError as the field's problem.
        raise ValueError(f"a JSON Schema is an object, not {type(schema).__name__}")  # noqa: TRY004
    if "$schema" in schema:
        draft = schema["$schema"]
        if not isinstance(draft, str) or validators.validator_for(schema, default=None) is None:
            raise ValueError(
                f"$schema {draft!r} is not a JSON Schema draft jsonschema knows (e.g. "
                "'https://json-schema.org/draft/2020-12/schema', 'http://json-schema.org/draft-07/schema#')"
            )
    checker = validators.validator_for(schema)
    # Only the regex format: the meta-schemas mark every pattern with it. Other formats (uri...) are
    # checked only where optional packages are installed, and a schema's validity must not depend on that.
    regexes = FormatChecker(formats=())
    regexes.checks("regex", raises=re.error)(_compiles)
    problem = exceptions.best_match(checker(checker.META_SCHEMA, format_checker=regexes).iter_errors(schema))
    if problem is not None:
        raise ValueError(f"not a valid JSON Schema: {problem.message} (at {problem.json_path})")
    check_references(schema)


def _compiles(pattern: object) -> bool:
    """Whether ``pattern`` is a Python regex (``re.error`` if not): jsonschema matches ``pattern`` with ``re``."""
    return not isinstance(pattern, str) or re.compile(pattern) is not None


def check_references(schema: dict[str, Any]) -> None:
    """Raise ``ValueError`` for the first ``$ref`` that does not resolve inside ``schema`` (the schemas
    nested in it are found as the draft says: ``properties``, ``items``, ``$defs``... never ``const``
    or ``enum``), and for a ``patternProperties`` key that is no regex (a draft-4 meta-schema does not
    check those)."""
    import referencing
    import referencing.jsonschema
    from referencing.exceptions import InvalidAnchor, NoSuchAnchor, PointerToNowhere, Unresolvable

    root = referencing.Resource.from_contents(schema, default_specification=referencing.jsonschema.DRAFT202012)
    paths = _json_paths(schema)
    pending = [(root, referencing.Registry().resolver_with_root(root))]  # no retrieve: nothing outside resolves
    while pending:
        resource, resolver = pending.pop()
        contents = resource.contents
        if isinstance(contents, dict):
            where = paths.get(id(contents), "$")
            for key in contents.get("patternProperties") or {}:
                try:
                    re.compile(key)
                except re.error as err:
                    raise ValueError(f"patternProperties key {key!r} (at {where}) is not a regex: {err}") from None
            ref = contents.get("$ref")
            if isinstance(ref, str):
                try:
                    resolver.lookup(ref)
                except Unresolvable as err:
                    inside = isinstance(err, (PointerToNowhere, NoSuchAnchor, InvalidAnchor))
                    whither = "nowhere in the schema" if inside else "outside the schema, which localeval does not read"
                    raise ValueError(f"$ref {ref!r} (at {where}) points {whither}") from None
        pending.extend((sub, resolver.in_subresource(sub)) for sub in reversed(list(resource.subresources())))


def _json_paths(value: Any, path: str = "$", paths: dict[int, str] | None = None) -> dict[int, str]:
    """The JSON path of every object in ``value``, by its id: where a message says a subschema is."""
    paths = {} if paths is None else paths
    if isinstance(value, dict):
        paths.setdefault(id(value), path)
        for key, item in value.items():
            _json_paths(item, _json_path_key(path, key), paths)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _json_paths(item, f"{path}[{index}]", paths)
    return paths


def _json_path_key(path: str, key: str) -> str:
    """``path`` and ``key`` as jsonschema writes a JSON path: ``$.properties.id``, ``$['$defs']``."""
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}"
    escaped = key.replace("\\", "\\\\").replace("'", "\\'")
    return f"{path}['{escaped}']"


def read_schema(path: Path) -> Any:
    """The JSON in the file at ``path``, read strictly; ``ValueError`` saying why it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"cannot read it ({err.strerror})") from err
    try:
        return json_document(text, str(path))
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON: {err.msg} at line {err.lineno} column {err.colno}") from err
    except DatasetError as err:
        field = f"field '{err.field}': " if err.field else ""
        raise ValueError(f"line {err.line}: {field}{err.detail}") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


class JsonCorrectness(Metric):
    """1 when ``actual_output`` parses as JSON and conforms to the schema, else 0.

    Without a schema, any JSON passes. The reason of a failure is the parse
    error (line and column), or the schema violation that
    ``jsonschema.exceptions.best_match`` picks (the same for the same output),
    with its JSON path; ``details["errors"]`` lists up to ten violations.
    ``code_block = true`` reads the JSON from the output's first fenced code
    block (```` ```json ````), when it has one.
    """

    kind = "json_correctness"

    threshold: float = Field(1.0, ge=0.0, le=1.0)
    json_schema: dict[str, Any] | None = Field(
        None, alias="schema", description="The JSON Schema the output must conform to, inline."
    )
    schema_file: Path | None = Field(None, description="A .json file holding the schema, relative to the config.")
    code_block: bool = Field(False, description="Read the JSON from the output's first ``` code block, if any.")

    _schema: dict[str, Any] | None = PrivateAttr(None)

    @field_validator("schema_file")
    @classmethod
    def _relative_to_config(cls, path: Path | None, info: ValidationInfo) -> Path | None:
        base = (info.context or {}).get("base")
        return path if path is None or path.is_absolute() or base is None else Path(base) / path

    @model_validator(mode="after")
    def _load(self) -> JsonCorrectness:
        if self.json_schema is not None and self.schema_file is not None:
            raise ValueError("give 'schema' or 'schema_file', not both")
        where = "schema" if self.schema_file is None else f"schema_file {str(self.schema_file)!r}"
        try:
            schema = self.json_schema if self.schema_file is None else read_schema(self.schema_file)
            if schema is not None:
                check_schema(schema)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from err
        self._schema = schema
        return self

    def required_fields(self) -> tuple[str, ...]:
        return ("actual_output",)

    def verdict(self, case: TestCase, judge: Backend | None) -> Verdict:
        text, from_block = self.json_text(case.actual_output or "")
        details: dict[str, Any] = {"from_code_block": from_block}
        try:
            value = json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as err:
            return Verdict(0.0, f"Not JSON: {err.msg} at line {err.lineno} column {err.colno}.", details)
        except ValueError as err:
            return Verdict(0.0, f"Not JSON: {err}.", details)
        if self._schema is None:
            return Verdict(1.0, "The output is JSON.", details)
        errors = self.violations(value)
        details["errors"] = [{"path": e.json_path, "message": e.message} for e in errors[:MAX_ERRORS]]
        details["error_count"] = len(errors)
        if not errors:
            return Verdict(1.0, "The output is JSON that conforms to the schema.", details)
        from jsonschema.exceptions import best_match

        first = best_match(errors)
        return Verdict(0.0, f"At {first.json_path}: {first.message}", details)

    def json_text(self, output: str) -> tuple[str, bool]:
        """The text to parse, and whether it came from a code block."""
        if self.code_block:
            block = CODE_BLOCK.search(output)
            if block is not None:
                return block.group(1), True
        return output, False

    def violations(self, value: Any) -> list[Any]:
        """Every way ``value`` breaks the schema, in a stable order (by path, then message)."""
        from jsonschema import validators

        checker = validators.validator_for(self._schema)
        found = checker(self._schema, format_checker=checker.FORMAT_CHECKER).iter_errors(value)
        return sorted(found, key=lambda e: (e.json_path, e.message))

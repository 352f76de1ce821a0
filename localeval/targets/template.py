"""A target's prompt: Jinja templates of the system and user messages, rendered from a golden.

Rendering is strict (``StrictUndefined``): a template that uses a field the golden
lacks (``{{ expected_output }}`` on a golden without one) fails rather than
writing an empty string into the prompt. ``{% if context is defined %}`` makes a
part optional. Every golden is rendered before any model call
(:func:`render_all`), so such a problem stops the run at once, naming the
dataset's file, line and field and the template.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import jinja2
from jinja2 import meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

from localeval.backends.base import Message
from localeval.data.case import CASE_FIELDS, TestCase
from localeval.data.dataset import Dataset
from localeval.errors import ConfigError, DatasetError
from localeval.targets.options import DEFAULT_USER, TargetOptions


@dataclass(frozen=True)
class _Part:
    """One message's template: its role, its text, where it came from (for messages), compiled."""

    role: str
    text: str
    where: str
    compiled: jinja2.Template


class PromptTemplate:
    """The chat messages a target reads for a golden: an optional system message, then the user's."""

    def __init__(self, options: TargetOptions, source: str = "<command line>") -> None:
        """Read and compile the templates; a file that cannot be read, a syntax error or a name
        that is no golden field is a :class:`ConfigError` naming the file (or config key)."""
        self._env = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
        parts = []
        for role in ("system", "user"):
            text, where = _text(options, role, source)
            if text is not None:
                parts.append(_Part(role, text, where, self._compile(text, where)))
        self.parts = tuple(parts)

    @property
    def sha256(self) -> str:
        """The hex sha256 of the templates' text by role: a report records it."""
        canonical = json.dumps({p.role: p.text for p in self.parts}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def render(self, case: TestCase, location: str) -> tuple[Message, ...]:
        """The messages for ``case`` (found at ``location``, "file:line"); a missing field is a DatasetError."""
        fields = _fields(case)
        messages = []
        for part in self.parts:
            try:
                content = part.compiled.render(fields)
            except jinja2.UndefinedError as err:
                raise _missing(err, part, location) from err
            except jinja2.TemplateError as err:
                raise ConfigError(f"{part.where}: cannot render for {location}: {err}") from err
            messages.append(Message(role=part.role, content=content))  # type: ignore[arg-type]
        return tuple(messages)

    def _compile(self, text: str, where: str) -> jinja2.Template:
        try:
            names = meta.find_undeclared_variables(self._env.parse(text))
            compiled = self._env.from_string(text)
        except jinja2.TemplateSyntaxError as err:
            raise ConfigError(f"{where}:{err.lineno}: not a valid Jinja template ({err.message})") from err
        unknown = sorted(names - set(CASE_FIELDS))
        if unknown:
            raise ConfigError(
                f"{where}: '{unknown[0]}' is not a field of a golden (fields: {', '.join(CASE_FIELDS)})"
            )
        return compiled


def render_all(template: PromptTemplate, dataset: Dataset, todo: list[int]) -> dict[int, tuple[Message, ...]]:
    """The messages of every case in ``todo`` (indexes of single-turn cases), rendered before any model call."""
    rendered = {}
    for i in todo:
        case = dataset.cases[i]
        if not isinstance(case, TestCase):
            raise ConfigError(f"{dataset.locations[i]}: a target answers single-turn goldens, not a conversation")
        rendered[i] = template.render(case, dataset.locations[i])
    return rendered


def _text(options: TargetOptions, role: str, source: str) -> tuple[str | None, str]:
    """A message's template text and where it came from; the user's defaults to the golden's input."""
    path = getattr(options, f"{role}_file")
    if path is not None:
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except (OSError, UnicodeDecodeError) as err:
            reason = getattr(err, "strerror", None) or str(err)
            raise ConfigError(f"{source}: target.{role}_file: cannot read {path} ({reason})") from err
    inline = getattr(options, role)
    if inline is None and role == "user":
        inline = DEFAULT_USER
    return inline, f"{source}: target.{role}"


def _fields(case: TestCase) -> dict[str, Any]:
    """The golden's fields as the template sees them: absent ones (None) left out, so they are undefined."""
    return case.model_dump(mode="json", exclude_none=True)


_UNDEFINED_NAME = re.compile(r"^'([^']+)' is undefined$")


def _missing(err: jinja2.UndefinedError, part: _Part, location: str) -> DatasetError:
    path, _, line = location.rpartition(":")
    found = _UNDEFINED_NAME.match(str(err))
    return DatasetError(
        f"the target's template {part.where} uses it, and this golden has none"
        if found else f"the target's template {part.where} cannot be rendered: {err}",
        path=path or location, line=int(line) if line.isdigit() else None,
        field=found.group(1) if found else None,
    )

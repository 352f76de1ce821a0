"""The ``[target]`` table: the model that writes the outputs to judge, its prompt, its sampling.

Example::

    [target]
    name = "smollm2"                      # shown in reports
    system = "Answer in one sentence."    # Jinja; or system_file = "system.j2"
    user = "{{ input }}"                  # Jinja (the default); or user_file = "user.j2"
    temperature = 0.0
    max_tokens = 128
    seed = 0
    stop = ["\\n\\n"]

    [target.backend]                      # any judge backend kind, same keys as [backend]
    kind = "llama.cpp"
    model = "smollm2-135m-instruct"
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, SerializeAsAny, model_validator

from localeval.backends.base import TextRequest
from localeval.backends.llamacpp import LlamaCppOptions
from localeval.backends.options import BackendOptions
from localeval.backends.registry import backend_options

#: The user message when the table names none: the golden's input as it is.
DEFAULT_USER = "{{ input }}"

#: A backend table, as ``[backend]`` and ``[judges.NAME]`` take it (the kind's own options model).
TargetBackend = Annotated[SerializeAsAny[BackendOptions], PlainValidator(backend_options)]


class TargetOptions(BaseModel):
    """What produces ``actual_output`` for goldens that lack it (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("target", min_length=1, description="The target's name in reports.")
    backend: TargetBackend = Field(default_factory=LlamaCppOptions)
    system: str | None = Field(None, description="The system message's Jinja template, inline.")
    system_file: Path | None = Field(None, description="The system message's template file (relative to the config).")
    user: str | None = Field(None, description=f"The user message's Jinja template, inline (default {DEFAULT_USER!r}).")
    user_file: Path | None = Field(None, description="The user message's template file (relative to the config).")
    temperature: float = Field(0.0, ge=0.0)
    max_tokens: int = Field(256, gt=0)
    seed: int | None = Field(0, description="None with temperature > 0: sampled anew every run, never cached.")
    stop: list[str] = Field(default_factory=list, description="Strings that end the output (not included).")

    @model_validator(mode="after")
    def _one_source_each(self) -> TargetOptions:
        for message in ("system", "user"):
            if getattr(self, message) is not None and getattr(self, f"{message}_file") is not None:
                raise ValueError(f"give {message} or {message}_file, not both")
        if any(not s for s in self.stop):
            raise ValueError("a stop string must not be empty")
        return self

    def request(self, messages: tuple[object, ...]) -> TextRequest:
        """The generation request for rendered ``messages`` with these settings."""
        return TextRequest.model_validate({
            "messages": messages, "max_tokens": self.max_tokens, "temperature": self.temperature,
            "seed": self.seed, "stop": tuple(self.stop),
        })

    def rebased(self, base: Path) -> TargetOptions:
        """These options with relative template files and backend paths made relative to ``base``."""

        def rebase(p: Path | None) -> Path | None:
            return p if p is None or p.is_absolute() else Path(os.path.normpath(base / p))

        return self.model_copy(update={
            "backend": self.backend.rebased(base),
            "system_file": rebase(self.system_file),
            "user_file": rebase(self.user_file),
        })

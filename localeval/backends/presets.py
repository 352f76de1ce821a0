"""The servers the OpenAI-compatible backend knows by name: one table, one kind per row.

A preset is :class:`~localeval.backends.openai_compat.OpenAICompatOptions` with that
server's defaults (where it listens, what it supports), as a kind of its own
(``kind = "vllm"``). Its options model is a subclass with those defaults, so a config
dump holds the values actually used and validates back to the same settings. A new
server is one row of :data:`PRESETS`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import create_model
from pydantic.fields import FieldInfo

from localeval.backends.kind import BackendKind
from localeval.backends.openai_compat import EXTRAS, OpenAICompatOptions, build


def _with_default(field: FieldInfo, value: Any) -> FieldInfo:
    """``field`` (its type constraints and description kept) with another default."""
    changed = copy.copy(field)
    changed.default, changed.default_factory = value, None
    return changed


@dataclass(frozen=True)
class Preset:
    """A server by name: what ``localeval backends list`` calls it, and its defaults."""

    name: str  #: the kind's name, in a config's ``kind``
    server: str  #: what it is, for ``localeval backends list``
    defaults: Mapping[str, Any]  #: OpenAICompatOptions values; ``base_url``: where it listens by default

    def options(self) -> type[OpenAICompatOptions]:
        """Its options model: :class:`OpenAICompatOptions` with this preset's defaults."""
        base = OpenAICompatOptions.model_fields
        defaults = {key: (base[key].annotation, _with_default(base[key], value)) for key, value in self.defaults.items()}
        return create_model(  # type: ignore[call-overload, no-any-return]
            "".join(part.capitalize() for part in self.name.split("-")) + "Options",
            __base__=OpenAICompatOptions,
            __doc__=f"The {self.name} preset: the OpenAI-compatible backend with that server's defaults.",
            kind=(Literal[self.name], self.name),
            **defaults,
        )

    def kind(self) -> BackendKind:
        """Its backend kind: the OpenAI-compatible factory over its options model."""
        return BackendKind(
            self.name, self.options(), build,
            f"{self.server}: openai-compatible with its defaults ({self.defaults['base_url']})", extras=EXTRAS,
        )


#: Every preset server, in the order ``localeval backends list`` shows them.
PRESETS: tuple[Preset, ...] = (
    Preset("lmstudio", "LM Studio's server", {"base_url": "http://localhost:1234/v1", "prefill": "instruction"}),
    Preset("vllm", "vLLM", {"base_url": "http://localhost:8000/v1", "prefill": "continue",
                            "structured_output": "json_schema"}),
    # cache_prompt off: a reused prompt prefix shifts llama.cpp's logprobs (up to 0.012 in a G-Eval
    # score, measured), so a score would depend on what the server read before. A score's first
    # request reads its prompt from the start; its continuations reuse that prompt (one token each:
    # 8.8 s for 8 scores, against 80 s with every continuation reading the prompt again).
    Preset("llama-server", "llama.cpp's llama-server", {
        "base_url": "http://localhost:8080/v1", "prefill": "continue", "extra_body": {"cache_prompt": False},
        "reuse_score_prompt": True,
    }),
    # Its server does not continue a final assistant message; the completion prefill gives the
    # in-process scores (0.645161 both on the test case). ChatML is the default model's (SmolLM2)
    # template: another model needs its own chat_template. It serves one request at a time and
    # keeps the last prompt's KV state: requests sent one by one, in the run's prefix order, reuse
    # it; sent four at once, the server picks the order and re-reads shared prefixes. Its sampling
    # defaults (repeat_penalty 1.1, top_k 40, top_p 0.95, min_p 0.05) are set to the in-process
    # backend's: the model's own distribution, unpenalized.
    Preset("llama-cpp-python", "llama-cpp-python's server", {
        "base_url": "http://localhost:8000/v1", "prefill": "completion", "chat_template": "chatml",
        "structured_output": "json_object", "max_concurrency": 1,
        "extra_body": {"repeat_penalty": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0},
    }),
    Preset("ollama-openai", "Ollama's OpenAI-compatible API", {"base_url": "http://localhost:11434/v1",
                                                              "prefill": "continue"}),
)

#: Each preset's backend kind, in :data:`PRESETS` order: what :mod:`localeval.backends.builtin` registers.
KINDS: tuple[BackendKind, ...] = tuple(preset.kind() for preset in PRESETS)

"""The built-in backend kinds: llama.cpp in this process, Ollama, and OpenAI-compatible servers.

Each backend module declares its options model, its factory and its
:class:`~localeval.backends.kind.BackendKind` (``KIND``) beside the backend, as a
plugin's module would; this list registers them. The modules import their heavy
libraries (llama.cpp's, httpx) when a backend is built, so listing the kinds and
checking a config loads neither.
"""

from __future__ import annotations

from collections.abc import Mapping

from localeval.backends import llamacpp, ollama, openai_compat, presets
from localeval.backends.kind import BackendKind

#: The kinds localeval brings, by name, in the order ``localeval backends list`` shows them.
BUILTIN_KINDS: Mapping[str, BackendKind] = {
    kind.name: kind for kind in (llamacpp.KIND, openai_compat.KIND, ollama.KIND, *presets.KINDS)
}

"""Each backend's options beside its backend, the preset servers in one table, and a config that
names any built-in kind checked without importing what a backend needs to run (llama.cpp, httpx)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from localeval.backends import OPENAI_PRESETS, make_backend
from localeval.backends.builtin import BUILTIN_KINDS
from localeval.backends.openai_compat import OpenAICompatOptions
from localeval.backends.presets import PRESETS
from localeval.errors import ConfigError

#: Checks one config per built-in kind in a fresh interpreter, then says which heavy modules it imported.
CHECK = """
import json, sys
from localeval.backends.builtin import BUILTIN_KINDS
from localeval.config import RunConfig
for name, kind in BUILTIN_KINDS.items():
    required = [key for key, field in kind.options.model_fields.items() if field.is_required() and key != "kind"]
    table = {"kind": name, **{key: "http://127.0.0.1:9/v1" if key == "base_url" else "m" for key in required}}
    if "model" in kind.options.model_fields:
        table["model"] = "m"
    config = RunConfig.model_validate({"backend": table, "metrics": [{"metric": "geval", "criteria": "Correct."}]})
    config.build_metrics()
print(json.dumps(sorted(m for m in ("llama_cpp", "httpx", "ollama", "numpy") if m in sys.modules)))
"""


def test_checking_a_config_of_every_kind_imports_no_backend_library() -> None:
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_each_built_in_kind_declares_its_options_beside_its_backend() -> None:
    """A kind's options model, its factory and the kind itself are in one module, as a plugin's are."""
    for name, kind in BUILTIN_KINDS.items():
        home = sys.modules[kind.factory.__module__]
        if name in OPENAI_PRESETS:  # the OpenAI-compatible model with the preset's defaults
            assert issubclass(kind.options, OpenAICompatOptions)
            assert home.KIND.options is OpenAICompatOptions
        else:
            assert (kind.options.__module__, home.KIND) == (kind.factory.__module__, kind)
    assert BUILTIN_KINDS["llama.cpp"].options.__module__ == "localeval.backends.llamacpp"


def test_the_presets_are_one_table_each_row_a_kind_with_its_defaults() -> None:
    assert OPENAI_PRESETS == tuple(preset.name for preset in PRESETS)
    assert [name for name in BUILTIN_KINDS if name in OPENAI_PRESETS] == list(OPENAI_PRESETS)
    for preset in PRESETS:
        kind = BUILTIN_KINDS[preset.name]
        options = kind.parse({"model": "m"})
        assert options.kind == preset.name
        assert {key: getattr(options, key) for key in preset.defaults} == dict(preset.defaults)
        assert kind.description == (f"{preset.server}: openai-compatible with its defaults "
                                    f"({preset.defaults['base_url']})")
    llama_server = BUILTIN_KINDS["llama-server"].parse({})
    assert (llama_server.base_url, llama_server.extra_body) == (  # type: ignore[attr-defined]
        "http://localhost:8080/v1", {"cache_prompt": False})


def test_a_preset_checks_its_options_as_the_kind_it_extends() -> None:
    with pytest.raises(ConfigError, match=r"^vllm backend option prefill: Input should be 'continue', "):
        make_backend("vllm", prefill="sideways")

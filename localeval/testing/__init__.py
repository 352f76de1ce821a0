"""What users' tests import: assertions, the scripted judge, and the pytest plugin.

``assertions`` (``assert_passes``, ``Expect``, ``cases``, …), ``scripted``
(``ScriptedJudge``: canned replies, no model), ``pytest_plugin`` (the
``localeval_judge`` fixture and marker, loaded by pytest through an entry point).
``recording`` is where the assertions tell what they judged (nobody listens outside
pytest); under pytest, ``collected``, ``summary`` and ``session_report`` turn it into
JUnit properties, the session's summary table and its localeval report.

The names are imported on first use, so that pytest loading the plugin (a module of
this package, in every pytest session of a venv with localeval) imports nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localeval.testing.assertions import (
        Expect,
        assert_evaluation,
        assert_fails,
        assert_passes,
        assert_score,
        assert_test,
        cases,
        clear_prepared,
        describe,
        prepared,
    )
    from localeval.testing.scripted import ScriptedJudge, ScriptExhausted

_SCRIPTED = {"ScriptedJudge", "ScriptExhausted"}
__all__ = [
    "Expect",
    "ScriptExhausted",
    "ScriptedJudge",
    "assert_evaluation",
    "assert_fails",
    "assert_passes",
    "assert_score",
    "assert_test",
    "cases",
    "clear_prepared",
    "describe",
    "prepared",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'localeval.testing' has no attribute {name!r}")
    module = "localeval.testing.scripted" if name in _SCRIPTED else "localeval.testing.assertions"
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

"""The scripted judge under the name the tests have always used for it.

It is public now, as :class:`localeval.testing.ScriptedJudge`; tests import
``from scripted import ScriptedBackend``: ``tests/`` has no ``__init__.py``, so
pytest's default (prepend) import mode puts ``tests/`` on ``sys.path``.
"""

from localeval.scripted import FULL_CAPABILITIES, ScriptedJudge, ScriptExhausted

ScriptedBackend = ScriptedJudge

__all__ = ["FULL_CAPABILITIES", "ScriptExhausted", "ScriptedBackend"]

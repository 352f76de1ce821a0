"""localeval inside other tools' runs: their hooks call localeval's metrics and judges.

``promptfoo`` (:mod:`localeval.integrations.promptfoo`): ``get_assert``, a promptfoo Python
assertion that scores promptfoo's output with any localeval metric and judge (docs/promptfoo.md).

Nothing is imported here: a tool imports the module of its own integration.
"""

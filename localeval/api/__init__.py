"""The Python API above the engine: a run from Python as ``localeval run`` makes one.

:func:`~localeval.api.evaluation.evaluate` (``localeval.evaluate``) and its twin for event loops,
:func:`~localeval.api.evaluation.aevaluate`; :func:`~localeval.api.runs.runs`, the runs
``localeval runs`` lists. Judges given by name or table: :mod:`localeval.api.judges`.
"""

"""The Data layer: cases and datasets in, results out.

``case`` (the case types), ``dataset`` (``Dataset``: load, save), ``records`` (raw
records of JSONL, JSON and CSV files with their lines), ``case_reader`` (a record →
a validated case), ``conversations`` (a record → a conversation), ``record_writer``
(cases → files), ``results`` (what a metric and a run report).
"""

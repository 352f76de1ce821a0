"""The Data layer: cases and datasets in, results out.

``case`` (the case types), ``dataset`` (``Dataset``: load, save), ``records`` (raw
records of JSONL, JSON and CSV files with their lines), ``strict_json`` (the one strict
JSON reader: no key twice, no NaN, no lone surrogate, no nesting past ``MAX_DEPTH``),
``case_reader`` (a record → a validated case), ``conversations`` (a record → a
conversation), ``record_writer`` (cases → files), ``results`` (what a metric and a run
report).
"""

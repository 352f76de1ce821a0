"""The arena's settings without ``--config``: those of the first run's own config.

A run records its config in its journal's header (:func:`~localeval.cli.runs.recorded_config`,
its server URLs whole), and in its report. The arena keeps of it what judges: the judges
(``[backend]``, ``[judges.NAME]``), the cache, the plugins, ``[metrics_defaults]``, and its
arena metrics; a run without any lends its G-Eval metrics, each becoming an arena metric
of the same criteria and steps (:func:`arena_metric`). Its dataset, targets, reports, gates,
name and tags are the run's, not the arena's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from localeval.cli.runs import JOURNAL, find_run, load_report, recorded_config
from localeval.config import RunConfig
from localeval.errors import ConfigError, InputError, first_problem
from localeval.metrics.arena import NOT_PARAMETERS, Arena
from localeval.metrics.geval import GEval
from localeval.paths import Paths
from localeval.run.folders import PYTHON_SOURCE
from localeval.run.journal import recorded_header

#: The options of a G-Eval that mean the same in the arena. Left out: its threshold, strict mode
#: and rubric (a score on its scale, not a preference), its score range and layout, and its prompt
#: files (written for G-Eval's prompts); ``scoring = "top"``, which the arena has not, is left to the default.
SHARED_OPTIONS = ("name", "judge", "judge_name", "criteria", "evaluation_steps", "include_reason",
                  "allow_fallback", "min_covered_mass", "samples", "temperature", "seed")


def run_settings(ref: str, paths: Paths) -> RunConfig:
    """The config run ``ref`` (id, folder or report.json) started with: its journal's, else its report's."""
    folder = Path(ref).parent if Path(ref).is_file() else find_run(ref, paths.runs)
    if not (folder / JOURNAL).is_file():
        try:
            return RunConfig.model_validate(load_report(ref, paths.runs).config)
        except ValidationError as err:  # a report written by another localeval, whose settings differ
            where, message = first_problem(err)
            raise InputError(f"run {ref}: its report's config cannot be read ({where}: {message}); "
                             "pass the arena's with --config") from err
    header = recorded_header(folder / JOURNAL)  # read only: the run may still be writing it
    if header.config_source == PYTHON_SOURCE:  # its judges were Python objects: no config holds them
        raise ConfigError(f"run {header.run_id} was started from Python: no config holds its judge; "
                          "pass the arena's with --config")
    return recorded_config(header, folder / JOURNAL)


def arena_settings(config: RunConfig, run: str) -> tuple[RunConfig, str]:
    """The arena's settings from the ``config`` of ``run``, and a line naming the metrics reused and those skipped.

    :class:`ConfigError` when the run has neither an arena metric nor a G-Eval one.
    """
    arenas = [entry for entry in config.metrics if entry.get("metric") == Arena.kind]
    taken = arenas or [entry for entry in config.metrics if entry.get("metric") == GEval.kind]
    reused = arenas or [arena_metric(entry) for entry in taken]
    skipped = [_label(entry) for entry in config.metrics if entry not in taken]
    if not reused:
        raise ConfigError(f"run {run} has no arena or G-Eval metric to judge with"
                          f"{' (it has ' + ', '.join(skipped) + ')' if skipped else ''}; pass the arena's with --config")
    how = "its arena metrics" if arenas else "its G-Eval metrics as arena metrics"
    line = (f"Arena settings of run {run}: its judges and {how}: {', '.join(_label(e) for e in taken)}"
            f"{'; skipped: ' + ', '.join(skipped) if skipped else ''}")
    settings = RunConfig(plugins=config.plugins, backend=config.backend, judges=config.judges, metrics=reused,
                         metrics_defaults=config.metrics_defaults, cache=config.cache, source=config.source)
    return settings, line


def arena_metric(geval: dict[str, Any]) -> dict[str, Any]:
    """A G-Eval's ``[[metrics]]`` table as an arena's: the options they share (:data:`SHARED_OPTIONS`), and
    the fields it shows the judge but the output, since the arena's outputs are the contestants."""
    shown = geval.get("evaluation_params", GEval.model_fields["evaluation_params"].default)
    table = {key: value for key, value in geval.items() if key in SHARED_OPTIONS}
    table |= {"metric": Arena.kind, "evaluation_params": [p for p in shown if p not in NOT_PARAMETERS],
              "field_labels": {k: v for k, v in geval.get("field_labels", {}).items() if k not in NOT_PARAMETERS}}
    if geval.get("scoring") in ("logprobs", "sampling"):
        table["scoring"] = geval["scoring"]
    return table


def _label(entry: dict[str, Any]) -> str:
    """How a ``[[metrics]]`` table is named: its name, else its kind."""
    return str(entry.get("name") or entry.get("metric"))

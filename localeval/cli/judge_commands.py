"""The commands about judges themselves: ``check-judge`` (the planted pairs; option parsing only)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from localeval.cli.options import (
    BackendOption,
    BaseUrlOption,
    CacheDirOption,
    ConfigOption,
    ModelOption,
    NoCacheOption,
    ThreadsOption,
    stderr,
    stdout,
    user_paths,
)


def check_judge(
    config: ConfigOption = None,
    judge: Annotated[str | None, typer.Option("--judge", help="Check the config's \\[judges.NAME] instead of \\[backend].")] = None,
    family: Annotated[list[str] | None, typer.Option("--family", help="Only this family (e.g. faithfulness) or human set (e.g. human-qags-xsum-consistency); repeatable.")] = None,
    pairs: Annotated[int | None, typer.Option(help="Only the first N planted pairs of each family.")] = None,
    report: Annotated[Path | None, typer.Option(help="Also write the check here (JSON).")] = None,
    verdicts: Annotated[str, typer.Option(
        "--verdicts", help="How the verdict-list metrics read their verdicts: written (as a run does by default) or "
        "weighted (verdict_reading = \"weighted\": checked and stored as FAMILY+weighted).")] = "written",
    model: ModelOption = None,
    backend: BackendOption = None,
    base_url: BaseUrlOption = None,
    threads: ThreadsOption = None,
    no_cache: NoCacheOption = False,
    cache_dir: CacheDirOption = None,
) -> None:
    """Put a judge through planted pairs, a good and a planted-bad answer for each metric family, before
    its verdicts are trusted: how often it scores the good one better, how many bad ones fail at the
    metric's threshold, and the threshold that best separates them (chosen on half the pairs, measured
    on the other half). Then the G-Eval presets score excerpts of human-judgment sets (QAGS, Topical-Chat)
    and their agreement with people is printed. Stored under the judge's fingerprint: every run then says how far to trust it,
    and threshold = "calibrated" reads it. Cached like every judge call: a second check is instant.

    The config file (--config) gives the judge checked: its \\[backend], or the \\[judges.NAME] --judge names.

    --verdicts weighted checks the metrics that give verdicts on items (faithfulness, bias, ...) reading them
    weighted by the judge's probabilities, as a run with verdict_reading = "weighted" does, and stores each
    as its own family (faithfulness+weighted): a run is trusted by the check of the reading it uses.

    Exit codes: 0 done; 3 done, but some variants could not be scored (counted, left out); 2 bad usage.
    """
    from localeval.cli.judge_check import check_settings_from_cli, run_check

    settings = check_settings_from_cli(
        config=config, judge=judge, model=model, backend=backend, base_url=base_url, threads=threads,
        families=family, pairs=pairs, no_cache=no_cache, cache_dir=cache_dir, report=report, verdicts=verdicts,
    )
    raise typer.Exit(run_check(settings, user_paths(), stdout(), stderr(), os.environ))

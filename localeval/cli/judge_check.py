"""The glue of ``localeval check-judge``: a judge through the planted pairs, stored, printed; and a run's trust lines."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from localeval.backends.llamacpp import LlamaCppOptions
from localeval.backends.options import BackendOptions
from localeval.cli.console import progress_bar
from localeval.cli.exits import EXIT_ERRORED, EXIT_OK
from localeval.cli.loading import make_cache_folder
from localeval.cli.settings import backend_overrides
from localeval.config import CacheConfig, RunConfig
from localeval.data.results import JudgeTrust
from localeval.errors import ConfigError
from localeval.files import write_text_atomically
from localeval.judge import load_judge
from localeval.metaeval.check import CheckStore, FamilyCheck, JudgeCheck, check_judge, now
from localeval.metaeval.families import BY_NAME, FAMILIES, WEIGHTED_FAMILIES, Family, reads_verdicts, weighted
from localeval.metaeval.human_sets import HUMAN_BY_NAME, HUMAN_SETS, HumanAgreement, HumanSet, human_sets_named
from localeval.paths import Paths
from localeval.reports.terminal import print_line, print_table
from localeval.reports.trust import share, trust_lines
from localeval.run.events import Events


@dataclass(frozen=True)
class CheckSettings:
    """What ``localeval check-judge`` was asked to do, checked."""

    backend: BackendOptions
    cache: CacheConfig
    families: tuple[Family, ...]
    human_sets: tuple[HumanSet, ...]
    pairs: int | None = None
    report: Path | None = None


def check_settings_from_cli(
    *, config: Path | None, judge: str | None, model: str | None, backend: str | None,
    base_url: str | list[str] | None, threads: int | None, families: Sequence[str] | None, pairs: int | None,
    no_cache: bool, cache_dir: Path | None, report: Path | None, verdicts: str = "written",
) -> CheckSettings:
    """The command line's options, parsed and checked; a problem is a one-line ``ConfigError``."""
    run_config = RunConfig.load(config) if config is not None else None
    base: BackendOptions = LlamaCppOptions()
    if run_config is not None:
        base = run_config.backend
        if judge is not None:
            if judge not in run_config.judges:
                known = ", ".join(sorted(run_config.judges)) or "none"
                raise ConfigError(f"--judge {judge}: there is no [judges.{judge}] table in {config} (judges: {known})")
            base = run_config.judges[judge]
    elif judge is not None:
        raise ConfigError("--judge names a [judges.NAME] table of a config: give --config too")
    unknown = [f for f in families or () if f not in BY_NAME and f not in HUMAN_BY_NAME]
    if unknown:
        raise ConfigError(f"--family {unknown[0]}: no such family or human set "
                          f"(families: {', '.join(BY_NAME)}; human sets: {', '.join(HUMAN_BY_NAME)})")
    if pairs is not None and pairs < 2:
        raise ConfigError("--pairs: at least 2, so each half of the pairs has one")
    cache = run_config.cache if run_config is not None else CacheConfig()
    chosen = tuple(f for f in (*FAMILIES, *WEIGHTED_FAMILIES) if f.name in families) if families else FAMILIES
    human = human_sets_named(families) if families else HUMAN_SETS
    if verdicts != "written":
        chosen, human = weighted_choice(verdicts, chosen, human, named=bool(families))
    return CheckSettings(
        backend=backend_overrides(base, backend, model, base_url, threads),
        cache=CacheConfig(enabled=cache.enabled and not no_cache, dir=cache_dir or cache.dir),
        families=chosen, human_sets=human, pairs=pairs, report=report,
    )


def weighted_choice(
    verdicts: str, families: Sequence[Family], human_sets: Sequence[HumanSet], *, named: bool
) -> tuple[tuple[Family, ...], tuple[HumanSet, ...]]:
    """``--verdicts weighted``: the weighted twins of the families whose metric gives verdicts, and no
    human set (G-Eval's); a family or set ``named`` on the command line that has no verdicts is refused."""
    if verdicts != "weighted":
        raise ConfigError(f"--verdicts {verdicts}: give 'written' or 'weighted'")
    plain = [f.name for f in families if not reads_verdicts(f)] + [h.name for h in human_sets]
    if named and plain:
        raise ConfigError(f"--verdicts weighted: {plain[0]} gives no verdicts to weigh (the families that do: "
                          f"{', '.join(f.name for f in FAMILIES if reads_verdicts(f))})")
    return tuple(weighted(f) for f in families if reads_verdicts(f)), ()


def run_check(settings: CheckSettings, paths: Paths, out: Console, err: Console, environ: Mapping[str, str]) -> int:
    """Check the judge, store the result under its fingerprint, print the table; returns the exit code."""
    make_cache_folder(settings.cache, paths, True)
    store = CheckStore(paths.judge_checks)
    with ExitStack() as stack:
        judge = load_judge(settings.backend, settings.cache, paths, environ, stack, err)

        def checked(done: FamilyCheck | HumanAgreement) -> None:  # stored as it finishes: an interruption keeps it
            one = (JudgeCheck(judge=judge.fingerprint, checked_at=now(), families=[done])
                   if isinstance(done, FamilyCheck) else
                   JudgeCheck(judge=judge.fingerprint, checked_at=now(), families=[], human=[done]))
            print_line(err, escape(family_line(done) if isinstance(done, FamilyCheck) else human_line(done)))
            store.save(one.merged_into(store.load(judge.fingerprint)))

        with progress_bar(err) as listen:
            check = check_judge(judge, settings.families, settings.human_sets, limit=settings.pairs,
                                events=Events(listen), checked=checked)
    path = store.save(check.merged_into(store.load(check.judge)))
    print_check(out, check)
    print_line(out, escape(f"Stored: {path}"))
    if settings.report is not None:
        write_text_atomically(settings.report, check.model_dump_json(indent=2) + "\n")
        print_line(out, escape(f"Report: {settings.report}"))
    return EXIT_ERRORED if any(f.errored for f in check.families) or any(h.errored for h in check.human) else EXIT_OK


def family_line(f: FamilyCheck) -> str:
    """One family's check in a line, as it finishes."""
    chance = " (AT CHANCE)" if f.at_chance else ""
    return (f"{f.family}: ordered {share(f.ordered)}{chance}, bad failed {f.bad_failed}/{f.pairs - f.errored}, "
            f"good passed {f.good_passed}/{f.pairs - f.errored}, {f.errored} errored{kinds(f.error_kinds)}, "
            f"{f.judge_calls} judge calls, {f.seconds:.0f} s")


def human_line(h: HumanAgreement) -> str:
    """One human set's agreement in a line, as it finishes."""
    return (f"{h.name}: Spearman {coefficient(h.pooled.spearman)} pooled, "
            f"{coefficient(h.summary_level.spearman if h.summary_level else None)} summary-level, "
            f"{h.records - h.errored}/{h.records} records scored, {h.seconds:.0f} s")


def coefficient(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def kinds(error_kinds: Mapping[str, int]) -> str:
    """The failures by kind, as ' (SchemaViolation 2, TruncatedOutput 1)'; nothing when there were none."""
    return f" ({', '.join(f'{k} {n}' for k, n in error_kinds.items())})" if error_kinds else ""


def calls_line(check: JudgeCheck) -> str:
    """The check's judge calls in all, and the failed ones by kind: the figure a schema's robustness is read from."""
    answered = sum(f.judge_calls for f in check.families)
    made = sum(f.model_calls for f in check.families)
    failed: Counter[str] = Counter()
    for f in check.families:
        failed.update(f.error_kinds)
    return (f"Judge calls: {answered} answered ({made} by the model, {answered - made} from the cache); "
            f"failed: {sum(failed.values())}{kinds(dict(sorted(failed.items())))}")


def print_check(out: Console, check: JudgeCheck) -> None:
    """The check as tables: one row per family, then one per human set (each table only when it has rows)."""
    if check.families:
        print_families(out, check)
        print_line(out, escape(calls_line(check)))
    print_human(out, check.human)
    for family, why in check.skipped.items():
        print_line(out, escape(f"Skipped {family}: {why}"))


def print_families(out: Console, check: JudgeCheck) -> None:
    """The families' table."""
    table = Table(title=f"Judge check: {check.judge.model} ({check.judge.kind})", title_justify="left")
    for column in ("family", "pairs", "ordered", "bad failed", "good passed", "at", "calibrated", "held-out acc.",
                   "errored", "s"):
        table.add_column(column, justify="left" if column == "family" else "right")
    for f in check.families:
        calibrated = f.calibrated
        table.add_row(
            f"[bold red]{f.family} (at chance)[/]" if f.at_chance else f.family,
            str(f.pairs), share(f.ordered), f"{f.bad_failed}/{f.pairs - f.errored}",
            f"{f.good_passed}/{f.pairs - f.errored}", f"{f.threshold:g}",
            "-" if calibrated is None else f"{calibrated.threshold:.3f}",
            "-" if calibrated is None else share(calibrated.held_out_accuracy),
            str(f.errored), f"{f.seconds:.0f}",
        )
    print_table(out, table)


def print_human(out: Console, human: Sequence[HumanAgreement]) -> None:
    """The presets' agreement with people on the excerpts, as a table (nothing when none was run)."""
    if not human:
        return
    table = Table(title="Agreement with human judgments (excerpts of 30-36 records: rough figures)",
                  title_justify="left")
    for column in ("set", "metric", "scored", "Spearman", "Kendall", "summary-level Spearman", "s"):
        table.add_column(column, justify="left" if column in ("set", "metric") else "right")
    for h in human:
        table.add_row(h.name, h.metric, f"{h.records - h.errored}/{h.records}", coefficient(h.pooled.spearman),
                      coefficient(h.pooled.kendall),
                      coefficient(h.summary_level.spearman if h.summary_level else None), f"{h.seconds:.0f}")
    print_table(out, table)


STYLES = {"alarm": "bold red", "warn": "yellow", "ok": "green"}


def print_trust(err: Console, trust: Sequence[JudgeTrust]) -> None:
    """The run's trust lines, on stderr beside the summary."""
    for level, text in trust_lines(trust):
        style = STYLES[level]
        err.print(f"[{style}]{escape(text)}[/]", highlight=False, soft_wrap=True)

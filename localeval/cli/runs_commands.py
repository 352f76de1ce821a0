"""``localeval runs``: the runs of the runs folder listed (``runs``, ``runs list``), removed (``runs remove``)
and pruned (``runs prune``). Reading the folder is :mod:`localeval.reports.run_index`'s; this is the options
and what the terminal, a pipe or ``--json`` shows."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from localeval.cli.options import say, stdout, user_paths
from localeval.errors import ConfigError, InputError, unknown_name

if TYPE_CHECKING:  # the library's modules are imported by the commands that run: not by every command
    from localeval.reports.run_index import RunEntry

#: The columns a piped listing writes, tab-separated, under a header line of these names.
TSV_COLUMNS = ("id", "name", "started", "status", "dataset", "dataset_sha256", "judges", "metrics",
               "config_sha256", "shared", "tags", "note")


def runs(context: typer.Context) -> None:
    """The runs of the runs folder, newest first (`runs list` filters them), and what removes them.

    The folder is LOCALEVAL_RUNS_DIR, else ~/.local/share/localeval/runs; runs kept elsewhere with
    --run-dir are not in it.
    """
    if context.invoked_subcommand is None:
        runs_list()


def runs_list(
    name: Annotated[str | None, typer.Option(help="Only runs whose name holds this text (any case).")] = None,
    tag: Annotated[str | None, typer.Option(help="Only runs with this tag.")] = None,
    dataset: Annotated[str | None, typer.Option(
        help="Only runs of a dataset whose file name holds this text, or whose sha256 starts with it.")] = None,
    status: Annotated[str | None, typer.Option(help="Only finished, interrupted, errored or unreadable runs.")] = None,
    since: Annotated[str | None, typer.Option(help="Only runs started on or after this day (2026-11-25) or time (UTC).")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="At most this many runs, the newest.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the runs as a JSON list, every field.")] = False,
) -> None:
    """List the runs, newest first: name, start, dataset and its sha256, judges, each metric's pass rate and
    mean score, status, and the sha256 of the settings that can change a score.

    A run's status is finished (its report is written), interrupted (stopped before its last result; resume
    it), errored (stopped, with results that errored) or unreadable (the note says why). Runs of the same
    dataset and config are marked (×N): their scores should agree. On a terminal, a table; piped, one
    tab-separated line per run under a header line; --json, every field.
    """
    from localeval.reports.run_index import STATUSES, RunFilter, list_runs
    from localeval.reports.terminal import visible

    if status is not None and status not in STATUSES:
        raise ConfigError(f"--status: {unknown_name('status', status, STATUSES)}")
    wanted = RunFilter(name=name, tag=tag, dataset=dataset, status=status, since=_since(since))
    entries = [e for e in list_runs(user_paths().runs) if wanted.matches(e)][:limit]
    console = stdout()
    if as_json:  # as text, not through rich: it would expand the tabs, and wrap or colour what scripts read
        console.file.write(json.dumps([e.model_dump(mode="json") for e in entries], indent=2) + "\n")
    elif console.is_terminal:
        _print_table(console, entries)
    else:
        console.file.writelines("\t".join(visible(cell) for cell in row) + "\n"
                                for row in [TSV_COLUMNS, *map(_tsv_row, entries)])


def runs_remove(
    run: Annotated[list[str], typer.Argument(help="Runs: their ids or folders.")],
) -> None:
    """Delete runs, their journal and reports. Every run named is found first: one that is not is an error,
    and nothing is deleted."""
    from localeval.reports.run_index import remove_run

    folders = [_run_folder(ref) for ref in run]
    for folder in dict.fromkeys(folders):
        remove_run(folder)
        say(f"removed {folder.name} ({folder})")


def runs_prune(
    keep: Annotated[int | None, typer.Option(min=0, help="Keep this many runs, the newest; remove the rest.")] = None,
    older_than: Annotated[float | None, typer.Option(
        min=0, help="Remove runs started more than this many days ago (with --keep: only those beyond it).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be removed; remove nothing.")] = False,
) -> None:
    """Remove old runs, asking nothing, and print each one removed. Folders that are not runs are left alone."""
    from localeval.reports.run_index import list_runs, remove_run, to_prune

    if keep is None and older_than is None:
        raise ConfigError("runs prune takes --keep N, --older-than DAYS, or both")
    age = timedelta(days=older_than) if older_than is not None else None
    doomed = to_prune(list_runs(user_paths().runs), keep, age, datetime.now(UTC))
    verb = "would remove" if dry_run else "removed"
    for entry in doomed:
        if not dry_run:
            remove_run(Path(entry.folder))
        say(f"{verb} {entry.run_id}  {_started(entry)}  {entry.status}" + (f"  {entry.name!r}" if entry.name else ""))
    say(f"{verb} {len(doomed)} run{'' if len(doomed) == 1 else 's'}")


def _run_folder(ref: str) -> Path:
    """The folder of run ``ref`` (its folder, or its id under the runs folder), which must be a run."""
    from localeval.reports.run_index import is_run

    home = user_paths().runs
    for candidate in (Path(ref), home / ref):
        if is_run(candidate):
            return candidate
    raise InputError(f"no run {ref!r}: neither a run's folder nor a run id under {home}")


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"--since takes a day (2026-11-25) or a time (2026-11-25T14:00), got {text!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _print_table(console: Console, entries: list[RunEntry]) -> None:
    from localeval.reports.terminal import print_line, print_table, printable

    if not entries:
        print_line(console, "No runs.")
        return
    table = Table()
    for column in ("id", "name", "started (UTC)", "dataset", "judges", "metrics: pass rate, mean", "status", "config"):
        table.add_column(column)
    for e in entries:
        dataset = f"{Path(e.dataset).name} {e.dataset_sha256[:8]}" if e.dataset and e.dataset_sha256 else ""
        status = {"finished": "[green]finished[/]", "interrupted": "[yellow]interrupted[/]",
                  "errored": "[red]errored[/]", "unreadable": "[red]unreadable[/]"}[e.status]
        table.add_row(
            e.run_id, printable(e.name or ""), _started(e), printable(dataset), printable(", ".join(e.judges)),
            "\n".join(printable(f"{m.metric} {_rate(m.pass_rate)} {_mean(m.mean_score)}") for m in e.metrics),
            status + (f"\n{printable(e.note)}" if e.note else ""), _config(e),
        )
    print_table(console, table)
    if any(e.shared > 1 for e in entries):
        print_line(console, "×N: N runs of the folder share this dataset and config (the same scores are expected).")


def _tsv_row(e: RunEntry) -> tuple[str, ...]:
    metrics = ",".join(f"{m.metric}:{_plain(m.pass_rate)}:{_plain(m.mean_score)}" for m in e.metrics)
    return (e.run_id, e.name or "", e.created_at or "", e.status, Path(e.dataset).name if e.dataset else "",
            e.dataset_sha256 or "",
            ",".join(e.judges), metrics, e.config_sha256 or "", str(e.shared), ",".join(e.tags), e.note)


def _started(e: RunEntry) -> str:
    started = e.started
    return started.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if started else "-"


def _config(e: RunEntry) -> str:
    if e.config_sha256 is None:
        return ""
    return e.config_sha256[:8] + (f" [bold]×{e.shared}[/]" if e.shared > 1 else "")


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _plain(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"

"""``localeval runs``: runs with names and tags listed, filtered, removed and pruned, and the folders that are
no run (or no longer readable) listed as unreadable, never a traceback.

The runs are real ones (``exact_match``: no model), and the unfinished ones are real journals cut as a
stopped run leaves them: its report missing, its journal holding some results, or one that errored.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from command_line import Project
from synthetic_runs import synthetic_runs

from localeval.cli.exits import EXIT_INPUT, EXIT_OK
from localeval.cli.runs_commands import TSV_COLUMNS
from localeval.reports.run_index import RunEntry, RunFilter, list_runs, read_run, to_prune

CASES = [{"input": "a", "actual_output": "x", "expected_output": "x"},
         {"input": "b", "actual_output": "X", "expected_output": "x"},
         {"input": "c", "actual_output": "boom", "expected_output": "x"}]
FRAGILE = '''
from localeval import metric

@metric("fragile", required=("actual_output",))
def fragile(case):
    if case.actual_output == "boom":
        raise RuntimeError("boom")
    return 1.0, "fine"
'''


class Runs(Project):
    """The folder of the module's runs; ``ids``: the finished runs' ids by what they are."""

    ids: dict[str, str]


def run(project: Project, *options: str) -> str:
    """A run of the cases with ``options``; its id."""
    done = project.localeval("run", "cases.jsonl", *options)
    assert done.returncode in (0, 1, 3), done.stderr
    return done.stderr.split("Run ", 1)[1].split()[0].rstrip(":")


def cut(folder: Path, keep: Any) -> None:
    """``folder`` as a run stopped before its reports leaves it: no report, the journal's header and the
    lines ``keep`` keeps."""
    for report in folder.glob("*"):
        if report.name != "journal.jsonl":
            report.unlink()
    header, *lines = (folder / "journal.jsonl").read_text().splitlines(keepends=True)
    (folder / "journal.jsonl").write_text(header + "".join(line for line in lines if keep(json.loads(line))))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """Three finished runs (two of the same config, named and tagged), three stopped ones, three folders
    that are not readable runs, and the arena's folder of cases."""
    project = Runs(tmp_path_factory.mktemp("runs"))
    project.write_cases(CASES)
    project.write("fragile.py", FRAGILE)
    project.write("loose.toml", '[dataset]\npath = "cases.jsonl"\n[[metrics]]\nmetric = "exact_match"\n'
                                "ignore_case = true\n")
    home = project / "runs"
    main = run(project, "-m", "exact_match", "--name", "Nightly main", "--tag", "ci")
    branch = run(project, "-m", "exact_match", "--name", "nightly branch", "--tag", "ci", "--tag", "branch")
    run(project, "-c", "loose.toml")
    fragile = run(project, "-m", "fragile", "--plugin", "fragile.py")
    shutil.copytree(home / main, home / "stopped")
    cut(home / "stopped", lambda entry: entry["case"] == 0)
    shutil.copytree(home / branch, home / "judged")
    cut(home / "judged", lambda entry: True)
    cut(home / fragile, lambda entry: entry["result"]["error"] is not None)
    (home / "garbage").mkdir()
    (home / "garbage" / "journal.jsonl").write_text("not a journal\n")
    (home / "stray").mkdir()
    (home / "stray" / "notes.txt").write_text("mine\n")
    (home / "future").mkdir()
    (home / "future" / "report.json").write_text('{"format_version": 99}\n')
    (home / "arena").mkdir()
    project.ids = {"main": main, "branch": branch, "fragile": fragile}
    yield project


def piped(project: Project, *options: str) -> list[dict[str, str]]:
    done = project.localeval("runs", *options)
    assert done.returncode == EXIT_OK, done.stderr
    header, *rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert tuple(header) == TSV_COLUMNS
    return [dict(zip(header, row, strict=True)) for row in rows]


def test_every_folder_is_listed_with_its_status_and_the_unreadable_ones_say_why(runs: Runs) -> None:
    ids = runs.ids
    rows = {row["id"]: row for row in piped(runs)}
    assert {i: (r["status"], r["note"]) for i, r in rows.items()} == {
        ids["main"]: ("finished", ""), ids["branch"]: ("finished", ""), ids["fragile"]: ("errored", "1 of 3 results, 1 errored"),
        next(i for i in rows if i not in (*ids.values(), "stopped", "judged", "garbage", "stray", "future")):
            ("finished", ""),
        "stopped": ("interrupted", "1 of 3 results"),
        "judged": ("errored", "3 of 3 results"),
        "garbage": ("unreadable", "journal.jsonl:1: not a run journal header (Expecting value)"),
        "stray": ("unreadable", "not a run: no journal.jsonl"),
        "future": ("unreadable", "report.json: report format 99 is not 1 or 2"),
    }
    main = rows[ids["main"]]
    sha = main["dataset_sha256"]
    assert (main["name"], main["tags"], main["dataset"], main["metrics"]) == (
        "Nightly main", "ci", "cases.jsonl", "exact_match:0.3333:0.3333")
    assert rows["stopped"]["metrics"] == "exact_match:1.0000:1.0000"  # the one result its journal holds
    assert rows["stopped"]["judges"] == ""  # its journal records the judges its metrics ask: none
    # main, branch and the two cut from them share the dataset and the config; --config loose.toml does not
    shared = {i: r["shared"] for i, r in rows.items() if r["dataset_sha256"] == sha and r["metrics"].startswith("exact")}
    assert sorted(shared.values()) == ["1", "4", "4", "4", "4"]
    assert len({rows[i]["config_sha256"] for i in (ids["main"], ids["branch"], "stopped", "judged")}) == 1


def test_the_json_listing_has_every_field_and_filters_combine(runs: Runs) -> None:
    done = runs.localeval("runs", "list", "--json", "--tag", "ci", "--name", "NIGHTLY")
    entries = [RunEntry.model_validate(e) for e in json.loads(done.stdout)]
    assert sorted(e.name or "" for e in entries) == ["Nightly main", "Nightly main", "nightly branch", "nightly branch"]
    assert {e.status for e in entries} == {"finished", "interrupted", "errored"}
    assert [r["id"] for r in piped(runs, "list", "--tag", "branch", "--status", "finished")] == [
        runs.ids["branch"]]
    assert {r["status"] for r in piped(runs, "list", "--status", "unreadable")} == {"unreadable"}
    assert len(piped(runs, "list", "--dataset", "cases.jsonl")) == 6
    assert len(piped(runs, "list", "--limit", "2")) == 2
    assert piped(runs, "list", "--since", "2999-01-01") == []


@pytest.mark.parametrize(("options", "problem"), [
    (["--status", "finshed"], "--status: unknown status 'finshed' (did you mean 'finished'?; "
                              "known: finished, interrupted, errored, unreadable)"),
    (["--since", "yesterday"], "--since takes a day (2026-11-25) or a time (2026-11-25T14:00), got 'yesterday'"),
])
def test_a_bad_filter_is_one_line_and_exit_2(runs: Runs, options: list[str], problem: str) -> None:
    done = runs.localeval("runs", "list", *options)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT_INPUT, "", f"error: {problem}\n")


def test_on_a_terminal_a_table_marks_the_runs_of_one_config(runs: Runs) -> None:
    done = runs.localeval("runs", TTY_COMPATIBLE="1", NO_COLOR="1", COLUMNS="250")
    assert done.returncode == EXIT_OK, done.stderr
    main = next(line for line in done.stdout.splitlines() if runs.ids["main"] in line)
    assert "Nightly main" in main and "exact_match 33% 0.333" in main and "finished" in main and "×4" in main
    assert "×N: N runs of the folder share this dataset and config" in done.stdout


def test_an_empty_or_absent_runs_folder_lists_nothing(project: Project) -> None:
    assert list_runs(project / "runs") == []
    assert piped(project) == []


# --- the library: order, filters, prune ------------------------------------------------------


@pytest.fixture
def dated(runs: Runs, tmp_path: Path) -> tuple[Path, list[str]]:
    """Ten runs a day apart, the first on 2026-11-01, and a folder that is not a run."""
    template = runs / "runs" / runs.ids["main"]
    ids = synthetic_runs(tmp_path / "runs", template, 10, datetime(2026, 11, 1, 12, tzinfo=UTC))
    (tmp_path / "runs" / "stray").mkdir()
    return tmp_path / "runs", ids


def test_runs_are_listed_newest_first_and_since_counts_from_the_start(dated: tuple[Path, list[str]]) -> None:
    home, ids = dated
    listed = [e.run_id for e in list_runs(home) if e.status == "finished"]
    assert listed == ids[::-1]
    since = RunFilter(since=datetime(2026, 11, 8, tzinfo=UTC))
    assert [e.run_id for e in list_runs(home) if since.matches(e)] == ids[:6:-1]


def test_prune_keeps_the_newest_and_the_recent_and_never_a_folder_that_is_no_run(dated: tuple[Path, list[str]]) -> None:
    home, ids = dated
    entries, now = list_runs(home), datetime(2026, 11, 11, 12, tzinfo=UTC)
    assert "stray" in {e.run_id for e in entries}
    assert [e.run_id for e in to_prune(entries, 3, None, now)] == ids[6::-1]
    assert [e.run_id for e in to_prune(entries, None, timedelta(days=7.5), now)] == ids[2::-1]
    assert [e.run_id for e in to_prune(entries, 1, timedelta(days=7.5), now)] == ids[2::-1]
    assert [e.run_id for e in to_prune(entries, 8, timedelta(days=1), now)] == ids[1::-1]


def test_runs_prune_and_remove_through_the_command(dated: tuple[Path, list[str]], project: Project) -> None:
    home, ids = dated
    env = {"LOCALEVAL_RUNS_DIR": str(home)}
    dry = project.localeval("runs", "prune", "--keep", "7", "--dry-run", **env)
    assert dry.stdout.splitlines() == [*(f"would remove {i}  2026-11-0{n + 1} 12:00  finished  'Nightly main'"
                                         for n, i in list(enumerate(ids))[2::-1]), "would remove 3 runs"]
    assert sorted(p.name for p in home.iterdir()) == sorted([*ids, "stray"])
    pruned = project.localeval("runs", "prune", "--keep", "7", **env)
    assert (pruned.returncode, pruned.stdout.splitlines()[-1]) == (EXIT_OK, "removed 3 runs")
    assert sorted(p.name for p in home.iterdir()) == sorted([*ids[3:], "stray"])
    refused = project.localeval("runs", "remove", ids[3], "nothing-here", **env)
    assert (refused.returncode, refused.stderr) == (
        EXIT_INPUT, f"error: no run 'nothing-here': neither a run's folder nor a run id under {home}\n")
    assert (home / ids[3]).is_dir()  # nothing removed: every run is found first
    removed = project.localeval("runs", "remove", ids[3], str(home / ids[4]), **env)
    assert removed.stdout.splitlines() == [f"removed {ids[3]} ({home / ids[3]})", f"removed {ids[4]} ({home / ids[4]})"]
    assert sorted(p.name for p in home.iterdir()) == sorted([*ids[5:], "stray"])
    stray = project.localeval("runs", "remove", "stray", **env)
    assert (stray.returncode, (home / "stray").is_dir()) == (EXIT_INPUT, True)
    assert project.localeval("runs", "prune", **env).stderr == (
        "error: runs prune takes --keep N, --older-than DAYS, or both\n")


def test_a_report_of_an_older_format_is_read_and_one_that_cannot_be_is_unreadable(tmp_path: Path) -> None:
    older = tmp_path / "older"
    shutil.copytree(Path(__file__).parent / "data" / "report-v1", older)
    entry = read_run(older)
    assert (entry.status, entry.name, entry.config_sha256) == ("finished", None, None)
    (older / "report.json").write_text((older / "report.json").read_text()[:-40])
    cut_short = read_run(older)
    assert cut_short.status == "unreadable" and cut_short.note.startswith("report.json:")

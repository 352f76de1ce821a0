"""Every failure of a command is one line on stderr and the exit code that says what kind it is
(localeval/cli/exits.py), never a traceback with exit 1, which CI reads as "a metric failed"."""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
from pathlib import Path

import diskcache
import pytest
from command_line import Project

from localeval.cli.exits import EXIT_ERRORED, EXIT_INPUT, EXIT_OK, EXIT_UNEXPECTED
from localeval.run.journal import Journal

CASE = '{"input": "q", "actual_output": "a", "expected_output": "a"}\n'


def one_error_line(stderr: str) -> str:
    """The one line of an error (lines before it, such as "Run …: folder", are allowed)."""
    assert "Traceback" not in stderr and "╭" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


def test_a_config_that_is_not_utf8_is_one_line(project: Project) -> None:
    project.write_cases([json.loads(CASE)])
    (project / "bad.toml").write_bytes(b'[dataset]\npath = "cases.jsonl"\n# caf\xe9\n')
    result = project.localeval("run", "-c", "bad.toml", "-m", "exact_match")
    assert result.returncode == EXIT_INPUT, result.stderr
    assert one_error_line(result.stderr) == "error: bad.toml: not UTF-8 text (byte 0xe9 at offset 36)"


def test_a_config_nested_too_deeply_is_one_line(project: Project) -> None:
    project.write("deep.toml", "a = " + "[" * 2000 + "]" * 2000 + "\n")
    result = project.localeval("run", "-c", "deep.toml", "-m", "exact_match")
    assert result.returncode == EXIT_INPUT, result.stderr
    assert one_error_line(result.stderr) == "error: deep.toml: nested too deeply to read"


def test_a_schema_file_nested_too_deeply_is_one_line(project: Project) -> None:
    project.write_cases([json.loads(CASE)])
    project.write("deep.json", "[" * 1000 + "]" * 1000)
    project.write("eval.toml", '[dataset]\npath = "cases.jsonl"\n'
                               '[[metrics]]\nmetric = "json_correctness"\nschema_file = "deep.json"\n')
    result = project.localeval("run", "-c", "eval.toml")
    assert result.returncode == EXIT_INPUT, result.stderr
    assert one_error_line(result.stderr).startswith("error: eval.toml: metrics[1]")


@pytest.mark.parametrize("content", [b"\xff\xfe{}", b'{"a":' * 100_000 + b"1" + b"}" * 100_000])
def test_compare_of_a_report_it_cannot_read_is_one_line(project: Project, content: bytes) -> None:
    (project / "report.json").write_bytes(content)
    result = project.localeval("compare", "report.json", "report.json")
    assert result.returncode == EXIT_INPUT, result.stderr
    assert one_error_line(result.stderr).startswith("error: report.json")


def damaged_cache(folder: Path, how: str) -> Path:
    """A cache folder whose cache.db is not a database, or was cut in half."""
    folder.mkdir()
    if how == "garbage":
        (folder / "cache.db").write_bytes(b"\x07" * 4096)
    else:
        with diskcache.Cache(str(folder)) as store:
            for i in range(200):
                store.set(str(i), "x" * 1000)
        data = (folder / "cache.db").read_bytes()
        (folder / "cache.db").write_bytes(data[: len(data) // 2])
    return folder


@pytest.mark.parametrize("how", ["garbage", "truncated"])
def test_a_damaged_cache_is_named_with_how_to_clear_it(project: Project, how: str) -> None:
    cache = damaged_cache(project / "cache", how)
    project.write_cases([json.loads(CASE)])
    for command in (("cache", "info"), ("run", "cases.jsonl", "-m", "geval:coherence")):
        result = project.localeval(*command)
        assert result.returncode == EXIT_INPUT, result.stderr
        line = one_error_line(result.stderr)
        assert line.startswith(f"error: {cache / 'cache.db'}: the cache is damaged ("), line
        assert line.endswith(f"clear it with: localeval cache clear --cache-dir {cache} (or run with --no-cache)")
    cleared = project.localeval("cache", "clear")
    assert cleared.returncode == EXIT_OK, cleared.stderr
    assert cleared.stdout == f"{cache}: the cache was damaged; removed it\n"
    again = project.localeval("cache", "info")
    assert (again.returncode, again.stdout) == (EXIT_OK, f"{cache}: 0 entries, 0.0 MiB\n"), again.stderr


def unshare_mounts() -> None:
    """Skip unless this process may make a mount namespace of its own (``unshare -rm``)."""
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.skip("unshare -rm is not permitted here")


#: ``unshare -rm sh -c SCRIPT FOLDER COMMAND...``: FOLDER made read-only, then the command run.
READ_ONLY = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
#: FOLDER a tmpfs of one page, then filled, then the command run.
FULL = 'mount -t tmpfs -o size=4k tmpfs "$0" && (cat /dev/zero > "$0/filler" 2>/dev/null; exec "$@")'


def in_namespace(project: Project, script: str, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    from command_line import command

    return subprocess.run(["unshare", "-rm", "sh", "-c", script, str(folder), *command(*args)],
                          capture_output=True, text=True, env=project.environ(), cwd=project, timeout=120)


@pytest.mark.parametrize("command", ["info", "clear"])
def test_a_read_only_cache_folder_is_said_so(project: Project, command: str) -> None:
    unshare_mounts()
    cache = project / "cache"
    with diskcache.Cache(str(cache)) as store:
        store.set("k", "v")
    result = in_namespace(project, READ_ONLY, cache, "cache", command)
    assert result.returncode == EXIT_INPUT, result.stderr
    assert one_error_line(result.stderr) == (
        f"error: {cache}: the cache folder is on a read-only file system; run with --no-cache, "
        "or give a writable --cache-dir"
    )


def test_a_full_disk_at_the_start_of_a_run_is_one_line_and_leaves_no_journal(project: Project) -> None:
    unshare_mounts()
    project.write_cases([json.loads(CASE)])
    disk = project / "disk"
    disk.mkdir()
    result = in_namespace(project, FULL, disk, "run", "cases.jsonl", "-m", "exact_match",
                          "--run-dir", str(disk / "run"))
    assert result.returncode == EXIT_INPUT, result.stderr
    journal = disk / "run" / "journal.jsonl"
    assert one_error_line(result.stderr) == (
        f"error: {journal}: cannot write the run journal (No space left on device); nothing was judged"
    )


def run_in_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                   *args: str) -> tuple[int, str, str]:
    """``localeval ARGS`` in this process (so that a test can patch it): exit code, stdout, stderr."""
    from localeval.cli.app import main

    monkeypatch.setattr(sys, "argv", ["localeval", *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    out, err = capsys.readouterr()
    return int(exit_.value.code or 0), out, err


def test_a_full_disk_in_the_middle_of_a_run_stops_it_with_the_resume_command(
        project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    project.write_cases([{"input": f"q{i}", "actual_output": "a", "expected_output": "a"} for i in range(6)])
    monkeypatch.chdir(project)
    for name, value in project.env.items():
        monkeypatch.setenv(name, value)
    write = Journal._write
    calls = []

    def full_after_three(self: Journal, line: str) -> None:
        calls.append(line)
        if len(calls) > 4:  # the header and three results fit
            raise OSError(errno.ENOSPC, "No space left on device")
        write(self, line)

    monkeypatch.setattr(Journal, "_write", full_after_three)
    run_dir = project / "run"
    code, _, err = run_in_process(monkeypatch, capsys, "run", "cases.jsonl", "-m", "exact_match",
                                  "--run-dir", str(run_dir))
    assert code == EXIT_ERRORED, err
    assert one_error_line(err) == (
        f"error: the run stopped after 3 of 6 results: cannot write the run journal {run_dir / 'journal.jsonl'} "
        f"(No space left on device). Resume with: localeval run --resume {run_dir}"
    )
    monkeypatch.setattr(Journal, "_write", write)
    code, out, err = run_in_process(monkeypatch, capsys, "run", "--resume", str(run_dir))
    assert code == EXIT_OK, err
    report = json.loads((run_dir / "report.json").read_text())
    assert report["stats"]["resumed"] == 3 and len(report["cases"]) == 6


def test_an_unexpected_exception_is_one_line_naming_the_file_with_its_traceback(
        project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from localeval.cli import session

    def broken(*args: object, **kwargs: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(session, "run", broken)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    code, _, err = run_in_process(monkeypatch, capsys, "run", "cases.jsonl", "-m", "exact_match")
    assert code == EXIT_UNEXPECTED
    line = one_error_line(err)
    prefix = "error: unexpected RuntimeError: a bug. A bug in localeval; the traceback is in "
    assert line.startswith(prefix), line
    saved = Path(line.removeprefix(prefix))
    assert saved.parent == tmp_path
    text = saved.read_text()
    assert "localeval run cases.jsonl -m exact_match" in text
    assert "Traceback (most recent call last)" in text and 'raise RuntimeError("a bug")' in text


@pytest.mark.parametrize(("url", "said"), [
    ("ftp://example::bad", "starts with http:// or https://, not ftp:"),
    ("http://user:SECRET@example::bad/v1", "its port is not a number from 0 to 65535"),
    ("http://:8080/v1", "it names no host"),
])
def test_a_server_url_that_does_not_parse_is_one_line_and_exit_2(
    project: Project, tmp_path_factory: pytest.TempPathFactory, url: str, said: str,
) -> None:
    project.write_cases([json.loads(CASE)])
    result = project.localeval("run", "cases.jsonl", "-m", "answer_relevancy", "--backend", "openai-compatible",
                               "--base-url", url, "--model", "x",
                               TMPDIR=str(tmp_path_factory.mktemp("tmp")))  # where a traceback would go
    assert result.returncode == EXIT_INPUT, result.stderr
    assert said in one_error_line(result.stderr) and "SECRET" not in result.stderr


def test_backends_list_piped_is_as_wide_as_its_cells(project: Project) -> None:
    result = project.localeval("backends", "list", COLUMNS="")
    assert result.returncode == EXIT_OK, result.stderr
    assert any("A GGUF model run in this process (llama-cpp-python)." in line for line in result.stdout.splitlines())

"""The command line's conventions (issue 27, item 3): ``--version``, ``localeval metrics`` and the
table of docs/metrics.md it keeps true, "did you mean ...?" for every misspelt name, help that
reads as written, and shell completion."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import typer
from command_line import Project, localeval
from typer.testing import CliRunner

from localeval.backends.catalog import ModelCatalog
from localeval.backends.registry import backend_kind, backend_kinds
from localeval.cli.app import app, versions
from localeval.cli.exits import EXIT_INPUT, EXIT_OK
from localeval.config import RunConfig
from localeval.data.case import CASE_FIELDS, CONVERSATION_FIELDS
from localeval.data.dataset import Dataset
from localeval.errors import ConfigError, DatasetError, ModelNotFound, UnknownMetric, did_you_mean, unknown_name
from localeval.metrics import build_metric, metric_names
from localeval.metrics.registry import MetricKind, describe_metric, metric_class, metric_kinds

DOCS = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"

# --- --version ---------------------------------------------------------------------------------


def test_version_says_localevals_and_llama_cpp_pythons() -> None:
    done = localeval("--version")
    assert (done.returncode, done.stderr) == (EXIT_OK, "")
    assert done.stdout.splitlines() == [f"localeval {version('localeval')}",
                                        f"llama-cpp-python {version('llama-cpp-python')}"]


def test_version_imports_no_native_library() -> None:
    script = ("import sys\nsys.argv = ['localeval', '--version']\nfrom localeval.cli.app import main\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\n"
              "print(sorted({'llama_cpp', 'ray', 'torch'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.splitlines()[-1] == "[]"


def test_version_without_llama_cpp_python_is_localevals_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    real = importlib.metadata.version

    def version_of(name: str) -> str:
        if name == "llama-cpp-python":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "version", version_of)
    assert versions() == [f"localeval {real('localeval')}"]


# --- localeval metrics -------------------------------------------------------------------------


def rows(text: str) -> dict[str, list[str]]:
    """A printed table's rows by their first cell (rich's box characters as separators)."""
    found = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in re.split(r"[│┃]", line)[1:-1]]
        if cells and cells[0] and cells[0] != "metric":
            found[cells[0]] = cells[1:]
    return found


def shown(kind: MetricKind) -> list[str]:
    """A metric's row as ``localeval metrics`` prints it."""
    say = "its options say"
    return [say if kind.reads is None else ", ".join(kind.reads),
            say if kind.needs_judge is None else ("yes" if kind.needs_judge else "no"),
            f"{kind.threshold:g}", "lower" if kind.lower_is_better else "higher"]


def builtin_names() -> list[str]:
    """The names :func:`build_metric` takes that localeval ships (not those other tests registered here)."""
    return [name for name in metric_names() if getattr(metric_class(name), "__module__", "").startswith("localeval.")]


def test_metrics_lists_every_name_a_run_takes_one_line_each_when_piped() -> None:
    done = localeval("metrics")
    assert (done.returncode, done.stderr) == (EXIT_OK, "")
    listed = rows(done.stdout)
    assert list(listed) == builtin_names()  # piped: natural width, no cell wrapped onto a second line
    assert listed == {kind.name: shown(kind) for kind in metric_kinds() if kind.name in listed}
    assert listed["exact_match"] == ["actual_output, expected_output", "no", "1", "higher"]
    assert listed["hallucination"] == ["actual_output, context", "yes", "0.5", "lower"]
    assert listed["role_adherence"] == ["turns, chatbot_role", "yes", "0.5", "higher"]
    assert listed["geval:groundedness"] == ["input, actual_output, context", "yes", "0.5", "higher"]
    assert listed["composite"] == ["its options say", "its options say", "0.5", "higher"]


def test_metrics_lists_a_plugins_metrics(project: Project) -> None:
    project.write("mine.py", "from localeval import metric\n\n"
                  "@metric('shouting', required=('actual_output', 'input'), lower_is_better=True, threshold=0.25)\n"
                  "def shouting(case):\n    return 1.0\n")
    done = project.localeval("metrics", "--plugin", "mine.py")
    assert done.returncode == EXIT_OK, done.stderr
    assert rows(done.stdout)["shouting"] == ["actual_output, input", "no", "0.25", "lower"]
    project.write("eval.toml", 'plugins = ["mine.py"]\n')
    assert "shouting" in rows(project.localeval("metrics", "-c", "eval.toml").stdout)


def test_describing_an_unknown_metric_says_what_it_may_have_meant() -> None:
    with pytest.raises(UnknownMetric, match=r"^unknown metric 'exact_mach' \(did you mean 'exact_match'\?; known: "):
        describe_metric("exact_mach")


def docs_rows() -> dict[str, list[str]]:
    """docs/metrics.md's table of every metric: name → needs, judge, better, threshold (no markup)."""
    text = DOCS.read_text(encoding="utf-8")
    table = text.split("## Every metric", 1)[1].split("\n## ", 1)[0]
    found = {}
    for line in table.splitlines():
        if line.startswith("| `"):
            name, needs, judge, better, threshold = [cell.strip() for cell in line.split(" | ")][:5]
            found[name.strip("|` ")] = [needs, judge, better.strip("*"), threshold]
    return found


def test_the_docs_table_of_every_metric_agrees_with_the_registry() -> None:
    documented = docs_rows()
    presets = [name for name in builtin_names() if ":" in name]
    assert set(documented) == {name for name in builtin_names() if ":" not in name} | {"geval:<preset>"}
    disagree = []
    for name, (needs, judge, better, threshold) in documented.items():
        for kind in map(describe_metric, presets if name == "geval:<preset>" else [name]):
            asks = {"yes": True, "no": False}.get(judge)  # else: its options say ("if a part does")
            fields = {f for f in re.findall(r"`([a-z_]+)`", needs) if f in CASE_FIELDS + CONVERSATION_FIELDS}
            reads = None if kind.reads is None else set(kind.reads) - {"turns"}
            if name != "geval:<preset>" and (fields or None, "a conversation" in needs) != (
                    reads or None, kind.reads is not None and "turns" in kind.reads):
                disagree.append(f"{kind.name}: needs {needs!r}, reads {kind.reads}")
            if (asks, better, float(threshold)) != (
                    kind.needs_judge, "lower" if kind.lower_is_better else "higher", kind.threshold):
                disagree.append(f"{kind.name}: {judge}, {better}, {threshold} in the docs; registry: {kind}")
    assert disagree == []


# --- did you mean ...? -------------------------------------------------------------------------


def test_one_wording_for_every_misspelt_name() -> None:
    assert unknown_name("metric", "exact_mach", ["bleu", "exact_match"]) == (
        "unknown metric 'exact_mach' (did you mean 'exact_match'?; known: bleu, exact_match)")
    assert unknown_name("key", "colour", ["name", "threshold"]) == "unknown key 'colour' (known: name, threshold)"
    assert unknown_name("key", "x", []) == "unknown key 'x' (known: none)"
    assert did_you_mean("chunk_sise", ["chunk_size", "chunk_overlap", "seed"]) == (
        "did you mean 'chunk_size' or 'chunk_overlap'?")
    assert did_you_mean("smollm", ["smollm2-135m-instruct", "gemma-3-270m"]) == "did you mean 'smollm2-135m-instruct'?"
    assert did_you_mean("zz", ["zzz-model"]) == ""  # a beginning this short is no guess


def test_a_misspelt_metric() -> None:
    with pytest.raises(UnknownMetric) as info:
        build_metric("exact_mach", where="eval.toml: metrics[1]")
    assert str(info.value) == (
        f"eval.toml: metrics[1]: unknown metric 'exact_mach' (did you mean 'exact_match'?; "
        f"known: {', '.join(metric_names())})")


def test_a_misspelt_option_of_a_metric() -> None:
    with pytest.raises(ConfigError) as info:
        build_metric("exact_match", {"ignore_cas": True})
    assert str(info.value) == ("exact_match: unknown option 'ignore_cas' (did you mean 'ignore_case'?; "
                               "known: name, threshold, threshold_source, judge, ignore_case, normalize_whitespace)")


@pytest.mark.parametrize(("toml", "message"), [
    ("[dataset]\npth = 'x.jsonl'\n", "dataset: unknown key 'pth' (did you mean 'path'?; "
                                     "known: path, format, fields, list_delimiter, unknown_fields)"),
    ("datset = {}\n", "unknown key 'datset' (did you mean 'dataset' or 'gate'?; known: plugins, dataset, "),
    ("[metrics_defaults]\nreason = false\n",
     "metrics_defaults: unknown key 'reason' (did you mean 'reasons'?; known: reasons, threshold, verdict_reading, prune_below)"),
    ("[[targets]]\nname = 'a'\nsystme = 'x'\n", "targets.0: unknown key 'systme' (did you mean 'system'?; "),
    ("[cache]\nenabled = true\nnothing_like_it = 1\n", "cache: unknown key 'nothing_like_it' (known: enabled, dir)"),
])
def test_a_misspelt_key_of_a_config_file(tmp_path: Path, toml: str, message: str) -> None:
    path = tmp_path / "eval.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as info:
        RunConfig.load(path)
    assert str(info.value).startswith(f"{path}: {message}")


def test_a_misspelt_command_is_one_line_and_exit_code_2() -> None:
    done = localeval("rn")
    assert (done.returncode, done.stdout) == (EXIT_INPUT, "")
    assert done.stderr == ("error: unknown command 'rn' (did you mean 'run' or 'runs'?; known: run, synthesize, "
                           "generate, report, compare, arena, meta-eval, check-judge, metrics, view, models, cache, "
                           "backends, runs)\n")
    inner = localeval("models", "lst")
    assert (inner.returncode, inner.stderr) == (
        EXIT_INPUT, "error: unknown command 'lst' (did you mean 'list'?; known: list, pull, add, remove)\n")
    assert localeval("xyzzy").stderr.startswith("error: unknown command 'xyzzy' (known: run, ")


def test_a_misspelt_model(tmp_path: Path) -> None:
    catalog = ModelCatalog(tmp_path)
    known = ", ".join(spec.name for spec in catalog.specs())
    with pytest.raises(ModelNotFound) as info:
        catalog.get("smollm2-135m")
    assert str(info.value) == (f"unknown model 'smollm2-135m' (did you mean 'smollm2-135m-instruct'?; known: {known}); "
                               "see `localeval models list`")


def test_a_misspelt_backend_kind() -> None:
    with pytest.raises(ConfigError) as info:
        backend_kind("olama")
    assert str(info.value) == f"unknown backend 'olama' (did you mean 'ollama'?; known: {', '.join(backend_kinds())})"


def test_a_misspelt_field_in_a_mapping_or_a_file(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"query": "q", "actual_ouput": "a"}\n')
    with pytest.raises(DatasetError) as mapped:
        Dataset.load(path, fields={"query": "inptu"})
    assert mapped.value.field == "inptu"
    assert mapped.value.detail.startswith("fields maps 'query' here, but it is not a test case field or a "
                                          "conversation field (did you mean 'input'?; known: input, ")
    with pytest.raises(DatasetError) as read:
        Dataset.load(path, fields={"query": "input"})
    assert str(read.value) == (f"{path}:1: field 'actual_ouput': not a test-case field (did you mean "
                               "'actual_output'?); map it to one (--map actual_ouput=FIELD, or [dataset] fields) "
                               "or keep unknown keys with unknown_fields = 'metadata'")


# --- help that reads as written ----------------------------------------------------------------

#: Wide enough that no line of help wraps: each paragraph of a description is then one line.
WIDTH = 2000


def commands(root: typer.Typer = app) -> Iterator[tuple[list[str], Any]]:
    """Every command and group of ``root``, with the words that name it."""

    def walk(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, [*path, name])

    yield from walk(typer.main.get_command(root), [])


def help_screen(path: list[str]) -> str:
    done = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(WIDTH)}, terminal_width=WIDTH)
    assert done.exit_code == 0, (path, done.output)
    return done.output


def option_rows(screen: str) -> dict[str, str]:
    """Each option's row of a help screen by its long flag, the box and the flag itself left out."""
    found = {}
    for line in screen.splitlines():
        match = re.match(r"│\s*(?:\*\s*)?(--[a-z-]+)(.*)│", line)
        if match:
            found[match.group(1)] = " ".join(match.group(2).split())
    return found


def test_help_names_values_as_typed_flags_without_and_repeatable_options_say_so() -> None:
    wrong = []
    for path, command in commands():
        screen = help_screen(path)
        shown = option_rows(screen)
        if re.search(r"<(bool|str|int|float|path|list\[[a-z]+\])>", screen):
            wrong.append(f"{' '.join(path) or 'localeval'}: a Python type in {screen!r}")
        params = [*command.params, command.get_help_option(typer.Context(command))]
        for param in params:
            flag = next((opt for opt in param.opts if opt.startswith("--")), None)
            if param.param_type_name != "option" or flag is None:
                continue
            value = next((word for word in shown.get(flag, "").split() if not word.startswith("-")), "")
            if param.is_flag and value.isupper():
                wrong.append(f"{' '.join(path)} {flag}: a flag with a value {value}")
            if param.multiple and not value.endswith("..."):
                wrong.append(f"{' '.join(path)} {flag}: repeatable, and its value is {value!r}")
    assert wrong == []
    run = option_rows(help_screen(["run"]))
    assert run["--no-cache"] == "Neither read nor write the cache."
    assert run["--metric"].startswith("-m TEXT... A metric by name")
    assert run["--threads"].startswith("INTEGER CPU threads")
    assert run["--report"].startswith("PATH Also write")
    assert re.search(r"│\s+dataset\s+PATH\s+JSONL", help_screen(["run"]))


def test_every_description_is_shown_a_paragraph_a_line() -> None:
    """Each paragraph of a command's docstring is one line on a wide terminal: none is broken where
    the source happened to wrap it (then wrapped again by a narrow terminal, mid-sentence)."""
    broken = []
    for path, command in commands():
        screen = help_screen(path)
        lines = [" ".join(line.split()) for line in screen.splitlines()]
        for paragraph in re.split(r"\n\s*\n", (command.help or "").strip()):
            text = " ".join(paragraph.replace("\\[", "[").split())
            if text and text not in lines:
                broken.append(f"{' '.join(path) or 'localeval'}: {text[:60]}...")
    assert broken == []
    assert len(list(commands())) > 15


# --- shell completion --------------------------------------------------------------------------


PROGRAM = str(Path(sys.executable).with_name("localeval"))


def under_sh(*args: str, **environ: str) -> subprocess.CompletedProcess[str]:
    """The installed ``localeval`` run by ``sh`` (as a Dockerfile's RUN does): no bash, zsh or fish among its parents."""
    command = " ".join([PROGRAM, *args])
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **environ})


def test_completion_can_be_shown_and_completes_commands() -> None:
    """Through the installed ``localeval`` script: completion is keyed by the program's name."""
    program = PROGRAM
    script = under_sh("--show-completion", "bash")
    assert script.returncode == EXIT_OK, script.stderr
    assert "_LOCALEVAL_COMPLETE=complete_bash" in script.stdout
    asked = {"_LOCALEVAL_COMPLETE": "complete_bash", "COMP_WORDS": "localeval me", "COMP_CWORD": "1"}
    words = subprocess.run([program], capture_output=True, text=True, timeout=120, env={**os.environ, **asked})
    assert words.stdout.split() == ["meta-eval", "metrics"]


@pytest.mark.parametrize(("shell", "marker"), [("zsh", "#compdef localeval"), ("fish", "complete --command localeval"),
                                               ("bash", "complete -o default -F _localeval_completion localeval")])
def test_completion_is_for_the_shell_named_not_the_one_running_it(shell: str, marker: str) -> None:
    script = under_sh("--show-completion", shell)
    assert (script.returncode, script.stderr) == (EXIT_OK, "")
    assert marker in script.stdout and f"_LOCALEVAL_COMPLETE=complete_{shell}" in script.stdout


def test_completion_is_installed_for_the_shell_named(tmp_path: Path) -> None:
    done = under_sh("--install-completion", "bash", HOME=str(tmp_path))
    assert (done.returncode, done.stderr) == (EXIT_OK, "")
    installed = tmp_path / ".bash_completions" / "localeval.sh"
    assert str(installed) in done.stdout and "_LOCALEVAL_COMPLETE=complete_bash" in installed.read_text()
    assert f"source '{installed}'" in (tmp_path / ".bashrc").read_text()


@pytest.mark.parametrize(("args", "message"), [
    (("--show-completion", "tcsh"), "error: --show-completion tcsh: no completion for that shell; name one of bash, "
                                    "zsh, fish, powershell, pwsh"),
    (("--show-completion",), "error: --show-completion: this process runs under sh, which has none; name the shell: "
                             "localeval --show-completion bash (or zsh, fish, powershell, pwsh)"),
])
def test_completion_for_no_shell_it_can_serve_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    done = under_sh(*args)
    assert (done.returncode, done.stdout, done.stderr.strip()) == (EXIT_INPUT, "", message)


@pytest.mark.parametrize("args", [("metrics",), ("--show-completion", "zsh")])
def test_a_reader_that_goes_away_ends_the_command_quietly_with_141(args: tuple[str, ...]) -> None:
    """``localeval metrics | head -1``: the pipe closes under the writer; not a bug, and not "a metric failed"."""
    from localeval.cli.exits import EXIT_PIPE_CLOSED

    with subprocess.Popen([PROGRAM, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # the reader is gone before the first line is written
        assert (process.wait(timeout=120), process.stderr.read()) == (EXIT_PIPE_CLOSED, "")

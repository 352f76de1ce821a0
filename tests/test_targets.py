"""Targets with a scripted backend: the [target] table, strict templates, generation, caching, the journal."""

from __future__ import annotations

import io
import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from command_line import Project
from rich.console import Console

from localeval.backends.base import JudgeUsage, Message, TextRequest, Usage
from localeval.backends.cache import CachedBackend, open_cache
from localeval.backends.catalog import file_sha256
from localeval.cli import arena as cli_arena
from localeval.cli import generate as generation
from localeval.cli import session
from localeval.config import RunConfig
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.errors import BackendError, ConfigError, DatasetError
from localeval.paths import Paths
from localeval.run.journal import Journal
from localeval.targets import PromptTemplate, TargetOptions, generate_outputs
from localeval.testing import ScriptedJudge

GOLDENS = [
    {"name": "fr", "input": "Capital of France?", "expected_output": "Paris", "tags": ["geo"]},
    {"name": "sum", "input": "2 + 2?", "expected_output": "4"},
    {"name": "given", "input": "Colour of the sky?", "expected_output": "blue", "actual_output": "blue"},
]
CONFIG = """
[dataset]
path = "goldens.jsonl"

[target]
name = "scripted"
system = "Answer briefly."
user_file = "prompts/user.j2"
max_tokens = 16
stop = ["\\n"]

[[metrics]]
metric = "exact_match"
"""


@pytest.fixture
def project(project: Project) -> Project:
    project.write_cases(GOLDENS, "goldens.jsonl")
    project.write("prompts/user.j2", "{% if tags %}[{{ tags | join(',') }}] {% endif %}Q: {{ input }}")
    project.write("eval.toml", CONFIG)
    return project


def cases(*goldens: dict[str, Any]) -> Dataset:
    return Dataset([TestCase(**g) for g in goldens], [f"g.jsonl:{i}" for i in range(1, len(goldens) + 1)])


def test_the_target_table_takes_a_backend_table_and_files_relative_to_the_config(project: Project) -> None:
    config = RunConfig.load(project / "eval.toml")
    assert config.target is not None
    assert config.target.backend.kind == "llama.cpp"
    assert config.target.user_file == project / "prompts" / "user.j2"
    assert config.target.stop == ["\n"] and config.target.max_tokens == 16


@pytest.mark.parametrize(("table", "message"), [
    ('user = "a"\nuser_file = "b"', "target: give user or user_file, not both"),
    ('temprature = 0.5', "target: unknown key 'temprature' (did you mean 'temperature'?; known: name, backend, "),
    ('[target.backend]\nkind = "ollama"\nn_threads = 2', "target.backend"),
])
def test_a_bad_target_table_is_one_line_naming_the_key(tmp_path: Path, table: str, message: str) -> None:
    (tmp_path / "eval.toml").write_text(f"[target]\n{table}\n")
    with pytest.raises(ConfigError) as caught:
        RunConfig.load(tmp_path / "eval.toml")
    assert str(caught.value).startswith(f"{tmp_path / 'eval.toml'}: {message}")


def test_the_template_renders_the_golden_as_chat_messages(project: Project) -> None:
    config = RunConfig.load(project / "eval.toml")
    assert config.target is not None
    template = PromptTemplate(config.target, config.source)
    golden = TestCase(**GOLDENS[0])
    assert template.render(golden, "g.jsonl:1") == (
        Message(role="system", content="Answer briefly."),
        Message(role="user", content="[geo] Q: Capital of France?"),
    )
    plain = PromptTemplate(TargetOptions())  # the default: the input as the user message, no system message
    assert plain.render(golden, "g.jsonl:1") == (Message(role="user", content="Capital of France?"),)
    assert plain.sha256 != template.sha256
    assert plain.sha256 == PromptTemplate(TargetOptions(user="{{ input }}")).sha256


def test_a_field_the_golden_lacks_names_the_file_line_field_and_template() -> None:
    template = PromptTemplate(TargetOptions(user="{{ input }} / {{ context | join(' ') }}"), "eval.toml")
    dataset = cases({"input": "a", "context": ["x"]}, {"input": "b"})
    with pytest.raises(DatasetError) as caught:
        generate_outputs(dataset, TargetOptions(), template, ScriptedJudge(texts=["never"]))
    assert str(caught.value) == (
        "g.jsonl:2: field 'context': the target's template eval.toml: target.user uses it, and this golden has none"
    )


def test_a_name_that_is_no_golden_field_and_bad_syntax_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^eval.toml: target.user: 'inptu' is not a field of a golden"):
        PromptTemplate(TargetOptions(user="{{ inptu }}"), "eval.toml")
    (tmp_path / "u.j2").write_text("line one\n{{ input }")
    with pytest.raises(ConfigError, match=r"u.j2:2: not a valid Jinja template"):
        PromptTemplate(TargetOptions(user_file=tmp_path / "u.j2"))
    with pytest.raises(ConfigError, match=r"target.system_file: cannot read .*missing.j2"):
        PromptTemplate(TargetOptions(system_file=tmp_path / "missing.j2"))


def test_generation_sends_the_settings_fills_the_outputs_and_a_failure_is_that_case_s_error() -> None:
    target = ScriptedJudge(texts=["Paris", BackendError("http://x answered HTTP 500")])
    options = TargetOptions(system="Be brief.", temperature=0.0, max_tokens=8, seed=3, stop=["\n"])
    recorded: list[int] = []
    dataset = cases(*GOLDENS)
    outputs = generate_outputs(dataset, options, PromptTemplate(options), target,
                               record=lambda index, generation: recorded.append(index))
    assert target.requests == [
        TextRequest(messages=(Message(role="system", content="Be brief."), Message(role="user", content=q)),
                    max_tokens=8, temperature=0.0, seed=3, stop=("\n",))
        for q in ("Capital of France?", "2 + 2?")
    ]
    assert [c.actual_output for c in outputs.dataset.cases] == ["Paris", None, "blue"]
    assert recorded == [0, 1]
    assert outputs.failed == {1: "the target failed: http://x answered HTTP 500"}
    record = outputs.record
    assert (record.generated, record.errored, record.given, record.resumed) == (1, 1, 1, 0)
    assert record.fingerprint.kind == "scripted"
    assert record.usage == JudgeUsage(model_calls=1)  # the call that failed answered nothing


def test_a_target_without_the_cache_still_counts_its_calls_and_tokens() -> None:
    """With --no-cache the target is no CachedBackend (judge.py): its usage is counted all the same."""
    target = ScriptedJudge(texts=["Paris", "4"], usage=Usage(prompt_tokens=7, completion_tokens=2))
    outputs = generate_outputs(cases(*GOLDENS), TargetOptions(), PromptTemplate(TargetOptions()), target)
    assert outputs.record.usage == JudgeUsage(model_calls=2, cache_hits=0, prompt_tokens=14, completion_tokens=4)


def test_deterministic_generation_is_cached_and_sampling_without_a_seed_is_not(tmp_path: Path) -> None:
    request = TextRequest(messages=(Message(role="user", content="hi"),), temperature=0.0)
    sampled = request.model_copy(update={"temperature": 0.8, "seed": None})
    with open_cache(tmp_path) as store:
        first = CachedBackend(ScriptedJudge(texts=["hello", "a", "b"]), store)
        assert first.generate_text(request).text == "hello"
        assert [first.generate_text(sampled).text for _ in range(2)] == ["a", "b"]
        again = CachedBackend(ScriptedJudge(texts=[]), store)
        assert again.generate_text(request).text == "hello"
        assert (first.stats.model_calls, first.stats.uncacheable) == (3, 2)
        assert (again.stats.model_calls, again.stats.hits) == (0, 1)


def test_a_backend_without_free_text_is_refused_by_name() -> None:
    class JsonOnly:
        capabilities = ScriptedJudge().capabilities.model_copy(update={"text": False})
        fingerprint = ScriptedJudge().fingerprint

    with pytest.raises(ConfigError, match="the scripted backend does not generate free text"):
        generate_outputs(cases(GOLDENS[0]), TargetOptions(), PromptTemplate(TargetOptions()), JsonOnly())  # type: ignore[arg-type]


# -- localeval run with a target, in process, the target scripted -----------------------


def run(project: Project, target: ScriptedJudge | dict[str, ScriptedJudge], monkeypatch: pytest.MonkeyPatch,
        **flags: Any) -> int:
    """``localeval run`` in process with scripted targets (one, or by name) behind a cache that stores nothing."""
    scripted = target if isinstance(target, dict) else {"scripted": target}

    def load(config: RunConfig, templates: Any, paths: Paths, environ: Any, stack: ExitStack,
             err: Console) -> dict[str, CachedBackend]:
        return {name: CachedBackend(judge, None) for name, judge in scripted.items() if name in templates}

    monkeypatch.setattr(session, "load_targets", load)
    config = RunConfig.load(project / "eval.toml")
    paths = Paths(home=project / "home", cache=project / "cache")
    quiet = Console(file=io.StringIO())
    return session.run(config, paths, quiet, quiet, {}, session.RunFlags(**flags))


def test_a_run_generates_journals_judges_and_reports_the_target(project: Project,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    target = ScriptedJudge(texts=["Paris", BackendError("timed out")])
    code = run(project, target, monkeypatch, run_dir=project / "run")
    assert code == session.EXIT_ERRORED  # the target failed for one golden
    report = json.loads((project / "run" / "report.json").read_text())
    assert [c["inputs"].get("actual_output") for c in report["cases"]] == ["Paris", None, "blue"]
    assert [c["results"][0]["score"] for c in report["cases"]] == [1.0, None, 1.0]
    assert report["cases"][1]["results"][0]["error"] == "the target failed: timed out"
    figures = {k: v for k, v in report["summary"][0].items() if not k.endswith("_interval")}  # test_summary_intervals
    assert figures | {"details": None} == {
        "metric": "exact_match", "cases": 3, "passed": 2, "failed": 0, "errored": 1, "pass_rate": 1.0,
        "mean_score": 1.0, "details": None,
    }
    [record] = report["targets"]
    assert record["name"] == "scripted" and record["fingerprint"]["model"] == "scripted-model"
    assert record["template_sha256"] == PromptTemplate(RunConfig.load(project / "eval.toml").target, "").sha256  # type: ignore[arg-type]
    assert (record["generated"], record["errored"], record["given"]) == (1, 1, 1)
    # the failed call is no model call that answered: counted as the cache counts any failed call
    assert record["usage"] == {"model_calls": 1, "cache_hits": 0, "prompt_tokens": 0, "completion_tokens": 0}
    lines = [json.loads(line) for line in (project / "run" / "journal.jsonl").read_text().splitlines()[1:]]
    assert [(e["case"], e["generation"]["output"]) for e in lines if "generation" in e] == [(0, "Paris"), (1, None)]


def test_a_resumed_run_never_generates_twice(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    stopped = run(project, ScriptedJudge(texts=["Paris", KeyboardInterrupt()]), monkeypatch, run_dir=project / "run")
    assert stopped == session.EXIT_INTERRUPTED
    with Journal.open(project / "run" / "journal.jsonl") as journal:
        assert list(journal.generated) == [("scripted", 0)]
    rest = ScriptedJudge(texts=["4"])
    assert run(project, rest, monkeypatch, resume=str(project / "run")) == session.EXIT_OK
    assert [r.messages[-1].content for r in rest.requests] == ["Q: 2 + 2?"]  # type: ignore[union-attr]
    report = json.loads((project / "run" / "report.json").read_text())
    assert [c["inputs"]["actual_output"] for c in report["cases"]] == ["Paris", "4", "blue"]
    assert (report["targets"][0]["resumed"], report["targets"][0]["generated"]) == (1, 1)


def test_a_resumed_run_asks_the_target_again_where_it_failed(project: Project,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    failed = run(project, ScriptedJudge(texts=["Paris", BackendError("timed out")]), monkeypatch,
                 run_dir=project / "run")
    assert failed == session.EXIT_ERRORED
    kept = ScriptedJudge(texts=[])
    assert run(project, kept, monkeypatch, resume=str(project / "run"), keep_errors=True) == session.EXIT_ERRORED
    assert kept.requests == []
    back = ScriptedJudge(texts=["4"])  # the server is back
    assert run(project, back, monkeypatch, resume=str(project / "run")) == session.EXIT_OK
    assert [r.messages[-1].content for r in back.requests] == ["Q: 2 + 2?"]  # type: ignore[union-attr]
    report = json.loads((project / "run" / "report.json").read_text())
    assert [c["inputs"]["actual_output"] for c in report["cases"]] == ["Paris", "4", "blue"]


def test_a_missing_field_stops_the_run_before_the_target_loads(project: Project,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "prompts" / "user.j2").write_text("{{ input }} ({{ context | join(', ') }})")
    target = ScriptedJudge(texts=["never"])
    with pytest.raises(DatasetError, match=r"goldens.jsonl:1: field 'context': the target's template .*user.j2"):
        run(project, target, monkeypatch, run_dir=project / "run")
    assert target.requests == [] and not (project / "run").exists()


def test_generate_writes_the_cases_file(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generation, "load_targets",
                        lambda *args: {"scripted": CachedBackend(ScriptedJudge(texts=["P", "4"]), None)})
    config = session.settings_from_cli(
        dataset=project / "goldens.jsonl", config=project / "eval.toml", metrics=None, model=None, threads=None,
        fields=None, list_delimiter=None, report=None, no_cache=True, cache_dir=None,
    )
    quiet = Console(file=io.StringIO())
    code = generation.generate(config, project / "cases.jsonl", Paths(project, project / "c"), quiet, quiet, {})
    assert code == session.EXIT_OK
    written = Dataset.load(project / "cases.jsonl")
    assert [c.actual_output for c in written.cases] == ["P", "4", "blue"]
    assert [c.expected_output for c in written.cases] == ["Paris", "4", "blue"]


# -- several targets side by side ---------------------------------------------------------

TWO_TARGETS = """
[dataset]
path = "goldens.jsonl"

[[targets]]
name = "a"

[[targets]]
name = "b"
user = "Short answer: {{ input }}"

[[metrics]]
metric = "exact_match"
"""


def test_two_targets_answer_every_golden_and_are_summarized_side_by_side(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "eval.toml").write_text(TWO_TARGETS)
    a, b = ScriptedJudge(texts=["Paris", "4"]), ScriptedJudge(texts=["Lyon", BackendError("timed out")])
    assert run(project, {"a": a, "b": b}, monkeypatch, run_dir=project / "run") == session.EXIT_ERRORED
    assert [r.messages[-1].content for r in b.requests] == ["Short answer: Capital of France?", "Short answer: 2 + 2?"]  # type: ignore[union-attr]
    report = json.loads((project / "run" / "report.json").read_text())
    rows = [(c["name"], c["target"], c["inputs"].get("actual_output"), c["results"][0]["score"]) for c in report["cases"]]
    assert rows == [("fr", "a", "Paris", 1.0), ("fr", "b", "Lyon", 0.0), ("sum", "a", "4", 1.0),
                    ("sum", "b", None, None), ("given", "a", "blue", 1.0), ("given", "b", "blue", 1.0)]
    assert report["cases"][3]["results"][0]["error"] == "the target failed: timed out (target b)"
    by_target = {name: (s[0]["passed"], s[0]["failed"], s[0]["errored"], s[0]["mean_score"])
                 for name, s in report["target_summaries"].items()}
    assert by_target == {"a": (3, 0, 0, 1.0), "b": (1, 1, 1, 0.5)}
    assert [(t["name"], t["generated"], t["errored"]) for t in report["targets"]] == [("a", 2, 0), ("b", 1, 1)]
    lines = (project / "run" / "journal.jsonl").read_text().splitlines()[1:]
    assert sorted((e["target"], e["case"]) for e in map(json.loads, lines) if "generation" in e) == [
        ("a", 0), ("a", 1), ("b", 0), ("b", 1)]


def test_target_and_targets_together_or_twice_the_same_name_are_refused(tmp_path: Path) -> None:
    (tmp_path / "eval.toml").write_text('[target]\nname = "a"\n\n[[targets]]\nname = "b"\n')
    with pytest.raises(ConfigError, match="give \\[target\\] or \\[\\[targets\\]\\], not both"):
        RunConfig.load(tmp_path / "eval.toml")
    (tmp_path / "eval.toml").write_text('[[targets]]\nname = "a"\n\n[[targets]]\nname = "a"\n')
    with pytest.raises(ConfigError, match="two targets are named 'a'"):
        RunConfig.load(tmp_path / "eval.toml")


def test_compare_matches_two_runs_of_two_targets_per_target(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    from localeval.data.results import RunReport
    from localeval.reports.compare import compare

    (project / "eval.toml").write_text(TWO_TARGETS)
    run(project, {"a": ScriptedJudge(texts=["Paris", "4"]), "b": ScriptedJudge(texts=["Lyon", "4"])}, monkeypatch,
        run_dir=project / "one")
    run(project, {"a": ScriptedJudge(texts=["Paris", "5"]), "b": ScriptedJudge(texts=["Paris", "4"])}, monkeypatch,
        run_dir=project / "two")
    one, two = (RunReport.load(project / name / "report.json") for name in ("one", "two"))
    comparison = compare(one, two)
    assert comparison.matched_by == "name"
    assert sorted((c.case, c.kind) for c in comparison.changes) == [("fr @ b", "fix"), ("sum @ a", "regression")]


ARENA = """
[[metrics]]
metric = "arena"
name = "better"
evaluation_steps = ["Prefer the output that agrees with the expected output."]
evaluation_params = ["input", "expected_output"]
include_reason = false
"""


def test_the_arena_of_one_run_judges_its_targets_outputs_against_each_other(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "eval.toml").write_text(TWO_TARGETS)
    run(project, {"a": ScriptedJudge(texts=["Paris", "4"]), "b": ScriptedJudge(texts=["Lyon", "5"])}, monkeypatch,
        run_dir=project / "run")
    judge = ScriptedJudge(logprobs=[{" A": -0.1, " B": -3.0}, {" A": -3.0, " B": -0.1}] * 3)  # a prefers a, both orders
    monkeypatch.setattr(session, "load_judges", lambda *args: (CachedBackend(judge, None), {}))
    (project / "arena.toml").write_text(ARENA)
    paths = Paths(home=project / "home", cache=project / "cache")
    quiet = Console(file=io.StringIO())
    code = cli_arena.arena(RunConfig.load(project / "arena.toml"), str(project / "run"), None, None, paths, quiet, quiet,
                         {}, session.RunFlags(run_dir=project / "arena"))
    assert code == session.EXIT_OK  # the first contestant, target a, was preferred on every golden
    report = json.loads((project / "arena" / "report.json").read_text())
    assert [(c["name"], c["inputs"]["contestants"]) for c in report["cases"]] == [
        ("fr", {"a": "Paris", "b": "Lyon"}), ("sum", {"a": "4", "b": "5"}), ("given", {"a": "blue", "b": "blue"})]
    prompts = [r.messages[-1].content for r in judge.requests]  # type: ignore[union-attr]
    assert len(prompts) == 6  # three goldens, each pair in both orders
    assert sum("Capital of France?" in p and "Output A:\nParis\n\nOutput B:\nLyon" in p for p in prompts) == 1
    assert sum("Capital of France?" in p and "Output A:\nLyon\n\nOutput B:\nParis" in p for p in prompts) == 1
    cases = Path(report["dataset"]["path"])  # named by the run and the cases' sha256
    assert cases.parent == paths.runs / "arena"
    assert cases.name == f"{report_id(project / 'run')}-targets-{file_sha256(cases)[:12]}.jsonl"


def report_id(run_dir: Path) -> str:
    return str(json.loads((run_dir / "report.json").read_text())["run_id"])


def test_generate_with_two_targets_writes_each_golden_once_per_target(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "eval.toml").write_text(TWO_TARGETS)
    backends = {"a": CachedBackend(ScriptedJudge(texts=["Paris", "4"]), None),
                "b": CachedBackend(ScriptedJudge(texts=["Lyon", BackendError("timed out")]), None)}
    monkeypatch.setattr(generation, "load_targets", lambda *args: backends)
    config = session.settings_from_cli(
        dataset=project / "goldens.jsonl", config=project / "eval.toml", metrics=None, model=None, threads=None,
        fields=None, list_delimiter=None, report=None, no_cache=True, cache_dir=None,
    )
    quiet = Console(file=io.StringIO())
    code = generation.generate(config, project / "cases.jsonl", Paths(project, project / "c"), quiet, quiet, {})
    assert code == session.EXIT_ERRORED  # b failed for one golden: written without output, listed
    written = Dataset.load(project / "cases.jsonl")
    assert [(c.name, c.metadata["target"], c.actual_output) for c in written.cases] == [
        ("fr", "a", "Paris"), ("fr", "b", "Lyon"), ("sum", "a", "4"), ("sum", "b", None),
        ("given", "a", "blue"), ("given", "b", "blue")]


def test_a_target_over_conversations_is_refused_by_name() -> None:
    from localeval.data.case import ConversationalTestCase

    talk = ConversationalTestCase(turns=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
    config = RunConfig(target=TargetOptions(), source="eval.toml")
    with pytest.raises(ConfigError, match=r"^eval.toml: a target answers single-turn goldens; <memory>:1 holds conversations$"):
        generation.target_templates(config, Dataset.from_cases([talk]))

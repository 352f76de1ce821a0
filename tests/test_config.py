"""The TOML run configuration, and the command line's options on top of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localeval.backends.ollama import OllamaOptions
from localeval.backends.openai_compat import OpenAICompatOptions
from localeval.cli.session import settings_from_cli
from localeval.config import RunConfig
from localeval.errors import ConfigError, UnknownMetric
from localeval.metrics import ExactMatch, GEval


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


FULL = """
[dataset]
path = "data/qa.jsonl"
format = "jsonl"
fields = { query = "input", answer = "actual_output" }

[backend]
model = "models/judge.gguf"
n_threads = 2

[[metrics]]
metric = "exact_match"
ignore_case = true

[[metrics]]
metric = "geval"
name = "correctness"
criteria = "The answer is correct."

[report]
path = "../out/report.json"

[cache]
dir = "cache"
"""


# --- RunConfig.load --------------------------------------------------------------------


def test_load_resolves_relative_paths_against_the_file(tmp_path: Path) -> None:
    config = RunConfig.load(write(tmp_path / "project" / "eval.toml", FULL))
    base = tmp_path / "project"
    assert config.dataset.path == base / "data" / "qa.jsonl"
    assert config.backend.model == str(base / "models" / "judge.gguf")
    assert config.report.path == tmp_path / "out" / "report.json"  # normalized, no ".."
    assert config.cache.dir == base / "cache"
    assert config.dataset.fields == {"query": "input", "answer": "actual_output"}
    assert config.backend.n_threads == 2
    assert config.source == str(base / "eval.toml")


def test_load_keeps_absolute_paths_and_model_names(tmp_path: Path) -> None:
    data = tmp_path / "elsewhere" / "qa.jsonl"
    config = RunConfig.load(
        write(tmp_path / "eval.toml", f'[dataset]\npath = "{data}"\n[backend]\nmodel = "gemma-3-270m"\n')
    )
    assert config.dataset.path == data
    assert config.backend.model == "gemma-3-270m"
    assert config.report.path is None
    assert config.cache.dir is None


def test_load_defaults(tmp_path: Path) -> None:
    config = RunConfig.load(write(tmp_path / "eval.toml", ""))
    assert (config.backend.kind, config.backend.n_threads, config.backend.n_ctx, config.backend.n_batch) == (
        "llama.cpp", 1, 4096, 64
    )
    assert config.cache.enabled is True
    assert config.dataset.list_delimiter == "|"
    assert config.metrics == []


def test_an_unknown_key_names_the_file_and_the_key_path(tmp_path: Path) -> None:
    path = write(tmp_path / "eval.toml", "[backend]\nn_thread = 2\n")
    with pytest.raises(ConfigError) as info:
        RunConfig.load(path)
    assert str(info.value) == f"{path}: backend: option 'n_thread' does not apply to the llama.cpp backend (did you mean 'n_threads'?)"


def test_an_unknown_section_names_it(tmp_path: Path) -> None:
    path = write(tmp_path / "eval.toml", "[reports]\npath = 'r.json'\n")
    with pytest.raises(ConfigError) as info:
        RunConfig.load(path)
    assert str(info.value) == (
        f"{path}: unknown key 'reports' (did you mean 'report'?; known: plugins, dataset, backend, judges, "
        "metrics, metrics_defaults, report, cache, synthesizer, target, targets, name, tags, gate)"
    )


def test_a_wrong_type_names_the_key(tmp_path: Path) -> None:
    path = write(tmp_path / "eval.toml", '[backend]\nn_ctx = "big"\n')
    with pytest.raises(ConfigError, match=r"^.*eval\.toml: backend\.n_ctx: Input should be a valid integer"):
        RunConfig.load(path)


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "eval.toml", "[backend\nmodel = 1\n")
    with pytest.raises(ConfigError) as info:
        RunConfig.load(path)
    assert str(info.value).startswith(f"{path}: not valid TOML (")


def test_a_missing_config_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    with pytest.raises(ConfigError) as info:
        RunConfig.load(path)
    assert str(info.value) == f"{path}: cannot read config (No such file or directory)"


def test_metric_prompt_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    config = RunConfig.load(
        write(
            tmp_path / "project" / "eval.toml",
            '[[metrics]]\nmetric = "geval"\ncriteria = "c"\nscore_prompt = "prompts/score.txt"\n',
        )
    )
    [metric] = config.build_metrics()
    assert isinstance(metric, GEval)
    assert metric.score_prompt == tmp_path / "project" / "prompts" / "score.txt"


# --- build_metrics ---------------------------------------------------------------------


def test_build_metrics_in_order(tmp_path: Path) -> None:
    metrics = RunConfig.load(write(tmp_path / "eval.toml", FULL)).build_metrics()
    assert metrics == [
        ExactMatch(ignore_case=True),
        GEval(name="correctness", criteria="The answer is correct."),
    ]


def config_with(tmp_path: Path, metrics: str) -> RunConfig:
    return RunConfig.load(write(tmp_path / "eval.toml", metrics))


def test_build_metrics_without_a_metric_key_names_the_entry(tmp_path: Path) -> None:
    config = config_with(tmp_path, '[[metrics]]\nmetric = "exact_match"\n[[metrics]]\nname = "x"\n')
    with pytest.raises(ConfigError) as info:
        config.build_metrics()
    assert str(info.value) == (
        f"{tmp_path / 'eval.toml'}: metrics[2]: the 'metric' key (its type, e.g. 'geval') is missing"
    )


def test_build_metrics_of_an_unknown_metric(tmp_path: Path) -> None:
    config = config_with(tmp_path, '[[metrics]]\nmetric = "bleurt"\n')
    with pytest.raises(UnknownMetric) as info:
        config.build_metrics()
    from localeval.metrics import metric_names

    assert str(info.value) == (
        f"{tmp_path / 'eval.toml'}: metrics[1]: unknown metric 'bleurt' (did you mean 'bleu'?; "
        f"known: {', '.join(metric_names())})"
    )
    assert "geval:coherence" in metric_names()


def test_build_metrics_bad_option_names_the_entry_and_field(tmp_path: Path) -> None:
    config = config_with(
        tmp_path,
        '[[metrics]]\nmetric = "exact_match"\n'
        '[[metrics]]\nmetric = "geval"\ncriteria = "c"\nthreshold = 1.5\n',
    )
    with pytest.raises(ConfigError) as info:
        config.build_metrics()
    assert str(info.value) == (
        f"{tmp_path / 'eval.toml'}: metrics[2]: geval.threshold: Input should be less than or equal to 1"
    )


def test_build_metrics_with_none_given(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"eval\.toml: no metrics given"):
        config_with(tmp_path, "").build_metrics()


def test_build_metrics_leaves_the_config_alone(tmp_path: Path) -> None:
    config = RunConfig.load(write(tmp_path / "eval.toml", FULL))
    config.build_metrics()
    assert config.metrics[0] == {"metric": "exact_match", "ignore_case": True}


# --- settings_from_cli -----------------------------------------------------------------

NO_OPTIONS: dict[str, Any] = {
    "dataset": None, "config": None, "metrics": None, "model": None, "threads": None,
    "fields": None, "list_delimiter": None, "report": None, "no_cache": False, "cache_dir": None,
}


def cli(**options: Any) -> RunConfig:
    return settings_from_cli(**{**NO_OPTIONS, **options})


def test_without_a_config_file_the_options_are_the_settings(tmp_path: Path) -> None:
    settings = cli(
        dataset=Path("qa.csv"), metrics=["exact_match"], model="gemma-3-270m", threads=3,
        fields=["q=input"], list_delimiter=";", report=Path("r.json"), no_cache=True,
    )
    assert settings.dataset.path == Path("qa.csv")
    assert settings.dataset.fields == {"q": "input"}
    assert settings.dataset.list_delimiter == ";"
    assert (settings.backend.model, settings.backend.n_threads) == ("gemma-3-270m", 3)
    assert settings.metrics == [{"metric": "exact_match"}]
    assert settings.report.path == Path("r.json")
    assert settings.cache.enabled is False
    assert settings.source == "<command line>"


def test_no_options_keep_the_config_file(tmp_path: Path) -> None:
    path = write(tmp_path / "eval.toml", FULL)
    assert cli(config=path) == RunConfig.load(path)


def test_the_command_line_overrides_the_config_file(tmp_path: Path) -> None:
    path = write(tmp_path / "eval.toml", FULL)
    settings = cli(
        config=path,
        dataset=Path("other.jsonl"),
        model="gemma-3-270m",
        threads=4,
        metrics=["geval", "exact_match"],
        fields=["question=input", "answer=expected_output"],
        report=Path("mine.json"),
        cache_dir=Path("c2"),
        no_cache=True,
    )
    assert settings.dataset.path == Path("other.jsonl")
    assert settings.dataset.format == "jsonl"  # kept from the file
    assert settings.backend.model == "gemma-3-270m"
    assert settings.backend.n_threads == 4
    assert settings.metrics == [{"metric": "geval"}, {"metric": "exact_match"}]  # replaced, not added
    # --map pairs are merged into the file's mapping; a repeated key takes the option's value
    assert settings.dataset.fields == {"query": "input", "answer": "expected_output", "question": "input"}
    assert settings.report.path == Path("mine.json")
    assert settings.cache.dir == Path("c2")
    assert settings.cache.enabled is False
    assert settings.source == str(path)


@pytest.mark.parametrize("pair", ["query", "=input", "query="])
def test_a_bad_map_pair_is_a_config_error(pair: str) -> None:
    with pytest.raises(ConfigError) as info:
        cli(fields=["ok=input", pair])
    assert str(info.value) == f"--map takes FILE_KEY=FIELD, got {pair!r}"



def test_a_server_models_name_with_a_slash_is_not_a_path(tmp_path):
    path = tmp_path / "eval.toml"
    path.write_text('[backend]\nkind = "vllm"\nmodel = "meta-llama/Llama-3.2-1B"\n'
                    '[[metrics]]\nmetric = "exact_match"\n')
    assert RunConfig.load(path).backend.model == "meta-llama/Llama-3.2-1B"
    path.write_text('[backend]\nmodel = "models/judge.gguf"\n[[metrics]]\nmetric = "exact_match"\n')
    assert RunConfig.load(path).backend.model == str(tmp_path / "models" / "judge.gguf")


def test_prompt_paths_inside_a_composite_and_a_dag_are_relative_to_the_config(tmp_path):
    path = tmp_path / "conf" / "eval.toml"
    path.parent.mkdir()
    path.write_text(
        '[[metrics]]\nmetric = "composite"\nmetrics = [{ metric = "faithfulness", reason_prompt = "p/reason.txt" },'
        ' { metric = "exact_match" }]\n\n'
        '[[metrics]]\nmetric = "dag"\nroot = "is_ok"\n'
        '[metrics.nodes.is_ok]\nkind = "binary_judgement"\ncriteria = "Is it fine?"\n'
        'evaluation_params = ["actual_output"]\n'
        'children = [{ kind = "verdict", verdict = false, score = 0 },'
        ' { kind = "verdict", verdict = true, geval = { criteria = "Good.", score_prompt = "p/score.txt" } }]\n'
    )
    composite, dag = RunConfig.load(path).build_metrics()
    assert composite.metrics[0].reason_prompt == tmp_path / "conf" / "p" / "reason.txt"
    leaf = dag.nodes["is_ok"].children[1]
    assert leaf.geval.score_prompt == tmp_path / "conf" / "p" / "score.txt"


# --- [backend]: one options model per kind ---------------------------------------------------


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('kind = "ollama"\nmodel = "qwen2.5:7b"\nn_threads = 2\n',
         "backend: option 'n_threads' does not apply to the ollama backend"),
        ('base_url = "http://127.0.0.1:8080/v1"\n', "backend: option 'base_url' does not apply to the llama.cpp backend"),
        ('kind = "ollama"\nmodel = "m"\napi_key_env = "KEY"\n',
         "backend: option 'api_key_env' does not apply to the ollama backend"),
        ('kind = "vllm"\nn_ctx = 8192\n', "backend: option 'n_ctx' does not apply to the vllm backend"),
        ('kind = "vllm"\noptions = { num_ctx = 8192 }\n', "backend: option 'num_ctx' does not apply to the vllm backend"),
        ('kind = "vllm"\ntimeout = 5\noptions = { timeout = 6 }\n',
         "backend: option 'timeout' is given twice: in the table and in its options"),
        ('kind = "ollama"\n', "backend.model: Field required"),
        ('kind = "openai-compatible"\n', "backend.base_url: Field required"),
        ('kind = "llama-cpp-python"\ntop_logprobs = 25\n', "backend.top_logprobs: Input should be less than or equal to 20"),
        ('kind = "tgi"\n', "backend.kind: unknown backend 'tgi' (known: llama.cpp, openai-compatible, ollama, lmstudio,"),
    ],
)
def test_each_kind_takes_exactly_its_own_options(tmp_path: Path, table: str, problem: str) -> None:
    path = write(tmp_path / "eval.toml", "[backend]\n" + table)
    with pytest.raises(ConfigError) as info:
        RunConfig.load(path)
    assert str(info.value).startswith(f"{path}: {problem}")


def test_a_preset_is_the_openai_compatible_kind_with_the_servers_defaults(tmp_path: Path) -> None:
    config = RunConfig.load(write(tmp_path / "eval.toml", '[backend]\nkind = "llama-cpp-python"\ntimeout = 30\n'))
    backend = config.backend
    assert isinstance(backend, OpenAICompatOptions)
    assert (backend.kind, backend.base_url, backend.prefill, backend.max_concurrency, backend.timeout) == (
        "llama-cpp-python", "http://localhost:8000/v1", "completion", 1, 30.0
    )
    plain = RunConfig.load(write(tmp_path / "plain.toml", '[backend]\nkind = "openai-compatible"\nbase_url = "u"\n'))
    assert (plain.backend.prefill, plain.backend.max_concurrency) == ("instruction", 4)  # type: ignore[union-attr]


def test_a_config_dump_validates_back_to_the_same_backend(tmp_path: Path) -> None:
    """A run's journal keeps the config as JSON; a resumed run must get the same judge back."""
    for table in ('kind = "llama-server"\nmodel = "m"\n', 'kind = "ollama"\nmodel = "m"\nnum_ctx = 2048\n', ""):
        config = RunConfig.load(write(tmp_path / "eval.toml", "[backend]\n" + table))
        dumped = config.model_dump(mode="json")
        assert dumped["backend"]["kind"] == config.backend.kind
        assert RunConfig.model_validate(dumped).backend == config.backend


def test_the_options_sub_table_is_still_read(tmp_path: Path) -> None:
    path = write(tmp_path / "eval.toml", '[backend]\nkind = "ollama"\nmodel = "m"\noptions = { timeout = 60, num_ctx = 2048 }\n')
    backend = RunConfig.load(path).backend
    assert (backend.timeout, backend.num_ctx) == (60.0, 2048)  # type: ignore[union-attr]
    assert "options" not in RunConfig.load(path).model_dump()["backend"]


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"backend": "ollama", "model": "m", "threads": 2}, "--threads does not apply to the ollama backend"),
        ({"base_url": "http://127.0.0.1:8080/v1"}, "--base-url does not apply to the llama.cpp backend"),
        ({"backend": "vllm", "threads": 1}, "--threads does not apply to the vllm backend"),
        ({"backend": "nope"}, "command line: backend.kind: unknown backend 'nope'"),
        ({"threads": 0}, "command line: backend.n_threads: Input should be greater than or equal to 1"),
        ({"backend": "ollama"}, "command line: backend.model: Field required"),
    ],
)
def test_a_command_line_option_the_kind_does_not_take_is_an_error(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        cli(**options)
    assert str(info.value).startswith(problem)


def test_another_backend_on_the_command_line_leaves_the_files_table_out(tmp_path: Path) -> None:
    path = write(tmp_path / "eval.toml", FULL)  # llama.cpp, n_threads = 2
    settings = cli(config=path, backend="ollama", model="qwen2.5:7b", base_url="http://127.0.0.1:9")
    assert settings.backend == OllamaOptions(model="qwen2.5:7b", base_url="http://127.0.0.1:9")
    same = cli(config=path, backend="llama.cpp", threads=3)
    assert (same.backend.model, same.backend.n_threads) == (str(tmp_path / "models" / "judge.gguf"), 3)  # type: ignore[union-attr]


def test_a_fleet_is_a_list_of_base_urls_in_the_file_and_on_the_command_line(tmp_path: Path) -> None:
    urls = ["http://a:8000/v1", "http://b:8000/v1"]
    path = write(tmp_path / "eval.toml", f'[backend]\nkind = "llama-cpp-python"\nbase_url = {json.dumps(urls)}\n')
    config = RunConfig.load(path)
    assert config.backend.base_url == urls  # type: ignore[union-attr]
    assert RunConfig.model_validate(config.model_dump(mode="json")).backend == config.backend
    repeated = cli(backend="vllm", base_url=urls)
    assert repeated.backend.base_url == urls  # type: ignore[union-attr]
    assert cli(backend="vllm", base_url=[",".join(urls)]).backend == repeated.backend
    assert cli(backend="ollama", model="m", base_url="http://a:11434, http://b:11434").backend.base_url == [  # type: ignore[union-attr]
        "http://a:11434", "http://b:11434"]
    assert cli(backend="vllm", base_url=[urls[0]]).backend.base_url == urls[0]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("[]", "backend.base_url: expected a URL or a non-empty list of URLs"),
        ('["http://a/v1", "http://a/v1"]',
         "backend.base_url: the fleet's URLs must be distinct, got ['http://a/v1', 'http://a/v1']"),
        ("[1, 2]", "backend.base_url: expected a URL or a list of URLs"),
    ],
)
def test_a_bad_fleet_is_an_error_naming_base_url(tmp_path: Path, value: str, problem: str) -> None:
    path = write(tmp_path / "eval.toml", f'[backend]\nkind = "vllm"\nbase_url = {value}\n')
    with pytest.raises(ConfigError) as info:
        RunConfig.load(path)
    assert str(info.value) == f"{path}: {problem}"


def test_meta_eval_checks_its_backend_options_the_same_way(tmp_path: Path) -> None:
    from localeval.cli.session import meta_eval_settings_from_cli

    common: dict[str, Any] = {
        "data": tmp_path / "d.json", "metric": "geval:coherence", "methods": None, "fields": ["input=q"], "human": "h",
        "group": None, "limit": None, "metric_options": None, "items_out": None, "report": None, "model": None,
        "threads": None, "no_cache": True, "cache_dir": None,
    }
    with pytest.raises(ConfigError, match=r"^--threads does not apply to the ollama backend$"):
        meta_eval_settings_from_cli(**{**common, "backend": "ollama", "model": "m", "threads": 2})
    with pytest.raises(ConfigError, match=r"^--base-url does not apply to the llama.cpp backend$"):
        meta_eval_settings_from_cli(**{**common, "base_url": "http://x"})
    settings = meta_eval_settings_from_cli(**{**common, "backend": "vllm", "base_url": "http://gpu:8000/v1"})
    assert (settings.backend.kind, settings.backend.base_url) == ("vllm", "http://gpu:8000/v1")  # type: ignore[attr-defined]

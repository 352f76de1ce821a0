"""The registry of backend kinds: built-in ones, and other packages' found through their entry point.

Each plugin test writes a ``*.dist-info`` folder (METADATA, entry_points.txt) and the
plugin's module into ``tmp_path`` and puts ``tmp_path`` on ``sys.path``:
importlib.metadata discovers it as it would an installed package.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from command_line import localeval
from rich.console import Console
from typer.testing import CliRunner

from localeval.backends import make_backend
from localeval.backends.base import DistributionRequest, Message
from localeval.backends.kind import BuildContext
from localeval.backends.registry import backend_kind, backend_kinds
from localeval.config import CacheConfig, RunConfig
from localeval.errors import ConfigError
from localeval.judge import load_judge
from localeval.paths import Paths

#: A plugin's module: a judge that is sure of one score, and its kind.
FIXED_JUDGE = '''
"""A judge backend from another package: sure of one score, whatever it is asked."""
import json
import math
from pathlib import Path
from typing import Any

from pydantic import Field

from localeval.backends.base import Capabilities, DistributionReply, Fingerprint
from localeval.backends.options import BackendOptions
from localeval.backends.kind import BackendKind
from localeval.backends.schema import checked_reply
from localeval.backends.base import Usage
from localeval.distribution import renormalize


class FixedOptions(BackendOptions):
    model: str = "fixed-1"
    score: int = Field(4, ge=1, le=9, description="The candidate it gives 0.9 of the mass.")
    json_reply: dict[str, Any] = Field(default_factory=dict, description="Its reply to every JSON request.")
    closed_marker: str | None = Field(None, description="A file it writes when it is closed.")


class FixedBackend:
    def __init__(self, options: FixedOptions) -> None:
        self.options = options

    @property
    def capabilities(self):
        return Capabilities(json_schema=True, distribution=True, multi_token_candidates=True)

    @property
    def fingerprint(self):
        return Fingerprint(kind="fixed", model=self.options.model, runtime="fixed 1",
                           settings={"score": self.options.score})

    def generate_json(self, request):
        return checked_reply(json.dumps(self.options.json_reply), request.json_schema, "stop", Usage(),
                             request.max_tokens)

    def candidate_distribution(self, request):
        sure = str(self.options.score)
        rest = math.log(0.1 / max(1, len(request.candidates) - 1))
        logprobs = {c: (math.log(0.9) if c == sure else rest) for c in request.candidates}
        return DistributionReply(distribution=renormalize(logprobs))

    def close(self):
        if self.options.closed_marker:
            Path(self.options.closed_marker).write_text("closed")


def build(options, context):
    return FixedBackend(options)


KIND = BackendKind("fixed", FixedOptions, build, "Sure of one score: a test backend.")
NOT_A_KIND = "fixed"
'''


def install(site: Path, dist: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """Lay out distribution ``dist`` in ``site`` as pip would: its dist-info and its modules."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = [f"{name} = {target}" for name, target in entry_points.items()]
    (info / "entry_points.txt").write_text("[localeval.backends]\n" + "\n".join(lines) + "\n")
    for name, source in modules.items():
        (site / f"{name}.py").write_text(source)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path for distributions; the plugin modules imported from it are forgotten after."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    before = set(sys.modules)
    yield folder
    for name in set(sys.modules) - before:
        if name.startswith(("fixed_judge", "other_judges", "broken_judges")):  # fixed_judge_mine too
            del sys.modules[name]


@pytest.fixture
def fixed(site: Path) -> Path:
    install(site, "fixed-judge", {"fixed": "fixed_judge:KIND"}, {"fixed_judge": FIXED_JUDGE})
    return site


SCORE = DistributionRequest(messages=(Message(role="user", content="Rate it."),), prefill="Score: ",
                            candidates=tuple("12345"))


def test_make_backend_builds_a_kind_found_through_its_entry_point(fixed: Path) -> None:
    assert "fixed" in backend_kinds()
    assert "fixed_judge" not in sys.modules  # listed from metadata; imported only when used
    backend = make_backend("fixed", score=5, model="sure-5")
    assert "fixed_judge" in sys.modules
    assert (backend.fingerprint.kind, backend.fingerprint.model) == ("fixed", "sure-5")
    assert backend.candidate_distribution(SCORE).distribution.most_likely() == "5"
    with pytest.raises(ConfigError, match=r"^option 'n_threads' does not apply to the fixed backend$"):
        make_backend("fixed", n_threads=2)
    with pytest.raises(ConfigError, match=r"^fixed backend option score: Input should be less than or equal to 9$"):
        make_backend("fixed", score=10)


def test_a_config_table_of_a_plugins_kind_is_validated_by_its_model(fixed: Path, tmp_path: Path) -> None:
    path = tmp_path / "eval.toml"
    marker = tmp_path / "closed.txt"
    path.write_text(f'[backend]\nkind = "fixed"\nscore = 2\nclosed_marker = "{marker}"\n')
    config = RunConfig.load(path)
    assert type(config.backend).__name__ == "FixedOptions"
    assert RunConfig.model_validate(config.model_dump(mode="json")).backend == config.backend
    with ExitStack() as stack:
        judge = load_judge(config.backend, CacheConfig(enabled=False), Paths(tmp_path, tmp_path / "cache"),
                           {}, stack, Console(file=io.StringIO()))
        assert judge.candidate_distribution(SCORE).distribution.most_likely() == "2"
        assert not marker.exists()
    assert marker.read_text() == "closed"  # close() is part of the protocol: the stack called it
    path.write_text('[backend]\nkind = "fixed"\nn_ctx = 2048\n')
    with pytest.raises(ConfigError, match=r"eval\.toml: backend: option 'n_ctx' does not apply to the fixed backend$"):
        RunConfig.load(path)
    path.write_text('[backend]\nkind = "fixed"\nscore = "high"\n')
    with pytest.raises(ConfigError, match=r"eval\.toml: backend\.score: Input should be a valid integer"):
        RunConfig.load(path)


def cli(*args: str, site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``localeval`` in a fresh interpreter that finds the plugin the way an installed one is found."""
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    return localeval(*args, env={"PYTHONPATH": path, "COLUMNS": "250", "LOCALEVAL_CACHE_DIR": str(cwd / "cache")},
                     cwd=cwd)


def test_the_command_line_runs_a_plugins_backend(fixed: Path, tmp_path: Path) -> None:
    listed = cli("backends", "list", site=fixed, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert any(line.split()[1:3] == ["fixed", "│"] and "score" in line for line in listed.stdout.splitlines())

    (tmp_path / "judge.toml").write_text('[backend]\nkind = "fixed"\njson_reply = { true = true }\n')
    check = cli("backends", "check", "-c", "judge.toml", site=fixed, cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "valid: {\"true\": true}" in check.stdout and "4: 0.90" in check.stdout

    threads = cli("backends", "check", "--backend", "fixed", "--threads", "2", site=fixed, cwd=tmp_path)
    assert (threads.returncode, threads.stderr.strip()) == (2, "error: --threads does not apply to the fixed backend")

    (tmp_path / "cases.jsonl").write_text('{"input": "2+2?", "actual_output": "4"}\n')
    (tmp_path / "eval.toml").write_text(
        f'[backend]\nkind = "fixed"\nscore = 5\nclosed_marker = "{tmp_path / "closed.txt"}"\n'
        '[[metrics]]\nmetric = "geval"\ncriteria = "Correct."\nevaluation_steps = ["Check it."]\n'
        'include_reason = false\n[report]\npath = "report.json"\n'
    )
    run = cli("run", "cases.jsonl", "-c", "eval.toml", site=fixed, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["backend"]["kind"] == "fixed" and report["config"]["backend"]["score"] == 5
    assert report["cases"][0]["results"][0]["score"] > 0.9  # 0.9 of the mass on the top score
    assert (tmp_path / "closed.txt").read_text() == "closed"


def test_a_kind_taken_twice_names_both(fixed: Path) -> None:
    install(fixed, "other-judges", {"ollama": "other_judges:KIND", "fixed": "other_judges:KIND"},
            {"other_judges": "KIND = None\n"})
    with pytest.raises(ConfigError) as builtin:
        backend_kind("ollama")
    assert str(builtin.value) == (
        "backend kind 'ollama' is taken twice: by localeval (built in) and by entry point "
        "'ollama = other_judges:KIND' of other-judges 1.0"
    )
    with pytest.raises(ConfigError) as plugins:
        backend_kind("fixed")
    assert "backend kind 'fixed' is taken twice: by entry point" in str(plugins.value)
    assert "'fixed = fixed_judge:KIND' of fixed-judge 1.0" in str(plugins.value)
    assert "'fixed = other_judges:KIND' of other-judges 1.0" in str(plugins.value)
    assert backend_kind("llama.cpp").name == "llama.cpp"  # the others are not affected


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("broken_judges_absent:KIND", "ModuleNotFoundError: No module named 'broken_judges_absent'"),
        ("fixed_judge:NOT_A_KIND", "gives a str, not a localeval BackendKind"),
        ("fixed_judge:KIND", "gives the kind 'fixed'; the names must agree"),
    ],
)
def test_an_entry_point_that_gives_no_kind_is_an_error_naming_it(fixed: Path, target: str, problem: str) -> None:
    install(fixed, "broken-judges", {"broken": target}, {})
    with pytest.raises(ConfigError) as info:
        make_backend("broken")
    assert str(info.value) == f"entry point 'broken = {target}' of broken-judges 1.0: {problem}"


def test_an_api_key_comes_from_the_context_environment_and_errors_name_the_table(tmp_path: Path) -> None:
    context = BuildContext(environ={}, paths=Paths(tmp_path, tmp_path / "cache"), where="judges.strict")
    with pytest.raises(ConfigError, match=r"^judges\.strict\.api_key_env: the environment variable JUDGE_KEY is not set$"):
        make_backend("vllm", api_key_env="JUDGE_KEY", context=context)


@pytest.mark.parametrize(
    ("kind", "options", "problem"),
    [
        ("ollama", {"model": "m", "n_threads": 2}, "option 'n_threads' does not apply to the ollama backend"),
        ("ollama", {"model": "m", "api_key": "k"}, "option 'api_key' does not apply to the ollama backend"),
        ("llama.cpp", {"base_url": "http://x"}, "option 'base_url' does not apply to the llama.cpp backend"),
        ("llama.cpp", {"transport": None}, "option 'transport' does not apply to the llama.cpp backend"),
        ("openai-compatible", {}, "openai-compatible backend option base_url: Field required"),
    ],
)
def test_make_backend_refuses_an_option_the_kind_does_not_take(kind: str, options: dict, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_backend(kind, **options)
    assert str(info.value) == problem


def test_the_built_in_kinds_and_the_package_constants_agree() -> None:
    from localeval.backends import BACKEND_KINDS, OPENAI_PRESETS

    assert backend_kinds()[: len(BACKEND_KINDS)] == list(BACKEND_KINDS)
    assert BACKEND_KINDS[:3] == ("llama.cpp", "openai-compatible", "ollama")
    assert BACKEND_KINDS[3:] == OPENAI_PRESETS
    for name in OPENAI_PRESETS:
        kind = backend_kind(name)
        assert kind.options.model_fields["kind"].default == name
        assert kind.parse({}).kind == name  # every preset has a base_url: it needs no option at all


# -- register_backend: a kind added by the program that embeds localeval -----------------


@pytest.fixture
def mine(site: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The fixed judge's module, importable but not installed (no entry point); nothing registered yet."""
    from localeval.backends import registry

    monkeypatch.setattr(registry, "_REGISTERED", {})  # what a test registers is forgotten after it
    (site / "fixed_judge_mine.py").write_text(FIXED_JUDGE)
    return importlib.import_module("fixed_judge_mine")


def test_a_registered_kind_runs_from_a_config_file_and_is_listed(mine: Any, tmp_path: Path) -> None:
    import localeval
    from localeval.cli import session
    from localeval.cli.app import app

    kind = localeval.register_backend("mine", mine.build, mine.FixedOptions, description="Mine: sure of one score.")
    assert (kind.name, kind.options, kind.factory, kind.extras) == ("mine", mine.FixedOptions, mine.build, ())
    assert backend_kinds()[-1] == "mine" and backend_kind("mine") is kind
    (tmp_path / "cases.jsonl").write_text('{"input": "2+2?", "actual_output": "4"}\n')
    (tmp_path / "eval.toml").write_text(
        '[dataset]\npath = "cases.jsonl"\n[cache]\nenabled = false\n[backend]\nkind = "mine"\nscore = 5\n'
        '[[metrics]]\nmetric = "geval"\ncriteria = "Correct."\nevaluation_steps = ["Check it."]\ninclude_reason = false\n'
    )
    config = RunConfig.load(tmp_path / "eval.toml")
    assert type(config.backend) is mine.FixedOptions and config.backend.kind == "mine"
    quiet = Console(file=io.StringIO())
    code = session.run(config, Paths(tmp_path / "home", tmp_path / "cache"), quiet, quiet, {},
                       session.RunFlags(run_dir=tmp_path / "run"))
    assert code == session.EXIT_OK
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["config"]["backend"] == {"kind": "mine", "model": "fixed-1", "score": 5, "json_reply": {},
                                           "closed_marker": None}
    # 0.9 on 5 and 0.025 on each of 1-4: 4.75 on 1-5, (4.75 - 1) / 4 on 0-1
    assert report["cases"][0]["results"][0]["score"] == pytest.approx(0.9375, abs=1e-12)
    assert make_backend("mine", score=3).candidate_distribution(SCORE).distribution.most_likely() == "3"

    listed = CliRunner().invoke(app, ["backends", "list"], env={"COLUMNS": "250"}, catch_exceptions=False)
    assert listed.exit_code == 0, listed.output
    [row] = [line for line in listed.output.splitlines() if "│ mine " in line]
    assert "Mine: sure of one score." in row and "model, score, json_reply, closed_marker" in row


def test_register_backend_refuses_a_name_taken_or_a_model_that_is_no_backend_options(
        mine: Any, fixed: Path) -> None:
    from localeval import register_backend

    register_backend("mine", mine.build, mine.FixedOptions)
    refused = {
        "ollama": "backend kind 'ollama' is taken: by localeval (built in); register another name",
        "mine": "backend kind 'mine' is taken: by register_backend() in this process; register another name",
        "fixed": "backend kind 'fixed' is taken: by entry point 'fixed = fixed_judge:KIND' of fixed-judge 1.0; "
                 "register another name",
    }
    for name, message in refused.items():
        with pytest.raises(ConfigError) as info:
            register_backend(name, mine.build, mine.FixedOptions)
        assert str(info.value) == message
    with pytest.raises(TypeError, match=r"^backend kind 'other': its options model must subclass localeval's"):
        register_backend("other", mine.build, dict)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^a backend kind is a non-empty name without surrounding spaces, not ' x'$"):
        register_backend(" x", mine.build, mine.FixedOptions)
    assert backend_kind("mine").factory is mine.build and "other" not in backend_kinds()

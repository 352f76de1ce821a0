"""The pytest plugin, run on small inner test files with pytester; and the example, with the real model."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import localeval.cli.session

# Imported here so that pytester's restore of sys.modules after an in-process run
# keeps them (it removes what an inner run imported first).
import localeval.judge
import localeval.testing  # noqa: F401
from localeval.paths import Paths

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "pytest" / "test_chatbot.py"
#: Where the models are. pytester points HOME at its own folder, so say it explicitly.
MODEL_HOME = Paths.from_environ(os.environ).home

SELECTION = """
import pytest

def test_plain():
    pass

@pytest.mark.localeval
def test_marked():
    pass

def test_judged(localeval_judge):
    assert localeval_judge == "stand-in judge"
"""
STAND_IN = """
import pytest

@pytest.fixture(scope="session")
def localeval_judge():
    return "stand-in judge"
"""


def test_the_plugin_is_registered_for_pytest() -> None:
    [plugin] = [e for e in entry_points(group="pytest11") if e.name == "localeval"]
    assert plugin.value == "localeval.testing.pytest_plugin"


def test_options_and_marker_are_declared(pytester: pytest.Pytester) -> None:
    options = pytester.runpytest("--help").stdout.str()
    for option in ("--localeval-config", "--localeval-model", "--localeval-backend", "--localeval-base-url",
                   "--no-localeval-cache", "--localeval-skip", "localeval_config (string)",
                   "localeval_cache (bool)"):
        assert option in options
    pytester.runpytest("--markers").stdout.fnmatch_lines(["@pytest.mark.localeval: the test is judged by a local model*"])


def test_a_failing_assertion_shows_metric_score_threshold_and_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from localeval import ExactMatch, TestCase
        from localeval.testing import assert_test

        def test_answer():
            case = TestCase(name="capital", input="Capital of France?", actual_output="Lyon",
                            expected_output="Paris")
            assert_test(case, [ExactMatch()])
        """
    )
    result = pytester.runpytest("-W", "error")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "    def test_answer():",
            ">       assert_test(case, [ExactMatch()])",
            "E       AssertionError: case 'capital': 1 of 1 metric did not meet expectations",
            (
                "E         exact_match: score 0.00 < threshold 1.00 (failed; passes when score >= threshold)"
                " — reason: The outputs differ at character 0: 'Lyon' where 'Paris' was expected."
            ),
        ]
    )
    assert "localeval/testing/" not in result.stdout.str()  # the frames inside the library are hidden


@pytest.mark.parametrize(
    ("options", "outcomes"),
    [
        ((), {"passed": 3}),
        (("-m", "localeval"), {"passed": 2, "deselected": 1}),
        (("-m", "not localeval"), {"passed": 1, "deselected": 2}),
        (("--localeval-skip",), {"passed": 1, "skipped": 2}),
    ],
)
def test_tests_using_the_judge_are_marked_for_selection(
    pytester: pytest.Pytester, options: tuple[str, ...], outcomes: dict[str, int]
) -> None:
    pytester.makeconftest(STAND_IN)
    pytester.makepyfile(SELECTION)
    result = pytester.runpytest("--strict-markers", "-W", "error", *options)
    result.assert_outcomes(**outcomes)


def test_a_test_without_the_judge_loads_no_model(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytester.makepyfile(
        """
        import sys

        def test_judge_free(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("localeval")
            loaded = [m for m in ("llama_cpp", "localeval.backends.llamacpp", "localeval.judge") if m in sys.modules]
            assert loaded == []

        def test_judged(localeval_judge):
            pass
        """
    )
    env_home = tmp_path / "no-models"
    monkeypatch.setenv("LOCALEVAL_HOME", str(env_home))  # nothing could load from there
    result = pytester.runpytest_subprocess("-m", "not localeval", "-W", "error")
    result.assert_outcomes(passed=1, deselected=1)
    assert not env_home.exists()


SETTINGS = """
from localeval.testing.pytest_plugin import judge_settings

def test_settings(pytestconfig):
    s = judge_settings(pytestconfig)
    b = s.backend
    print("SETTINGS", b.kind, b.model, getattr(b, "base_url", None), getattr(b, "n_threads", None), s.cache.enabled)
"""


@pytest.mark.parametrize(
    ("ini", "options", "expected"),
    [
        ("", (), "llama.cpp None None 1 True"),
        ("", ("--localeval-config", "conf/eval.toml"), "llama.cpp {root}/conf/judge.gguf None 2 False"),
        ("localeval_config = conf/eval.toml\nlocaleval_cache = true\n", (),
         "llama.cpp {root}/conf/judge.gguf None 2 False"),
        ("localeval_model = models/judge.gguf\n", (), "llama.cpp {root}/models/judge.gguf None 1 True"),
        ("localeval_model = models/judge.gguf\nlocaleval_cache = false\n", ("--localeval-model", "gemma-3-270m"),
         "llama.cpp gemma-3-270m None 1 False"),
        ("localeval_backend = ollama\n",
         ("--localeval-config", "conf/eval.toml", "--localeval-model", "qwen3:0.6b",
          "--localeval-base-url", "http://127.0.0.1:9"),
         "ollama qwen3:0.6b http://127.0.0.1:9 None False"),  # the file's table is for llama.cpp
        ("", ("--no-localeval-cache", "--localeval-backend", "vllm"), "vllm None http://localhost:8000/v1 None False"),
    ],
)
def test_options_ini_keys_and_config_file_set_up_the_judge(
    pytester: pytest.Pytester, ini: str, options: tuple[str, ...], expected: str
) -> None:
    pytester.makeini("[pytest]\n" + ini)
    conf = pytester.mkdir("conf")
    (conf / "eval.toml").write_text('[backend]\nmodel = "judge.gguf"\nn_threads = 2\n\n[cache]\nenabled = false\n')
    pytester.makepyfile(SETTINGS)
    result = pytester.runpytest("-s", *options)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*SETTINGS " + expected.format(root=pytester.path)])


def test_a_judge_that_cannot_load_fails_its_tests_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_one(localeval_judge):
            pass

        def test_two(localeval_judge):
            pass

        def test_free():
            pass
        """
    )
    result = pytester.runpytest("--localeval-backend", "nope")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*_ ERROR at setup of test_one _*",
            "localeval_judge: command line: backend.kind: unknown backend 'nope' (known: llama.cpp, *)",
            "*_ ERROR at setup of test_two _*",
            "localeval_judge: command line: backend.kind: unknown backend 'nope' (known: llama.cpp, *)",
            "*short test summary*",
        ]
    )
    assert "Traceback" not in result.stdout.str() and "validation error" not in result.stdout.str()


def test_cases_parametrize_a_test_over_a_dataset(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", data='{"name": "first", "input": "a"}\n{"input": "b"}\n')
    pytester.makepyfile(
        """
        import pytest
        from localeval.testing import cases

        @pytest.mark.parametrize("case", cases("data.jsonl"))
        def test_case(case):
            assert case.input in ("a", "b")
        """
    )
    result = pytester.runpytest("-v", "-W", "error")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*::test_case[[]first[]] PASSED*", "*::test_case[[]data.jsonl:2[]] PASSED*"])


def test_a_bad_dataset_is_a_collection_error_naming_file_and_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", data='{"input": "a"}\n{"input": "b", "answer": "c"}\n')
    pytester.makepyfile(
        """
        import pytest
        from localeval.testing import cases

        @pytest.mark.parametrize("case", cases("data.jsonl"))
        def test_case(case):
            pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["E   localeval.errors.DatasetError: data.jsonl:2: field 'answer': not a test-case field*"])


# --- with the real default model ----------------------------------------------------------------


@pytest.mark.model
def test_the_session_judge_is_loaded_once_and_closed_at_the_end(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCALEVAL_HOME", str(MODEL_HOME))
    pytester.makeconftest(
        """
        from localeval.backends.llamacpp import LlamaCppBackend

        close = LlamaCppBackend.close

        def announced_close(self):
            print("CLOSED")
            close(self)

        LlamaCppBackend.close = announced_close
        """
    )
    pytester.makepyfile(
        """
        import pytest

        seen = []

        @pytest.mark.parametrize("n", [1, 2])
        def test_judge(localeval_judge, n):
            seen.append(localeval_judge)
            assert all(judge is seen[0] for judge in seen)
            print("JUDGE", type(localeval_judge).__name__, localeval_judge.fingerprint.model)
        """
    )
    cached = pytester.runpytest_subprocess("-s", "-W", "error")
    cached.assert_outcomes(passed=2)
    judged = "*JUDGE CachedBackend smollm2-135m-instruct"
    cached.stdout.fnmatch_lines([judged, judged, "*CLOSED"])  # one judge for both tests, closed after them
    assert cached.stdout.str().count("CLOSED") == 1
    plain = pytester.runpytest_subprocess("-s", "-W", "error", "--no-localeval-cache")
    plain.assert_outcomes(passed=2)
    plain.stdout.fnmatch_lines(["*JUDGE LlamaCppBackend smollm2-135m-instruct"])


@pytest.mark.model
def test_the_example_passes_with_the_default_model(tmp_path: Path) -> None:
    env = {**os.environ, "LOCALEVAL_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(EXAMPLE), "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "11 passed" in result.stdout
    assert (tmp_path / "cache").is_dir()  # the session judge was behind the cache

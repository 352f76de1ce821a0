"""The walkthrough of docs/python-api.md runs as written: its ```python blocks, in order, in one namespace,
as a notebook's cells would, in a folder of their own with the CLI's cache and runs there too.

The fast test puts a stand-in judge where the default judge's model would load; the slow one loads
the real default judge (SmolLM2 in the tests: LOCALEVAL_MODEL)."""

from __future__ import annotations

import re
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from localeval.backends.base import Backend, DistributionReply, DistributionRequest, JsonReply, JsonRequest
from localeval.backends.cache import CachedBackend, open_cache
from localeval.backends.options import BackendOptions
from localeval.config import CacheConfig
from localeval.paths import Paths
from localeval.reports.run_index import list_runs
from localeval.testing import ScriptedJudge

PAGE = Path(__file__).resolve().parent.parent / "docs" / "python-api.md"


def python_blocks(text: str) -> list[str]:
    """The page's ```python blocks, in order."""
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)


def run_walkthrough(folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Every block of the page executed in order in ``folder``; the namespace they leave."""
    monkeypatch.chdir(folder)
    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(folder / "cache"))
    monkeypatch.setenv("LOCALEVAL_RUNS_DIR", str(folder / "runs"))
    namespace: dict[str, Any] = {"__name__": "walkthrough"}
    blocks = python_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 5  # a broken pattern would run nothing and pass
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"{PAGE.name}, python block {number}", "exec"), namespace)  # noqa: S102 -- the docs' own code
    return namespace


def check_the_walkthrough(namespace: dict[str, Any], folder: Path, calls_per_case: int) -> None:
    """What the page says happens, happened."""
    first, rerun, after, report = (namespace[name] for name in ("first", "rerun", "after", "report"))
    assert first.stats.model_calls == 3 * calls_per_case
    assert (rerun.stats.model_calls, rerun.stats.cache_hits) == (0, first.stats.model_calls)
    assert after.stats.model_calls == calls_per_case  # only the fixed answer is judged again
    assert report.stats.model_calls == 0  # aevaluate: the same cache
    assert (folder / "baseline.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    listed = list_runs(folder / "runs")  # what `localeval runs` lists
    assert sorted(str(e.name) for e in listed) == ["None", "None", "baseline", "fixed"]  # started within a second
    assert {e.status for e in listed} == {"finished"}
    assert all((Path(e.folder) / "report.html").is_file() for e in listed)
    fixed = {m.metric: m.fixes for m in namespace["compare"](first, after).metrics}
    assert fixed["exact_match"] == 1


class StandIn(ScriptedJudge):
    """Every score alike (the candidates equally likely) and every reason the same sentence: the
    walkthrough's mechanics, not a model's judgement."""

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        self.logprobs.append(dict.fromkeys(request.candidates, 0.0))
        return super().candidate_distribution(request)

    def generate_json(self, request: JsonRequest) -> JsonReply:
        self.json_values.append({"reason": "The stand-in judge scores every answer alike."})
        return super().generate_json(request)


def test_the_walkthrough_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[BackendOptions] = []

    def load_judge(table: BackendOptions, cache: CacheConfig, paths: Paths, environ: object, stack: ExitStack,
                   status: object, *, where: str) -> Backend:
        """localeval.judge.load_judge, with the stand-in where the model would load."""
        loaded.append(table)
        store = stack.enter_context(open_cache(cache.dir or paths.cache)) if cache.enabled else None
        judge = StandIn()
        return CachedBackend(judge, store) if store is not None else judge

    monkeypatch.setattr("localeval.api.judges.load_judge", load_judge)
    monkeypatch.setenv("LOCALEVAL_HOME", str(tmp_path / "home"))
    namespace = run_walkthrough(tmp_path, monkeypatch)
    assert [(t.kind, getattr(t, "model", None)) for t in loaded] == [("llama.cpp", None)] * 4  # the default judge
    check_the_walkthrough(namespace, tmp_path, calls_per_case=2)  # G-Eval's score, then its reason


@pytest.mark.model
def test_the_walkthrough_runs_with_the_real_default_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    namespace = run_walkthrough(tmp_path, monkeypatch)
    check_the_walkthrough(namespace, tmp_path, calls_per_case=2)
    assert namespace["first"].backend.model == "smollm2-135m-instruct"

"""deepeval's metrics with localeval's judge (``LocalevalModel``) against deepeval's own ``LocalModel`` (issue #27).

    DEEPEVAL_TELEMETRY_OPT_OUT=1 DEEPEVAL_DISABLE_DOTENV=1 benchmarks/.venv-deepeval/bin/python \\
        benchmarks/deepeval_bridge.py [--cases 4] [--models smollm2-135m-instruct,...] [--out results.json]

Runs in an environment with deepeval 4.3.1, localeval and llama-cpp-python[server] (docs/deepeval.md says
how to make it). For each model: starts llama-cpp-python's server on 127.0.0.1 (one thread, n_ctx 4096, as
benchmarks/speed does), then judges the first N cases of benchmarks/speed's QAGS set with deepeval's
``GEval`` (SummEval's consistency steps on the article and summary), ``FaithfulnessMetric`` (the summary
against the article's chunks) and ``AnswerRelevancyMetric``, deepeval's defaults otherwise (reasons on,
``async_mode=True``), fresh metric objects for each case, case by case and on each case each system in turn
(a run cut short compares the systems on the same cases):

* ``bridge``: ``LocalevalModel`` on in-process llama.cpp (one thread), on a fresh cache;
* ``bridge-http``: ``LocalevalModel`` on the same server (localeval's ``llama-cpp-python`` kind), fresh cache;
* ``localmodel``: deepeval's ``LocalModel`` on the same server.

Prints one table row per model, system and metric: scored results, errors by kind (deepeval's "invalid
JSON", a reply of the wrong shape: pydantic's ValidationError or a missing key, any other), the G-Eval scores
weighted by log-probabilities, seconds. ``--out`` writes every result with its error text, rewritten after
each one; ``--table FILE`` prints the table of such a file. deepeval's own per-call timeout (about 89 s by
default) applies to ``LocalModel`` unless ``DEEPEVAL_DISABLE_TIMEOUTS=1`` is set; a call it cuts off is an
"other" error. deepeval's telemetry is off (this script sets ``DEEPEVAL_TELEMETRY_OPT_OUT`` before importing
it) and it runs in a scratch directory (deepeval may write ``./.deepeval``).
"""

from __future__ import annotations

import os

os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] = "1"  # before deepeval is imported: no telemetry, ever
os.environ["DEEPEVAL_DISABLE_DOTENV"] = "1"

import argparse  # noqa: E402 -- after the environment is set
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from deepeval.metrics import AnswerRelevancyMetric, FaithfulnessMetric, GEval  # noqa: E402
from deepeval.models import LocalModel  # noqa: E402
from deepeval.test_case import LLMTestCase, SingleTurnParams  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from localeval.backends.catalog import ModelCatalog  # noqa: E402
from localeval.integrations.deepeval import LocalevalModel  # noqa: E402
from localeval.integrations.promptfoo import close_judges  # noqa: E402
from localeval.metrics.presets import PRESETS  # noqa: E402
from localeval.paths import Paths  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "speed"))
from cases import load_cases  # noqa: E402 -- benchmarks/speed's cases and server, shared
from server import LlamaServer  # noqa: E402

SYSTEMS = ("bridge", "bridge-http", "localmodel")
METRICS = ("geval", "faithfulness", "answer_relevancy")
ERROR_KINDS = ("invalid JSON", "wrong shape", "other")


def metric(name: str, model: Any) -> Any:
    """A fresh deepeval metric object (deepeval keeps a result on it)."""
    if name == "geval":
        steps = list(PRESETS["consistency"]["evaluation_steps"])
        return GEval(name="consistency", evaluation_steps=steps, model=model,
                     evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT])
    return FaithfulnessMetric(model=model) if name == "faithfulness" else AnswerRelevancyMetric(model=model)


def error_kind(err: BaseException) -> str:
    """deepeval's "invalid JSON", a reply of the wrong shape, or anything else."""
    if "invalid JSON" in str(err):
        return "invalid JSON"
    return "wrong shape" if isinstance(err, ValidationError | KeyError | TypeError) else "other"


class WeightedCount:
    """Counts G-Eval scores read with log-probabilities: raw responses that carried the score's position."""

    def __init__(self, model: Any) -> None:
        self.count = 0
        self._inner = model.generate_raw_response
        model.generate_raw_response = self  # the async twin calls it too

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        response, cost = self._inner(*args, **kwargs)
        self.count += bool(response.choices[0].logprobs.content)
        return response, cost


def measure(name: str, model: Any, case: dict[str, Any]) -> dict[str, Any]:
    """One metric on one case: seconds, score, error."""
    test_case = LLMTestCase(input=case["input"], actual_output=case["actual_output"],
                            retrieval_context=case["retrieval_context"])
    judged = metric(name, model)
    start = time.perf_counter()
    record: dict[str, Any] = {"metric": name, "case": case["name"], "score": None, "error": None, "kind": None}
    try:
        judged.measure(test_case, _show_indicator=False)
        record["score"] = judged.score
        if judged.score is None:
            record["error"], record["kind"] = "no score", "other"
    except Exception as err:  # noqa: BLE001 -- any failure of a metric is that result's error, counted by kind
        record["error"], record["kind"] = f"{type(err).__name__}: {err}"[:400], error_kind(err)
    record["seconds"] = time.perf_counter() - start
    return record


def judges(model_name: str, server: LlamaServer | None, scratch: Path) -> dict[str, Callable[[], Any]]:
    """How to make each system's deepeval model."""
    url = server.url if server else ""
    served = server.model_id if server else ""
    return {
        "bridge": lambda: LocalevalModel({"model": model_name, "n_threads": 1},
                                         cache={"dir": str(scratch / f"cache-{model_name}-bridge")}),
        "bridge-http": lambda: LocalevalModel({"kind": "llama-cpp-python", "base_url": f"{url}/v1", "model": served},
                                              cache={"dir": str(scratch / f"cache-{model_name}-http")}),
        "localmodel": lambda: LocalModel(model=served, base_url=f"{url}/v1", api_key="x"),
    }


def run_model(model_name: str, systems: list[str], cases: list[dict[str, Any]], scratch: Path,
              out: Path | None, records: list[dict[str, Any]]) -> None:
    """Every system on every case and metric with one judge model, case by case (a run cut short stays
    balanced); each result appended to ``records`` (and written to ``out``) as it comes; the server stopped
    whatever happens."""
    _, path = ModelCatalog.from_environ(Paths.from_environ(os.environ).home, os.environ).resolve(model_name)
    server = LlamaServer(path, scratch / f"server-{model_name}.log", threads=1) if {"bridge-http", "localmodel"} & set(
        systems) else None
    try:
        if server:
            server.start()
        makers = judges(model_name, server, scratch)
        models = {system: makers[system]() for system in systems}
        counters = {system: WeightedCount(models[system]) for system in systems if system != "localmodel"}
        for case in cases:
            for system in systems:
                for name in METRICS:
                    before = counters[system].count if system in counters else 0
                    record = {"model": model_name, "system": system, **measure(name, models[system], case)}
                    if name == "geval":
                        record["from_logprobs"] = (counters[system].count - before) > 0 if system in counters else False
                    records.append(record)
                    print(json.dumps({k: record[k] for k in ("model", "system", "metric", "case", "score", "kind",
                                                              "seconds")} | {"error": (record["error"] or "")[:200]}),
                          flush=True)
                    if out:
                        out.write_text(json.dumps(records, indent=1))
        close_judges()
    finally:
        if server:
            server.stop()


def table(records: list[dict[str, Any]]) -> str:
    """The markdown table: one row per model, system and metric."""
    lines = ["| model | system | metric | scored | invalid JSON | wrong shape | other errors | G-Eval from "
             "log-probs | median s | total s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for model, system in dict.fromkeys((r["model"], r["system"]) for r in records):
        for name in METRICS:
            rows = [r for r in records if (r["model"], r["system"], r["metric"]) == (model, system, name)]
            if not rows:
                continue
            kinds = [sum(r["kind"] == kind for r in rows) for kind in ERROR_KINDS]
            seconds = [r["seconds"] for r in rows]
            logprobs = f"{sum(r['from_logprobs'] for r in rows)}/{len(rows)}" if name == "geval" else "–"
            lines.append(f"| {model} | {system} | {name} | {sum(r['error'] is None for r in rows)}/{len(rows)} | "
                         + " | ".join(str(k) for k in kinds)
                         + f" | {logprobs} | {statistics.median(seconds):.1f} | {sum(seconds):.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=4)
    parser.add_argument("--models", default="smollm2-135m-instruct", help="comma-separated localeval model names")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"a subset of {','.join(SYSTEMS)}")
    parser.add_argument("--out", type=Path, help="write every result (with its error text) here as JSON, as it comes")
    parser.add_argument("--table", type=Path, help="only print the table of a file --out wrote (a run cut short)")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text())))
        return
    systems = args.systems.split(",")
    if unknown := set(systems) - set(SYSTEMS):
        parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
    cases = load_cases(args.cases)
    out = args.out.resolve() if args.out else None  # before the scratch directory becomes the working one
    records: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="deepeval-bridge-") as folder:
        os.chdir(folder)  # deepeval may write ./.deepeval
        for model_name in args.models.split(","):
            run_model(model_name, systems, cases, Path(folder), out, records)
    print(f"\n{args.cases} cases, {time.perf_counter() - started:.0f} s in all\n")
    print(table(records))


if __name__ == "__main__":
    main()

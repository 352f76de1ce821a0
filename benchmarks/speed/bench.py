"""localeval vs deepeval vs the physical limit, on one machine in one run (issue #7).

    python benchmarks/speed/bench.py OUT_DIR --deepeval-python VENV/bin/python [--cases 20] [--rounds 2]

(run.sh sets up deepeval's virtualenv and calls this.) Starts llama-cpp-python's
server with the judge model (--model; default: the default judge) behind a counting proxy, then, each round,
measures every case with: the physical limit (limit.py); deepeval 4.3.1's
metrics through the proxy (run_deepeval.py, in its own virtualenv); localeval
through the same proxy and server; localeval in-process (cold, a fresh cache);
and the same in-process run again on its cache. Rounds repeat the whole
sequence (A-B-A-B) so that machine noise hits every system. Writes
OUT_DIR/results.json (every record, the summary, the ratios, the targets; also
after each round) and prints the tables. The server and proxy are always stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import summary  # noqa: E402 -- after the path is set
import table  # noqa: E402
from cases import load_cases  # noqa: E402
from deepeval_phase import DeepevalPhase  # noqa: E402
from limit import PhysicalLimit  # noqa: E402
from proxy import CountingProxy, Record  # noqa: E402
from run_localeval import Judge, localeval_metrics, measure_case  # noqa: E402
from server import N_CTX, LlamaServer  # noqa: E402

GEVAL_DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
#: Metric rows: a metric set, or a set with "+reason" (localeval writes reasons; deepeval always does).
ROWS = ("geval", "geval+reason", "geval4", "faithfulness", "faithfulness+reason", "answer_relevancy",
        "answer_relevancy+reason")
SYSTEMS = ("limit", "deepeval", "localeval-http", "localeval", "localeval-cached")


def metric_sets() -> dict[str, list[dict[str, Any]]]:
    """The metric definitions both systems get: G-Eval steps from localeval's SummEval presets."""
    from localeval.metrics.presets import PRESETS

    def geval(name: str, preset_metric: bool) -> dict[str, Any]:
        preset = PRESETS[name]
        return {"kind": "geval", "name": name, "evaluation_steps": list(preset["evaluation_steps"]),
                "evaluation_params": list(preset["evaluation_params"]), "score_range": list(preset["score_range"]),
                "preset": preset_metric}

    # One criterion: a plain `geval` with fixed steps, as a user writes one (the criteria come first).
    # Four criteria: SummEval's dimensions as localeval's presets, with the same steps (the case first).
    return {
        "geval": [geval("consistency", preset_metric=False)],
        "geval4": [geval(name, preset_metric=True) for name in GEVAL_DIMENSIONS],
        "faithfulness": [{"kind": "faithfulness", "name": "faithfulness"}],
        "answer_relevancy": [{"kind": "answer_relevancy", "name": "answer_relevancy"}],
    }


class Bench:
    """The systems under test, their shared server and proxy, and the records so far."""

    def __init__(self, args: argparse.Namespace, work: Path, plan: dict[str, Any], model: Path, spec: Any,
                 server: LlamaServer, proxy: CountingProxy) -> None:
        self.args, self.work, self.plan = args, work, plan
        self.cases = plan["cases"]
        self.model, self.spec, self.server, self.proxy = model, spec, server, proxy
        self.records: list[dict[str, Any]] = []
        self.limit: PhysicalLimit | None = None
        self.judges: dict[str, Judge] = {}
        self.deepeval = DeepevalPhase(args.deepeval_python, work / "plan.json", work, server, proxy,
                                      args.deepeval_timeout) if "deepeval" in args.systems else None

    def judge(self, system: str) -> Judge:
        if system not in self.judges:
            self.judges[system] = (Judge.http(self.proxy.url, self.server.model_id) if system == "localeval-http"
                                   else Judge.in_process(self.model, self.spec, self.args.threads))
        return self.judges[system]

    def round(self, number: int) -> None:
        if "limit" in self.args.systems:
            self.measure_limit(number)
        for metric_set in dict.fromkeys(summary.base(row) for row in self.args.metrics):
            if self.deepeval is not None:
                self.measure_deepeval(self.deepeval, metric_set, number)
            for row in (r for r in self.args.metrics if summary.base(r) == metric_set):
                for system in ("localeval-http", "localeval"):
                    if system in self.args.systems:
                        self.measure_localeval(system, row, number)

    def measure_limit(self, number: int) -> None:
        self.limit = self.limit or PhysicalLimit(self.model, self.args.threads, N_CTX)
        for index, case in enumerate(self.cases):
            figures = self.limit.measure(case)
            for metric_set in dict.fromkeys(summary.base(row) for row in self.args.metrics):
                rag = metric_set in ("faithfulness", "answer_relevancy")
                seconds = figures["forward_s"] + (figures["verdicts_s"] if rag else 0.0)
                verdicts = figures["verdict_tokens"] if rag else 0
                self.records.append({
                    "system": "limit", "metric": metric_set, "round": number, "case": index, "seconds": seconds,
                    "results": 1, "scored": 1, "errored": False, "model_calls": 1,
                    "prompt_tokens": figures["text_tokens"], "completion_tokens": verdicts,
                    "forward_tokens": figures["text_tokens"] + verdicts, "limit": figures,
                })
        first = summary.base(self.args.metrics[0])
        self._progress("limit", first, number)

    def measure_deepeval(self, phase: DeepevalPhase, metric_set: str, number: int) -> None:
        label = f"deepeval|{metric_set}|r{number}"
        results = phase.run(metric_set, label, len(self.cases))
        size = len(self.plan["metric_sets"][metric_set])
        for index in range(len(self.cases)):
            result = results.get(index, {"seconds": 0.0, "scores": {}, "errors": {"*": "not run"}})
            scored = sum(1 for s in result["scores"].values() if s is not None)
            self.records.append({
                "system": "deepeval", "metric": metric_set, "round": number, "case": index,
                "seconds": result["seconds"], "results": size, "scored": scored,
                "errored": bool(result["errors"]) or scored < size, "timed_out": result.get("timed_out", False),
                "drain_s": result.get("drain_s"),
                "scores": result["scores"], "errors": result["errors"],
                **_http_counts(self.proxy.take(f"{label}|{index}")),
            })
        self._progress("deepeval", metric_set, number)

    def measure_localeval(self, system: str, row: str, number: int) -> None:
        judge = self.judge(system)
        specs = self.plan["metric_sets"][summary.base(row)]
        metrics = localeval_metrics(specs, include_reason=row.endswith("+reason"))
        cached = judge.cached(self.work / "caches" / f"{system}-{row}-r{number}")
        passes = [system]
        if system == "localeval" and "localeval-cached" in self.args.systems:
            passes.append("localeval-cached")
        self.proxy.drain(self.args.deepeval_timeout)  # nothing may still be running on the server
        for name in passes:  # cold, then (in-process) the same again on the same cache
            for index, case in enumerate(self.cases):
                label = f"{name}|{row}|r{number}|{index}"
                self.proxy.mark(label)
                result = measure_case(case, metrics, cached, judge.counting)
                self.proxy.mark("idle")
                record = {"system": name, "metric": row, "round": number, "case": index, **result,
                          "results": len(metrics), "scored": sum(1 for s in result["scores"].values() if s is not None)}
                record["errored"] = bool(result["errors"]) or record["scored"] < len(metrics)
                if system == "localeval-http":  # the server's count, as for deepeval; the client's kept beside it
                    record.update({f"client_{k}": record[k] for k in ("prompt_tokens", "completion_tokens")})
                    record.update(_http_counts(self.proxy.take(label)))
                    record["forward_tokens"] = None
                self.records.append(record)
            self._progress(name, row, number)

    def _progress(self, system: str, metric: str, number: int) -> None:
        mine = [r for r in self.records if (r["system"], r["metric"], r["round"]) == (system, metric, number)]
        seconds = sum(r["seconds"] for r in mine)
        errored = sum(1 for r in mine if r["errored"])
        print(f"round {number + 1}: {system:<16} {metric:<24} {seconds:8.1f} s  errored {errored}", flush=True)

    def close(self) -> None:
        for judge in self.judges.values():
            judge.close()
        if self.limit is not None:
            self.limit.close()


def _http_counts(records: list[Record]) -> dict[str, Any]:
    """What the proxy saw of one case: model calls and tokens as the server reports them."""
    generation = [r for r in records if r.generation]
    finishes: dict[str, int] = {}
    for r in generation:
        finishes[str(r.finish_reason)] = finishes.get(str(r.finish_reason), 0) + 1
    return {
        "model_calls": len(generation),
        "prompt_tokens": sum(r.prompt_tokens or 0 for r in generation),
        "completion_tokens": sum(r.completion_tokens or 0 for r in generation),
        "server_seconds": sum(r.seconds for r in generation),
        "http_errors": sum(1 for r in generation if r.status != 200),
        "finish_reasons": finishes,
        "requests": [{"path": r.path, "status": r.status, "seconds": r.seconds, "prompt_tokens": r.prompt_tokens,
                      "completion_tokens": r.completion_tokens, "finish_reason": r.finish_reason} for r in generation],
    }


def machine(threads: int) -> dict[str, Any]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or platform.machine())
    memory = next((line.split(":", 1)[1].strip() for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal")), "?")
    return {"cpu": cpu, "cores": os.cpu_count(), "threads": threads, "memory": memory,
            "platform": platform.platform(), "python": platform.python_version(), "load_at_start": os.getloadavg()}


def versions(deepeval_python: Path | None) -> dict[str, str | None]:
    import llama_cpp

    found = None
    if deepeval_python is not None:
        probe = [str(deepeval_python), "-c", "import importlib.metadata as m; print(m.version('deepeval'))"]
        found = subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()
    return {"localeval": version("localeval"), "llama-cpp-python": llama_cpp.__version__, "deepeval": found}


def finish(results: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    rows = summary.summarize(records)
    ratio_rows = summary.ratios(rows)
    return {**results, "records": records, "summary": rows, "ratios": ratio_rows,
            "targets": summary.targets(rows, ratio_rows)}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for results.json and the work files")
    parser.add_argument("--cases", type=int, default=20, help="articles judged (at least 2)")
    parser.add_argument("--rounds", type=int, default=2, help="times every system measures every case")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads, server and in-process alike")
    parser.add_argument("--model", default=None, help="a pulled model's name or a .gguf path (default: the default judge)")
    parser.add_argument("--deepeval-python", type=Path, help="python of deepeval's virtualenv")
    parser.add_argument("--deepeval-timeout", type=float, default=300.0,
                        help="seconds deepeval may spend on one case of one metric set before it is abandoned")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, of {', '.join(SYSTEMS)}")
    parser.add_argument("--metrics", default=",".join(ROWS), help=f"comma-separated rows, of {', '.join(ROWS)}")
    args = parser.parse_args()
    args.systems = [s for s in args.systems.split(",") if s]
    args.metrics = [m for m in args.metrics.split(",") if m]
    unknown = [s for s in args.systems if s not in SYSTEMS] + [m for m in args.metrics if m not in ROWS]
    if unknown:
        parser.error(f"unknown: {', '.join(unknown)}")
    if args.cases < 2:
        parser.error("--cases must be at least 2: with one, each metric set would follow the same article "
                     "and reuse the previous set's KV cache")
    if "deepeval" in args.systems and args.deepeval_python is None:
        parser.error("--deepeval-python is needed to run deepeval (run.sh sets it)")
    return args


def main() -> None:
    args = parse_args()
    from localeval import ModelCatalog
    from localeval.paths import Paths

    work = args.out / "work"
    work.mkdir(parents=True, exist_ok=True)
    plan: dict[str, Any] = {"cases": load_cases(args.cases), "metric_sets": metric_sets()}
    (work / "plan.json").write_text(json.dumps(plan, indent=1))
    spec, model = ModelCatalog(Paths.from_environ(os.environ).home).resolve(args.model)
    results: dict[str, Any] = {
        "version": 1,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "machine": machine(args.threads),
        "versions": versions(args.deepeval_python if "deepeval" in args.systems else None),
        "model": {"name": spec.name, "path": str(model)},
        "settings": {
            "cases": args.cases, "rounds": args.rounds, "threads": args.threads, "n_ctx": N_CTX,
            "systems": args.systems, "metrics": args.metrics, "deepeval_timeout_s": args.deepeval_timeout,
            "deepeval_mode": "metric.measure(test_case) per metric, cases one after another, fresh metric objects "
                             "per case, deepeval's defaults (async_mode=True, include_reason=True)",
            "localeval_mode": "localeval.run.runner.evaluate on a one-case dataset with the row's metrics, "
                              "CachedBackend on a fresh cache directory (cold), then the same directory (cached)",
        },
        "metric_sets": plan["metric_sets"],
        "cases": [{"name": c["name"], "summary_sentences": c["summary_sentences"]} for c in plan["cases"]],
    }
    server = LlamaServer(model, work / "server.log", args.threads)
    server.start()
    proxy = CountingProxy(server.url)
    bench = Bench(args, work, plan, model, spec, server, proxy)
    start = time.perf_counter()
    try:
        for number in range(args.rounds):
            bench.round(number)
            results["server_starts"] = server.starts
            (args.out / "results.json").write_text(json.dumps(finish(results, bench.records), indent=1))
    finally:
        bench.close()
        proxy.close()
        server.stop()
    results["machine"]["load_at_end"] = os.getloadavg()
    results["wall_s"] = time.perf_counter() - start
    final = finish(results, bench.records)
    (args.out / "results.json").write_text(json.dumps(final, indent=1))
    (work / "proxy.json").write_text(json.dumps(proxy.dump(), indent=1))
    table.show(final)
    print(f"results: {args.out / 'results.json'}")


if __name__ == "__main__":
    main()

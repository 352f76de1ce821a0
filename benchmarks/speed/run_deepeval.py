"""The deepeval side of the benchmark; runs INSIDE deepeval's own virtualenv (never imports localeval).

Reads the plan that bench.py wrote (cases and metric definitions, JSON), and for
each case from ``--start`` on, in order: tells the counting proxy which case is
running (``POST /_bench/mark``), builds fresh metric objects (deepeval keeps
results on the metric), and calls each metric's ``measure(test_case)`` in turn
— deepeval's own defaults otherwise (``async_mode=True``, ``include_reason=True``),
with ``LocalModel`` pointed at the proxy. One JSON line per event goes to
``--events``: ``start`` before a case, ``done`` after it with its seconds, the
scores, and each exception as text. A metric that raises or leaves ``score``
unset makes the case errored. bench.py enforces the per-case time limit (it
kills this process and starts it again from the next case).
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any

from deepeval.metrics import AnswerRelevancyMetric, FaithfulnessMetric, GEval
from deepeval.models import LocalModel
from deepeval.test_case import LLMTestCase, SingleTurnParams


def build_metrics(specs: list[dict[str, Any]], model: LocalModel) -> list[Any]:
    """deepeval metric objects for the plan's metric definitions."""
    metrics: list[Any] = []
    for spec in specs:
        if spec["kind"] == "geval":
            params = [SingleTurnParams(p) for p in spec["evaluation_params"]]
            metrics.append(GEval(name=spec["name"], evaluation_steps=spec["evaluation_steps"],
                                 evaluation_params=params, model=model))
        elif spec["kind"] == "faithfulness":
            metrics.append(FaithfulnessMetric(model=model))
        elif spec["kind"] == "answer_relevancy":
            metrics.append(AnswerRelevancyMetric(model=model))
        else:
            raise SystemExit(f"no deepeval metric for {spec['kind']!r}")
    return metrics


def mark(proxy: str, label: str) -> None:
    body = json.dumps({"label": label}).encode()
    request = urllib.request.Request(f"{proxy}/_bench/mark", data=body, method="POST",
                                     headers={"content-type": "application/json"})
    urllib.request.urlopen(request, timeout=10).close()


def measure_case(case: dict[str, Any], specs: list[dict[str, Any]], model: LocalModel) -> dict[str, Any]:
    """Every metric of the set on one case: seconds, scores, errors."""
    test_case = LLMTestCase(input=case["input"], actual_output=case["actual_output"],
                            retrieval_context=case["retrieval_context"])
    metrics = build_metrics(specs, model)
    scores: dict[str, float | None] = {}
    errors: dict[str, str] = {}
    start = time.perf_counter()
    for spec, metric in zip(specs, metrics):
        try:
            metric.measure(test_case)
            scores[spec["name"]] = metric.score
            if metric.score is None:
                errors[spec["name"]] = "no score"
        except Exception as err:  # noqa: BLE001 -- any failure of the baseline is that case's error
            scores[spec["name"]] = None
            errors[spec["name"]] = f"{type(err).__name__}: {err}"[:500]
            traceback.print_exc()
    return {"seconds": time.perf_counter() - start, "scores": scores, "errors": errors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--metric", required=True, help="a metric set of the plan")
    parser.add_argument("--start", type=int, default=0, help="the first case to measure")
    parser.add_argument("--proxy", required=True, help="the counting proxy's URL")
    parser.add_argument("--model", required=True, help="the model id the server reports")
    parser.add_argument("--label", required=True, help="proxy label prefix; the case index is appended")
    parser.add_argument("--events", type=Path, required=True)
    args = parser.parse_args()

    plan = json.loads(args.plan.read_text())
    specs = plan["metric_sets"][args.metric]
    model = LocalModel(model=args.model, base_url=f"{args.proxy}/v1", api_key="x")
    with args.events.open("a") as events:
        for index in range(args.start, len(plan["cases"])):
            mark(args.proxy, f"{args.label}|{index}")
            events.write(json.dumps({"event": "start", "case": index, "t": time.time()}) + "\n")
            events.flush()
            result = measure_case(plan["cases"][index], specs, model)
            events.write(json.dumps({"event": "done", "case": index, **result}) + "\n")
            events.flush()
    mark(args.proxy, "idle")


if __name__ == "__main__":
    main()

"""Issue 14's robustness check for the judged agentic metrics: every judge call counted by outcome.

Runs ``argument_correctness`` and ``task_completion`` (reasons on) on the default
model in-process, no cache, over examples/agent and a synthetic set of agent
traces built here from templates (a weather lookup, a flight search and booking,
a currency conversion, a refund; each right, with a wrong argument, with a
missing call, or with an extra one). Every judge call goes through a counting
wrapper, so the figures are calls, not results: ``ok``, or the error it raised
(``SchemaViolation``: invalid JSON or a reply the schema refuses;
``TruncatedOutput``: cut off by its token limit).

    python benchmarks/agent_schema_check.py [--synthetic 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from counting import CountingBackend

from localeval import Dataset, LlamaCppBackend, ModelCatalog, TestCase, ToolCall
from localeval.metrics import ArgumentCorrectness, TaskCompletion
from localeval.paths import Paths
from localeval.run.runner import evaluate  # the engine: no cache, no progress, no run folder

ROOT = Path(__file__).resolve().parents[1]


CITIES = [("Paris", "France", 48.86, 2.35), ("Lisbon", "Portugal", 38.72, -9.14), ("Osaka", "Japan", 34.69, 135.5),
          ("Lima", "Peru", -12.05, -77.04), ("Oslo", "Norway", 59.91, 10.75)]


def weather(i: int, variant: str) -> TestCase:
    city, country, lat, lon = CITIES[i % len(CITIES)]
    place = f"{city}, {country}" if variant != "wrong" else f"{city}, Texas"
    calls = [ToolCall(name="geocode", input_parameters={"place": place}, output={"lat": lat, "lon": lon}),
             ToolCall(name="forecast", input_parameters={"lat": lat, "lon": lon, "day": "tomorrow"},
                      output={"rain_mm": i % 4, "max_c": 12 + i})]
    if variant == "missing":
        calls = calls[:1]
    if variant == "extra":
        calls.insert(0, ToolCall(name="web_search", input_parameters={"query": f"weather {city}"}, output="..."))
    answer = "I could not get the forecast." if variant == "missing" else f"Tomorrow in {city}: up to {12 + i} °C."
    return TestCase(name=f"weather-{i}-{variant}", input=f"What is the weather in {city} tomorrow?",
                    actual_output=answer, tools_called=calls)


def flight(i: int, variant: str) -> TestCase:
    (a, _, _, _), (b, _, _, _) = CITIES[i % len(CITIES)], CITIES[(i + 1) % len(CITIES)]
    date = f"2026-0{1 + i % 9}-1{i % 10}"
    search = ToolCall(name="search_flights", input_parameters={"from": a, "to": b if variant != "wrong" else a,
                                                               "date": date},
                      output=[{"flight": f"XY {100 + i}", "price_eur": 80 + i}])
    book = ToolCall(name="book_flight", input_parameters={"flight": f"XY {100 + i}", "passengers": 1},
                    output={"status": "confirmed"})
    calls = [search] if variant == "missing" else [search, book]
    if variant == "extra":
        calls.append(ToolCall(name="send_email", input_parameters={"to": "me"}, output="sent"))
    answer = "I found a flight." if variant == "missing" else f"Booked XY {100 + i} from {a} to {b} on {date}."
    return TestCase(name=f"flight-{i}-{variant}", input=f"Book the cheapest flight from {a} to {b} on {date}.",
                    actual_output=answer, tools_called=calls)


def currency(i: int, variant: str) -> TestCase:
    amount = 50 + 10 * i
    calls = [ToolCall(name="convert_currency",
                      input_parameters={"amount": amount if variant != "wrong" else amount * 10, "from": "EUR",
                                        "to": "USD"},
                      output=round(amount * 1.08, 2))]
    if variant == "missing":
        calls = []
    if variant == "extra":
        calls.append(ToolCall(name="calculator", input_parameters={"expression": f"{amount} * 1.08"}))
    return TestCase(name=f"currency-{i}-{variant}", input=f"How much are {amount} euros in US dollars?",
                    actual_output=f"{amount} euros are about {round(amount * 1.08, 2)} US dollars.",
                    tools_called=calls)


def refund(i: int, variant: str) -> TestCase:
    order = str(4000 + i)
    lookup = ToolCall(name="lookup_order", input_parameters={"order_id": order}, output={"total_eur": 20 + i})
    pay = ToolCall(name="refund_order",
                   input_parameters={"order_id": order if variant != "wrong" else "1", "amount_eur": 20 + i},
                   output={"status": "refunded"})
    calls = [lookup] if variant == "missing" else [lookup, pay]
    if variant == "extra":
        calls.append(lookup)
    return TestCase(name=f"refund-{i}-{variant}", input=f"Please refund order {order}.",
                    actual_output=f"Order {order} is refunded." if variant != "missing" else "I looked it up.",
                    tools_called=calls)


def synthetic(count: int) -> list[TestCase]:
    makers, variants = (weather, flight, currency, refund), ("right", "wrong", "missing", "extra")
    return [makers[i % 4](i, variants[(i // 4) % 4]) for i in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=20, help="synthetic traces besides examples/agent")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve(None)
    judge = CountingBackend(LlamaCppBackend(path, spec))
    metrics = [ArgumentCorrectness(), TaskCompletion()]
    sets = {"example": Dataset.load(ROOT / "examples" / "agent" / "agent.jsonl"),
            "synthetic": Dataset.from_cases(synthetic(args.synthetic))}
    summary: dict[str, Any] = {"model": spec.name}
    try:
        for name, dataset in sets.items():
            judge.outcomes.clear()
            start = time.perf_counter()
            report = evaluate(dataset, metrics, judge)
            seconds = round(time.perf_counter() - start, 1)
            errors = [f"{c.name} {r.metric}: {r.error}" for c in report.cases for r in c.results if r.error]
            summary[name] = {"cases": len(dataset.cases), "judge_calls": dict(judge.outcomes),
                             "calls": sum(judge.outcomes.values()), "error_results": errors, "seconds": seconds}
            print(f"{name}: {len(dataset.cases)} cases, {sum(judge.outcomes.values())} judge calls in {seconds} s: "
                  f"{dict(judge.outcomes)}; {len(errors)} error results", flush=True)
            for line in errors:
                print(f"  {line[:200]}")
    finally:
        judge.close()
    calls = sum(summary[n]["calls"] for n in sets)
    failed = sum(v for n in sets for k, v in summary[n]["judge_calls"].items() if not k.endswith(" ok"))
    print(f"total: {calls} judge calls, {failed} failed")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()

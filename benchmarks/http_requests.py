"""Requests and seconds per whole-answer G-Eval score through each server, with and without
``batch_continuations`` (issue 28, item 2: a depth of the candidate trie in one request).

    PYTHONPATH=.:tests nice -n 5 python benchmarks/http_requests.py [--ranges 1-5,0-10,0-100]
        [--slots 1] [--answers 4] [--routes llama-server,llama-server-completion,...] [--prune-below 1e-4]

Routes: ``llama-server`` (the preset: ``continue`` prefill, one request per prefix),
``llama-server-completion`` (the ``completion`` prefill with the server's template, one request
per prefix), ``llama-server-batched`` (the same, ``batch_continuations = true``), ``llama-cpp-python``
(its preset) and ``ollama`` (the Ollama stand-in of tests/). Every server reads with 1 thread
(llama-server ``-np`` from ``--slots``); the default model (SmolLM2 here); the binary from
``LOCALEVAL_LLAMA_SERVER`` or PATH. The G-Eval test case of tests/test_http_backends.py with
``--answers`` answers, each scored once per route (a new case each time, the prompt read from
its start). Printed per range and route: requests per score (HTTP requests counted as the client
sends them, or as the stand-in received them), the median seconds per score (wall, and this
process's CPU: the client's work, and for ``ollama`` the stand-in's too, which runs in this process),
and the largest |score difference| from ``llama-server-completion`` (batched against one request
per prefix).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from ollama_standin import OllamaStandIn  # tests/: run with tests on PYTHONPATH
from servers import FAST_RETRIES, KEY, LLAMA_SERVER, CountingTransport, ServerProcess

from localeval import ModelCatalog, TestCase, build_metric, make_backend
from localeval.backends.ollama import OllamaBackend
from localeval.paths import Paths

CASE = TestCase(input="What is the capital of France?", actual_output="Paris is the capital of France.")
ANSWERS = ("Paris is the capital of France.", "Paris.", "It is Paris.", "Lyon is the capital of France.",
           "The capital is Paris, on the Seine.", "Marseille.")
GEVAL = {"criteria": "The answer is correct and complete.", "include_reason": False, "layout": "case_first",
         "evaluation_steps": ["Check that the answer is correct.", "Check that it is complete."]}
ROUTES = ("llama-server", "llama-server-completion", "llama-server-batched", "llama-cpp-python", "ollama")


@contextmanager
def routes(names: list[str], path: Path, slots: int) -> Iterator[dict[str, tuple[Any, Callable[[], int]]]]:
    """Each route's backend and its request counter; the servers stopped at the end."""
    found: dict[str, tuple[Any, Callable[[], int]]] = {}
    logs = Path(tempfile.mkdtemp())
    with ExitStack() as stack:
        if any(name.startswith("llama-server") for name in names):
            if not LLAMA_SERVER:
                raise SystemExit("llama-server not found: set LOCALEVAL_LLAMA_SERVER")
            server = ServerProcess.llama_server(LLAMA_SERVER, path, logs / "llama-server.log", "-np", str(slots))
            stack.callback(server.stop)
            settings = {"llama-server": {}, "llama-server-completion": {"prefill": "completion"},
                        "llama-server-batched": {"prefill": "completion", "batch_continuations": True}}
            for name, options in settings.items():
                if name in names:
                    counter = CountingTransport()
                    backend = make_backend("llama-server", base_url=server.url, transport=counter,
                                           **FAST_RETRIES, **options)
                    stack.callback(backend.close)
                    found[name] = backend, lambda counter=counter: len(counter.posts)
        if "llama-cpp-python" in names:
            python = ServerProcess.llama_cpp_python(path, logs / "llama-cpp-python.log", api_key=KEY)
            stack.callback(python.stop)
            counter = CountingTransport()
            backend = make_backend("llama-cpp-python", base_url=python.url, api_key=KEY, transport=counter,
                                   **FAST_RETRIES)
            stack.callback(backend.close)
            found["llama-cpp-python"] = backend, lambda counter=counter: len(counter.posts)
        if "ollama" in names:
            standin = OllamaStandIn(path)
            standin.serve()
            stack.callback(standin.close)
            ollama = OllamaBackend("smollm2:135m", host=standin.url, **FAST_RETRIES)
            stack.callback(ollama.close)
            found["ollama"] = ollama, lambda: sum(p in ("/api/chat", "/api/generate") for p, _ in standin.requests)
        for backend, _ in found.values():
            assert backend.capabilities.distribution  # the first-use probe, not counted below
        yield {name: found[name] for name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranges", default="1-5,0-10,0-100")
    parser.add_argument("--routes", default=",".join(ROUTES))
    parser.add_argument("--slots", type=int, default=1, help="llama-server's -np")
    parser.add_argument("--answers", type=int, default=4)
    parser.add_argument("--prune-below", type=float, default=None, help="G-Eval's prune_below (default: its own)")
    args = parser.parse_args()
    geval = GEVAL if args.prune_below is None else {**GEVAL, "prune_below": args.prune_below}
    _, path = ModelCatalog.from_environ(Paths.from_environ(os.environ).home, os.environ).resolve(None)
    cases = [CASE.model_copy(update={"actual_output": answer}) for answer in ANSWERS[:args.answers]]
    print(f"{path.name}, llama-server -np {args.slots}, prune_below {geval.get('prune_below', 'default')}, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    with routes(args.routes.split(","), path, args.slots) as backends:
        for score_range in args.ranges.split(","):
            metric = build_metric("geval", {**geval, "score_range": [int(v) for v in score_range.split("-")]})
            scores: dict[str, list[float]] = {}
            for name, (backend, count) in backends.items():
                seconds, cpu, requests, scores[name] = [], [], [], []
                for case in cases:
                    sent, start, start_cpu = count(), time.perf_counter(), time.process_time()
                    result = metric.measure(case, backend)
                    seconds.append(time.perf_counter() - start)
                    cpu.append(time.process_time() - start_cpu)
                    requests.append(count() - sent)
                    if result.error is not None:
                        raise SystemExit(f"{name} {score_range}: {result.error}")
                    scores[name].append(result.score or 0.0)
                print(f"{score_range} {name}: requests per score {'/'.join(map(str, sorted(set(requests))))}, "
                      f"{statistics.median(seconds):.2f} s per score (median of {len(cases)}; this process's "
                      f"CPU {statistics.median(cpu):.2f} s), "
                      f"first score {scores[name][0]!r}", flush=True)
            if "llama-server-completion" in scores:
                base = scores["llama-server-completion"]
                print(f"{score_range} max |score diff| from llama-server-completion: " + ", ".join(
                    f"{name} {max(abs(a - b) for a, b in zip(values, base)):.1e}" for name, values in scores.items()),
                    flush=True)


if __name__ == "__main__":
    main()

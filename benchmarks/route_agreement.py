"""One G-Eval case through every route: in-process (whole vocabulary, and the top 20), llama-cpp-python's
server and the Ollama stand-in; scores, covered mass, requests per score and seconds.

    PYTHONPATH=.:tests python benchmarks/route_agreement.py [--ranges 1-5,0-10,0-100]

Starts both servers on 127.0.0.1 (tests/servers.py, tests/ollama_standin.py) with the default model.
"|diff|" is each score's distance from the in-process read of the same top 20.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ollama_standin import OllamaStandIn  # tests/: run with tests on PYTHONPATH
from servers import FAST_RETRIES, KEY, ServerProcess

from localeval import LlamaCppBackend, LlamaCppOptions, ModelCatalog, TestCase, build_metric, make_backend
from localeval.backends.ollama import OllamaBackend
from localeval.paths import Paths

CASE = TestCase(input="What is the capital of France?", actual_output="Paris is the capital of France.")
GEVAL = {"criteria": "The answer is correct and complete.", "include_reason": False, "layout": "case_first",
         "evaluation_steps": ["Check that the answer is correct.", "Check that it is complete."]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranges", default="1-5,0-10,0-100")
    args = parser.parse_args()
    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve(None)
    server = ServerProcess.llama_cpp_python(path, Path(tempfile.mkdtemp()) / "server.log", api_key=KEY)
    server.wait_ready({"Authorization": f"Bearer {KEY}"})
    standin = OllamaStandIn(path)
    standin.serve()
    openai = make_backend("llama-cpp-python", base_url=server.url, api_key=KEY, **FAST_RETRIES)
    posts: list[Any] = []
    post = openai._post  # type: ignore[attr-defined]
    openai._post = lambda *a, **k: posts.append(a) or post(*a, **k)  # type: ignore[attr-defined]
    routes = {"in-process": LlamaCppBackend(path, spec),
              "top 20": LlamaCppBackend(path, spec, LlamaCppOptions(top_logprobs=20)),
              "server": openai, "standin": OllamaBackend("smollm2:135m", host=standin.url, **FAST_RETRIES)}
    try:
        assert routes["server"].capabilities.distribution  # the first-use probe, not counted below
        for score_range in args.ranges.split(","):
            metric = build_metric("geval", {**GEVAL, "score_range": [int(v) for v in score_range.split("-")]})
            results = {}
            for name, backend in routes.items():
                sent = len(posts) if name == "server" else len(standin.requests)
                start = time.perf_counter()
                results[name] = metric.measure(CASE, backend)
                took = time.perf_counter() - start
                requests = (len(posts) if name == "server" else len(standin.requests)) - sent
                print(f"{score_range} {name}: score {results[name].score!r} covered "
                      f"{results[name].details['covered_mass']:.6f} {took:.2f} s"
                      + (f", {requests} requests" if name in ("server", "standin") else ""), flush=True)
            top20 = results["top 20"].score
            print(f"{score_range} |diff| from the top 20 in-process: "
                  + ", ".join(f"{name} {abs(r.score - top20):.1e}" for name, r in results.items()), flush=True)
    finally:
        server.stop()
        standin.close()


if __name__ == "__main__":
    main()

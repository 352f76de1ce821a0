"""Where the quick start's time goes: imports, model load, the judge's phases, the summary, the reports.

    python benchmarks/quickstart_time.py [--model NAME] [--threads N] [--no-reasons] [--json FILE]
    python benchmarks/quickstart_time.py --ab BEFORE AFTER [--repeats N] [--model NAME] [--threads N]

Runs ``localeval run --config examples/quickstart/eval.toml`` in this process (the CLI's own entry
point), as a first run: a fresh cache folder and run folder in a temporary folder, the quick start's
files copied there so its report copy lands there too. Nothing in localeval is changed: the timing
wraps the functions that do each part, here, for the run.

Each part is timed in wall and CPU seconds (CPU: this process, every thread; on a shared machine a
wall second may be a wait for a core). Parts:

- **import**: the CLI's modules, as ``localeval run`` loads them before it reads the config;
- **judge load**: the judges made ready (the cache opened, the model loaded); inside it the GGUF
  file's sha256 (a first run's: later runs read it from the cache) and llama.cpp's model load;
- **judging**: the run of the metrics, by call: *score* (a G-Eval score: a whole-answer
  distribution), *reason* (the judge's written reason, a follow-up turn), *steps* (G-Eval's steps
  from its criteria). Each call split into *prompt read* (prefill, in aligned batches), *continuations*
  (a whole answer's reply prefixes, one token each), *generation* (JSON written under a grammar: the
  forward passes of the tokens written, and the rest: sampling, the grammar) and *other* (tokenizing,
  the vocabulary indexed once, probabilities);
- **summary**: each metric's counts and intervals (scipy, the first time in a process);
- **terminal**, **reports** (every format written), and **other** (the config, the dataset, the
  trust lines, the run folder and its journal, …).

Tokens per second: the tokens llama.cpp read or wrote in each phase over its forward passes' seconds.
A prompt read also counts the tokens it reads again though the context held them (a kept prefix
ends at a multiple of n_batch). ``--no-reasons``: the quick start with ``[metrics_defaults] reasons = false``.

``--ab BEFORE AFTER``: two source trees (copies of the repository), each run in a fresh process
with it first on ``PYTHONPATH``, alternating BEFORE, AFTER, BEFORE, … ``--repeats`` times each;
the median of each part side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

QUICKSTART = Path(__file__).resolve().parent.parent / "examples" / "quickstart"
KINDS = ("score", "reason", "steps")
STEPS = ("prompt read", "continuations", "generation", "other")


class Clock:
    """Wall and CPU seconds, and tokens, by part; the judge call under way, by thread."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.tokens: dict[str, int] = defaultdict(int)
        self.calls: dict[str, int] = defaultdict(int)
        self._local = threading.local()

    @property
    def kind(self) -> str:
        return getattr(self._local, "kind", "outside a call")

    @contextlib.contextmanager
    def timing(self, part: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall[part] += time.perf_counter() - wall
            self.cpu[part] += time.process_time() - cpu

    @contextlib.contextmanager
    def call(self, kind: str) -> Iterator[None]:
        self._local.kind = kind
        self.calls[kind] += 1
        try:
            with self.timing(f"{kind}/call"):
                yield
        finally:
            self._local.kind = "outside a call"

    def wrap(self, owner: Any, name: str, part: Callable[..., str] | str) -> None:
        """Time every call of ``owner.name`` as ``part`` (a name, or a function of the call's arguments)."""
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.timing(part(*args, **kwargs) if callable(part) else part):
                return original(*args, **kwargs)

        setattr(owner, name, timed)


def instrument(clock: Clock) -> None:
    """Wrap the functions that do each part of a run (imports them: call after timing the import)."""
    with clock.timing("judge load/llama_cpp import"):  # a run imports it as it loads the model
        import llama_cpp

    from localeval.backends import llamacpp
    from localeval.backends.llamacpp import LlamaCppBackend
    from localeval.cli import session
    from localeval.data.results import MetricSummary
    from localeval.metrics.judged import REASON_SCHEMA

    backend = LlamaCppBackend
    clock.wrap(session, "load_judges", "judge load")
    clock.wrap(llamacpp, "file_sha256", "judge load/sha256")
    clock.wrap(llama_cpp.Llama, "__init__", "judge load/llama.cpp")
    clock.wrap(session, "evaluate", "judging")
    clock.wrap(MetricSummary, "of", "summary")  # the bound classmethod, wrapped: called as before
    clock.wrap(session, "print_report", "terminal")
    clock.wrap(session, "write_reports", "reports")

    def judged(method: str, kind: Callable[[Any], str]) -> None:
        original = getattr(backend, method)

        def timed(self: Any, request: Any) -> Any:
            with clock.call(kind(request)):
                return original(self, request)

        setattr(backend, method, timed)

    judged("candidate_distribution", lambda request: "score")
    judged("generate_json", lambda request: "reason" if request.json_schema == REASON_SCHEMA else "steps")
    realigned(clock, backend)
    counted(clock, backend, "_read_prompt", "prompt read")
    counted(clock, backend, "_read_continuation", "continuations")
    original_eval = llama_cpp.Llama.eval

    def forward(llm: Any, tokens: Any) -> None:  # every forward pass, wherever it is asked for
        step = getattr(clock._local, "step", "generation")
        clock.tokens[f"{clock.kind}/{step}/tokens"] += len(tokens)
        with clock.timing(f"{clock.kind}/{step}/passes"):
            original_eval(llm, tokens)

    llama_cpp.Llama.eval = forward  # type: ignore[method-assign,assignment]
    original_completion = llama_cpp.Llama.create_completion

    def completion(llm: Any, *args: Any, **kwargs: Any) -> Any:
        with clock.timing(f"{clock.kind}/generation"):
            return original_completion(llm, *args, **kwargs)

    llama_cpp.Llama.create_completion = completion  # type: ignore[method-assign,assignment]
    with contextlib.suppress(ImportError):  # greedy JSON writing, in a tree that has it (#28 item 5)
        from localeval.backends import greedy

        clock.wrap(greedy, "write_greedy", lambda *args, **kwargs: f"{clock.kind}/generation")


def realigned(clock: Clock, backend: Any) -> None:
    """Count the tokens a prompt read reads again though the context holds them: the shared prefix is
    kept only up to a multiple of n_batch, so every token gets the batch a cold read gives it."""
    from localeval.backends.llamacpp import _shared_prefix

    original = backend._read_prompt

    def counting(self: Any, tokens: list[int]) -> None:
        cached = self._llm.input_ids[: self._llm.n_tokens]
        shared = _shared_prefix(cached, tokens, min(len(cached), len(tokens) - 1))
        clock.tokens[f"{clock.kind}/prompt read/realigned"] += shared % self.options.n_batch
        original(self, tokens)

    backend._read_prompt = counting


def counted(clock: Clock, owner: Any, name: str, step: str) -> None:
    """Time ``owner.name`` as this step of the call under way; its forward passes are counted as the step's."""
    original = getattr(owner, name)

    def timed(self: Any, tokens: Any) -> Any:
        clock._local.step = step
        try:
            with clock.timing(f"{clock.kind}/{step}"):
                return original(self, tokens)
        finally:
            clock._local.step = "generation"

    setattr(owner, name, timed)


def quickstart(folder: Path, reasons: bool) -> Path:
    """The quick start's config and dataset copied into ``folder``, its report copy kept there;
    without ``reasons``, ``[metrics_defaults] reasons = false`` added."""
    text = (QUICKSTART / "eval.toml").read_text(encoding="utf-8")
    text += "" if reasons else "\n[metrics_defaults]\nreasons = false\n"
    (folder / "eval.toml").write_text(text.replace("../../localeval-report.json", "localeval-report.json"),
                                      encoding="utf-8")
    (folder / "qa.jsonl").write_text((QUICKSTART / "qa.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    return folder / "eval.toml"


def measure(model: str | None, threads: int, reasons: bool = True) -> dict[str, Any]:
    """One first run of the quick start in this process: every part's seconds and tokens."""
    clock = Clock()
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    with clock.timing("import"):
        from localeval.cli import main, session  # noqa: F401 -- what `localeval run` loads first
    scipy_before = "scipy" in sys.modules
    instrument(clock)
    with tempfile.TemporaryDirectory(prefix="quickstart-time-") as temporary:
        folder = Path(temporary)
        argv = ["localeval", "run", "--config", str(quickstart(folder, reasons)), "--threads", str(threads),
                "--cache-dir", str(folder / "cache"), "--run-dir", str(folder / "run")]
        argv += ["--model", model] if model else []
        sys.argv, code = argv, 0
        try:
            main()
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    for seconds in (clock.wall, clock.cpu):  # counted in the judge's load, where a run imports it
        seconds["judge load"] += seconds.get("judge load/llama_cpp import", 0.0)
    return {
        "model": model or "default", "threads": threads, "reasons": reasons, "exit": code,
        "total_wall": time.perf_counter() - started_wall, "total_cpu": time.process_time() - started_cpu,
        "scipy_imported": not scipy_before and "scipy" in sys.modules,
        "wall": dict(clock.wall), "cpu": dict(clock.cpu), "tokens": dict(clock.tokens), "calls": dict(clock.calls),
    }


def rows(found: dict[str, Any]) -> list[tuple[str, float, float, str]]:
    """The table's rows: part, wall s, CPU s, a note (tokens, tokens per second)."""
    wall, cpu, tokens = found["wall"], found["cpu"], found["tokens"]
    out: list[tuple[str, float, float, str]] = []

    def row(label: str, key: str, note: str = "") -> None:
        out.append((label, wall.get(key, 0.0), cpu.get(key, 0.0), note))

    row("import (CLI)", "import")
    row("judge load", "judge load")
    row("  llama_cpp import", "judge load/llama_cpp import")
    row("  model file sha256", "judge load/sha256")
    row("  llama.cpp model load", "judge load/llama.cpp")
    row("judging", "judging")
    for kind in KINDS:
        calls = found["calls"].get(kind, 0)
        if not calls:
            continue
        row(f"  {kind} ({calls} calls)", f"{kind}/call")
        inside = 0.0
        for step in STEPS[:3]:
            seconds = wall.get(f"{kind}/{step}", 0.0)
            inside += seconds
            count = tokens.get(f"{kind}/{step}/tokens", 0)
            passes, passes_cpu = wall.get(f"{kind}/{step}/passes", 0.0), cpu.get(f"{kind}/{step}/passes", 0.0)
            note = (f"{count} tokens in passes of {passes:.1f} s ({passes_cpu:.1f} s CPU): "
                    f"{count / passes:.1f} tok/s ({count / passes_cpu:.1f} per CPU s)") if count and passes_cpu else ""
            if tokens.get(f"{kind}/{step}/realigned"):
                note += f"; {tokens[f'{kind}/{step}/realigned']} of them read again to keep batches aligned"
            if step == "generation" and seconds:
                note += (f"; sampling and grammar {seconds - passes:.1f} s "
                         f"({cpu.get(f'{kind}/{step}', 0.0) - passes_cpu:.1f} s CPU)")
            if seconds:
                row(f"    {step}", f"{kind}/{step}", note)
        out.append(("    other", wall.get(f"{kind}/call", 0.0) - inside,
                    cpu.get(f"{kind}/call", 0.0) - sum(cpu.get(f"{kind}/{s}", 0.0) for s in STEPS[:3]), ""))
    row("summary", "summary", "scipy imported here" if found["scipy_imported"] else "")
    row("terminal", "terminal")
    row("reports", "reports")
    top = ("import", "judge load", "judging", "terminal", "reports")
    out.append(("other", found["total_wall"] - sum(wall.get(k, 0.0) for k in top),
                found["total_cpu"] - sum(cpu.get(k, 0.0) for k in top), "config, dataset, trust, run folder"))
    out.append(("total", found["total_wall"], found["total_cpu"], f"exit {found['exit']}"))
    return out


def print_table(found: dict[str, Any]) -> None:
    reasons = "" if found["reasons"] else ", reasons off"
    print(f"\nquick start, model {found['model']}, {found['threads']} thread(s){reasons}\n")
    print("| part | wall s | CPU s | |\n|---|---|---|---|")
    for label, wall, cpu, note in rows(found):
        print(f"| {label} | {wall:.2f} | {cpu:.2f} | {note} |")
    print(f"\n{throughput(found)}")


def throughput(found: dict[str, Any]) -> str:
    """Tokens per second read (prompt and continuations) and written, over the forward passes."""
    tokens, wall, cpu = found["tokens"], found["wall"], found["cpu"]
    read = sum(tokens.get(f"{k}/{s}/tokens", 0) for k in KINDS for s in ("prompt read", "continuations"))
    written = sum(tokens.get(f"{k}/generation/tokens", 0) for k in KINDS)

    def seconds(steps: tuple[str, ...], clock: dict[str, float]) -> float:
        return max(sum(clock.get(f"{k}/{s}/passes", 0.0) for k in KINDS for s in steps), 1e-9)

    read_s, read_cpu = seconds(("prompt read", "continuations"), wall), seconds(("prompt read", "continuations"), cpu)
    written_s, written_cpu = seconds(("generation",), wall), seconds(("generation",), cpu)
    return (f"read: {read} tokens in {read_s:.1f} s of forward passes ({read_cpu:.1f} s CPU): "
            f"{read / read_s:.1f} tok/s, {read / read_cpu:.1f} per CPU second; "
            f"written: {written} tokens in {written_s:.1f} s ({written_cpu:.1f} s CPU): "
            f"{written / written_s:.1f} tok/s, {written / written_cpu:.1f} per CPU second")


def compare(before: Path, after: Path, repeats: int, model: str | None, threads: int, reasons: bool) -> None:
    """A-B: each tree in fresh processes, alternating; the median of each part side by side."""
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for repeat in range(repeats):
        for label, tree in (("before", before), ("after", after)):
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                command = [sys.executable, __file__, "--threads", str(threads), "--json", out.name]
                command += (["--model", model] if model else []) + ([] if reasons else ["--no-reasons"])
                env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
                subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                runs[label].append(json.loads(Path(out.name).read_text(encoding="utf-8")))
            print(f"repeat {repeat + 1}, {label}: {runs[label][-1]['total_wall']:.2f} s", file=sys.stderr)
    tables = {label: [rows(found) for found in found_runs] for label, found_runs in runs.items()}
    print(f"\nmedian of {repeats}, alternating; wall s (CPU s)\n")
    print("| part | before | after |\n|---|---|---|")
    for index, (label, *_rest) in enumerate(tables["before"][0]):
        cells = []
        for side in ("before", "after"):
            if index >= len(tables[side][0]) or tables[side][0][index][0] != label:
                cells.append("–")
                continue
            wall = statistics.median(table[index][1] for table in tables[side])
            cpu = statistics.median(table[index][2] for table in tables[side])
            cells.append(f"{wall:.2f} ({cpu:.2f})")
        print(f"| {label} | {' | '.join(cells)} |")
    for side in ("before", "after"):
        print(f"{side}, first run: {throughput(runs[side][0])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="the judge (default: the default judge, or LOCALEVAL_MODEL)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write the measurements here instead of a table")
    parser.add_argument("--ab", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="two source trees, A-B")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-reasons", dest="reasons", action="store_false",
                        help="the quick start with [metrics_defaults] reasons = false")
    args = parser.parse_args()
    if args.ab:
        before, after = args.ab
        compare(before, after, args.repeats, args.model, args.threads, args.reasons)
        return
    found = measure(args.model, args.threads, args.reasons)
    if args.json:
        args.json.write_text(json.dumps(found), encoding="utf-8")
    else:
        print_table(found)


if __name__ == "__main__":
    main()

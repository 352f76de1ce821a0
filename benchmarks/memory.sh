#!/usr/bin/env bash
# Peak RSS of `localeval run` against the number of cases (issue 7: no growth proportional to cases).
# Runs exact_match + a G-Eval (no reason) on the default model in-process, no cache, journal and all
# reports on, for 10, 100 and 1000 generated question/answer cases, and prints peak RSS for each.
# Usage: benchmarks/memory.sh [OUT_DIR]
set -euo pipefail
out=${1:-$(mktemp -d)}
mkdir -p "$out" && rm -rf "$out"/run-*
cat > "$out/eval.toml" <<'TOML'
[[metrics]]
metric = "exact_match"

[[metrics]]
metric = "geval"
name = "correctness"
evaluation_params = ["input", "actual_output", "expected_output"]
evaluation_steps = ["Check whether the actual output states the same fact as the expected output."]
include_reason = false
TOML
for n in 10 100 1000; do
  python3 - "$n" > "$out/cases-$n.jsonl" <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    a, b = i % 97, (i * 7) % 89
    answer = str(a + b) if i % 3 else str(a + b + 1)
    print(json.dumps({"name": f"sum-{i}", "input": f"What is {a} + {b}?", "actual_output": answer,
                      "expected_output": str(a + b)}))
PY
  /usr/bin/time -f "%M %e" -o "$out/time-$n" localeval run "$out/cases-$n.jsonl" -c "$out/eval.toml" --no-cache \
    --run-dir "$out/run-$n" >/dev/null 2>&1 || [ $? -le 3 ]
  read -r kb seconds < <(tail -n 1 "$out/time-$n")
  echo "$n cases: peak RSS $((kb / 1024)) MiB, $seconds s"
done

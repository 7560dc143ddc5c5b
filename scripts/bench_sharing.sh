#!/usr/bin/env bash
# Cells per hour of a recipe grid when K tasks share each GPU: `lmkit batch --tasks-per-gpu K` (on a
# CPU machine `--jobs K`) over scripts/bench_sharing.lua, whose cells are lmkit.train runs of a fixed
# number of steps (scripts/bench_lmkit_train.lua: AWD-LSTM at SIZE, yardstick token stream). Each K
# runs CELLS_PER_SLOT × K × GPUs cells (every slot does the same work) in a fresh batch folder, timed
# from start to end, process starts and corpus writing included; prints the raw batch lines and a
# table row per K as soon as it is measured (the ratio is to the first K listed).
#
#   bash scripts/bench_sharing.sh                                        # tiny, K = 1 2 (CPU)
#   bash scripts/bench_sharing.sh --device cuda --size ptb --k "1 2 4 8" --steps 200 --warmup 20
#
# Options: --device (cpu), --size (tiny), --head (softmax), --k "LIST" (cpu: "1 2"; cuda: "1 2 4 8"),
# --cells-per-slot N (2), --steps N (20), --warmup N (3), --out DIR (a temporary folder, removed).
# LMKIT: the lmkit binary (./build/lmkit).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
lmkit=${LMKIT:-./build/lmkit}
device=cpu size=tiny head=softmax ks="" per_slot=2 steps=20 warmup=3 out=""
while [ $# -gt 0 ]; do
  case $1 in
    --device) device=$2; shift ;;
    --size) size=$2; shift ;;
    --head) head=$2; shift ;;
    --k) ks=$2; shift ;;
    --cells-per-slot) per_slot=$2; shift ;;
    --steps) steps=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "bench_sharing.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$lmkit" ] || { echo "bench_sharing.sh: no lmkit binary at '$lmkit' (build it, or set LMKIT)" >&2; exit 1; }
[ -n "$ks" ] || { [ "$device" = cpu ] && ks="1 2" || ks="1 2 4 8"; }
for n in $ks "$per_slot" "$steps" "$warmup"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench_sharing.sh: --k, --cells-per-slot, --steps and --warmup take integers ≥ 1, got '$n'" >&2; exit 2; }
done
if [ -z "$out" ]; then out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi
mkdir -p "$out"
for k in $ks; do
  # A batch folder with finished cells would run only the rest: its time would mean nothing.
  [ ! -e "$out/k$k" ] || { echo "bench_sharing.sh: $out/k$k exists: give an empty --out folder" >&2; exit 2; }
done
# GPUs this lmkit sees (--tasks-per-gpu opens K slots on each): from `lmkit --version`.
gpus=1
if [ "$device" != cpu ]; then
  gpus=$("$lmkit" --version | sed -n 's/.*CUDA: usable, \([0-9]*\) device.*/\1/p')
  [ -n "$gpus" ] || { echo "bench_sharing.sh: --device $device, but lmkit sees no CUDA device: $("$lmkit" --version | tail -1)" >&2; exit 1; }
fi

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(LC_ALL=C lscpu | sed -n 's/^Model name: *//p' | head -1), device $device"
if [ "$device" != cpu ] && command -v nvidia-smi >/dev/null; then
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
fi
echo "versions: $("$lmkit" --version 2>/dev/null | paste -sd ',' - | sed 's/,/, /g')"
echo "cells: $size $head, $warmup + $steps steps each, $per_slot per slot, $gpus GPU(s)"
first_k=${ks%% *} base=""
header="| tasks per GPU (K) | cells | wall s | cells per hour | × K=$first_k | mean tokens/s of a cell × K × GPUs (while sharing) |
|---|---|---|---|---|---|"
for k in $ks; do
  cells=$((per_slot * k * gpus))
  sharing=(--tasks-per-gpu "$k")
  [ "$device" = cpu ] && sharing=(--jobs "$k")
  start=$(date +%s%N)
  "$lmkit" batch scripts/bench_sharing.lua --set out="$out/k$k" --set cells="$cells" --set size="$size" --set head="$head" \
    --set steps="$steps" --set warmup="$warmup" --set device="$device" "${sharing[@]}" | sed "s/^/[K=$k] /"
  millis=$(( ($(date +%s%N) - start) / 1000000 ))
  per_hour=$(( cells * 3600 * 1000 / millis ))
  [ -n "$base" ] || base=$per_hour
  tokens=$(cat "$out/k$k"/cells/*/bench.jsonl | sed -n 's/.*"tokens_per_s": \([0-9.]*\).*/\1/p' | awk -v k="$((k * gpus))" '{s += $1; n++} END {printf "%.0f", s / n * k}')
  [ -z "$header" ] || { echo; echo "$header"; header=""; }
  echo "| $k | $cells | $(printf '%d.%03d' $((millis / 1000)) $((millis % 1000))) | $per_hour | $(printf '%d.%02d' $((per_hour / base)) $((per_hour * 100 / base % 100))) | $tokens |"
done

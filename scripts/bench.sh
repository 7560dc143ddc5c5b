#!/usr/bin/env bash
# Training throughput: lmkit.train (scripts/bench_lmkit_train.lua, what users run), lmkit's Lua-loop
# step (scripts/bench_train.lua) and the plain PyTorch yardstick (scripts/awd_lstm_reference.py),
# alternating, on this machine, same shapes, same token stream, same threads. Prints each run's raw
# JSON line (with max_rss_mb, its peak RSS from GNU time), then one Markdown table of medians and ratios.
#
#   bash scripts/bench.sh                      # tiny softmax, tiny mos
#   bash scripts/bench.sh --full               # also the PTB-size softmax and mos (slow on CPU)
#   bash scripts/bench.sh --config "wt2 mos" --config "wt2 softmax 15"   # SIZE HEAD [BATCH SIZE]
#   bash scripts/bench.sh --threads 2 --steps 20 --warmup 3 --repeats 3
#   bash scripts/bench.sh --device cuda --config "ptb softmax" --config "ptb mos" --ptb-steps 200 --ptb-warmup 20
#
# LMKIT: the lmkit binary (default ./build/lmkit); PYTHON: a python with torch (default
# /usr/bin/python3, Debian's python3-torch: bash scripts/setup.sh --with-bench --no-build).
# With --repeats R the two programs alternate R times per config and the table shows medians.
# --config "SIZE HEAD [BSZ]" (repeatable; SIZE tiny, ptb or wt2) replaces the default list; --device
# runs the three programs there. --ptb-steps/--ptb-warmup apply to the ptb and wt2 sizes.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
lmkit=${LMKIT:-./build/lmkit}
python=${PYTHON:-/usr/bin/python3}

full=no threads=2 steps=20 warmup=3 repeats=1 ptb_steps=5 ptb_warmup=1 device=cpu
chosen_configs=()
while [ $# -gt 0 ]; do
  case $1 in
    --full) full=yes ;;
    --threads) threads=$2; shift ;;
    --steps) steps=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --repeats) repeats=$2; shift ;;
    --ptb-steps) ptb_steps=$2; shift ;;
    --ptb-warmup) ptb_warmup=$2; shift ;;
    --device) device=$2; shift ;;
    --config) chosen_configs+=("$2"); shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$lmkit" ] || { echo "bench.sh: no lmkit binary at '$lmkit' (build it, or set LMKIT)" >&2; exit 1; }
"$python" -c 'import torch' 2>/dev/null ||
  { echo "bench.sh: '$python' has no torch (bash scripts/setup.sh --with-bench --no-build, or set PYTHON)" >&2; exit 1; }
export OMP_NUM_THREADS=$threads

configs=("tiny softmax" "tiny mos")
[ "$full" = yes ] && configs+=("ptb softmax" "ptb mos")
[ ${#chosen_configs[@]} -eq 0 ] || configs=("${chosen_configs[@]}")

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(LC_ALL=C lscpu | sed -n 's/^Model name: *//p' | head -1), threads $threads, device $device"
echo "versions: $("$lmkit" --version 2>/dev/null | paste -sd ',' - | sed 's/,/, /g') | yardstick: Python $("$python" -c 'import sys, torch; print(sys.version.split()[0] + ", torch " + torch.__version__)')"
# Peak RSS of each program from GNU time (its maximum resident set size, KiB), added to its JSON line.
# GNU time from PATH: on a GPU machine it is the carried one (scripts/gpu/fetch_debs.sh).
gnu_time=$(type -P time) || { echo "bench.sh: needs GNU time for the peak RSS (Debian: apt-get install time)" >&2; exit 1; }
with_peak() {
  local out peak
  out=$("$gnu_time" -f '%M' -o "$tmp/peak" "$@" | tail -1)
  peak=$(tail -1 "$tmp/peak")
  echo "${out%\}}, \"max_rss_mb\": $((peak / 1024))}"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rows=()
for config in "${configs[@]}"; do
  read -r size head bsz <<<"$config"
  s=$steps w=$warmup
  [ "$size" != tiny ] && s=$ptb_steps w=$ptb_warmup
  lm_bsz=() py_bsz=()
  [ -z "$bsz" ] || { lm_bsz=(--set bsz="$bsz"); py_bsz=(--bsz "$bsz"); }
  lt=() lm=() py=()
  for _ in $(seq 1 "$repeats"); do
    t=$(with_peak "$lmkit" run scripts/bench_lmkit_train.lua --set size="$size" --set head="$head" \
          --set threads="$threads" --set steps="$s" --set warmup="$w" --set device="$device" "${lm_bsz[@]}")
    l=$(with_peak "$lmkit" run scripts/bench_train.lua --set size="$size" --set head="$head" --set threads="$threads" \
          --set steps="$s" --set warmup="$w" --set device="$device" "${lm_bsz[@]}")
    p=$(with_peak "$python" scripts/awd_lstm_reference.py --size "$size" --head "$head" --threads "$threads" \
          --steps "$s" --warmup "$w" --device "$device" "${py_bsz[@]}")
    echo "$t"; echo "$l"; echo "$p"
    lt+=("$t"); lm+=("$l"); py+=("$p")
  done
  rows+=("$("$python" - "$config" "${#lm[@]}" "${lt[@]}" "${lm[@]}" "${py[@]}" <<'PY'
import json, statistics, sys
config, n = sys.argv[1], int(sys.argv[2])
runs = [json.loads(s) for s in sys.argv[3:]]
lt, lm, py = runs[:n], runs[n:2 * n], runs[2 * n:]
for a, b, c in zip(lt, lm, py):
    for key in ("parameters", "bsz", "bptt", "steps", "threads", "device"):
        if not a[key] == b[key] == c[key]:
            sys.exit(f"bench.sh: {config}: {key} differs: lmkit.train {a[key]}, Lua loop {b[key]}, pytorch {c[key]}")
def median(rs, key): return statistics.median(r[key] for r in rs)
tt, tl, tp = median(lt, "tokens_per_s"), median(lm, "tokens_per_s"), median(py, "tokens_per_s")
mt, mp = median(lt, "max_rss_mb"), median(py, "max_rss_mb")
shape = f'{config} ({lm[0]["parameters"]:,} params, {lm[0]["bptt"]}x{lm[0]["bsz"]})'
print(f"| {shape} | {tt:,.0f} | {tl:,.0f} | {tp:,.0f} | {tt / tp:.2f} | {tl / tp:.2f} | {mt:,.0f} / {mp:,.0f} |")
PY
)")
done
echo
echo "| config | lmkit.train tok/s | Lua loop tok/s | pytorch tok/s | lmkit.train / pytorch | Lua loop / pytorch | peak RSS MB (lmkit.train / pytorch) |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"

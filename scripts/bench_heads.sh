#!/usr/bin/env bash
# What a head costs over Softmax in lmkit's own training step: lmkit.train (scripts/bench_lmkit_train.lua)
# with each head beside Softmax at the same size, batch and token stream, alternating, on this machine.
# Prints each run's raw JSON line, then one Markdown table of medians: tokens/s, the step time's ratio to
# Softmax's, and peak memory (live tensors: on a CUDA device Torch's count, on the CPU lmkit's counting
# allocator's; each JSON line also has the process's peak RSS).
#
#   bash scripts/bench_heads.sh                                   # tiny gss, tiny plif (CPU)
#   bash scripts/bench_heads.sh --device cuda --steps 200 --warmup 20    # the GPU table's heads
#   bash scripts/bench_heads.sh --config "ptb gss" --config "wt2 mos 15" --repeats 3
#
# --config "SIZE HEAD [BSZ]" (repeatable; SIZE tiny, ptb or wt2; HEAD sigsoftmax, gss, plif, mos or
# mixtape; BSZ defaults to Softmax's at that size, and Softmax runs at the same BSZ). Configurations of
# one size and batch share their Softmax runs. Defaults on cuda: "ptb sigsoftmax", "ptb gss",
# "ptb plif", "wt2 plif", "wt2 mixtape", "wt2 mos 15" (LMS-PLIF with K = 100,000 knots, Mixtape K = 4,
# MoS K = 15: the workloads of docs/benchmarks.md's GPU table). LMKIT: the lmkit binary (./build/lmkit).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
lmkit=${LMKIT:-./build/lmkit}

threads=2 steps=20 warmup=3 repeats=1 device=cpu
chosen_configs=()
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift ;;
    --steps) steps=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --repeats) repeats=$2; shift ;;
    --device) device=$2; shift ;;
    --config) chosen_configs+=("$2"); shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "bench_heads.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$lmkit" ] || { echo "bench_heads.sh: no lmkit binary at '$lmkit' (build it, or set LMKIT)" >&2; exit 1; }
for n in "$threads" "$steps" "$warmup" "$repeats"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench_heads.sh: --threads, --steps, --warmup and --repeats take integers ≥ 1, got '$n'" >&2; exit 2; }
done
configs=("tiny gss" "tiny plif")
[ "$device" = cpu ] || configs=("ptb sigsoftmax" "ptb gss" "ptb plif" "wt2 plif" "wt2 mixtape" "wt2 mos 15")
[ ${#chosen_configs[@]} -eq 0 ] || configs=("${chosen_configs[@]}")

# Softmax's batch sizes (SPEC Table 4.3), as bench_lmkit_train.lua: a config's group is SIZE and BSZ.
declare -A softmax_bsz=([tiny]=20 [ptb]=20 [wt2]=80)
groups=()
declare -A group_heads=()
for config in "${configs[@]}"; do
  read -r size head bsz extra <<<"$config"
  [ -z "${extra:-}" ] && [ -n "${head:-}" ] || { echo "bench_heads.sh: --config '$config': expected \"SIZE HEAD [BSZ]\"" >&2; exit 2; }
  [ -n "${softmax_bsz[$size]:-}" ] || { echo "bench_heads.sh: --config '$config': SIZE must be tiny, ptb or wt2" >&2; exit 2; }
  case $head in sigsoftmax|gss|plif|mos|mixtape) ;; *)
    echo "bench_heads.sh: --config '$config': HEAD must be sigsoftmax, gss, plif, mos or mixtape (Softmax runs beside each)" >&2; exit 2 ;;
  esac
  bsz=${bsz:-${softmax_bsz[$size]}}
  [[ $bsz =~ ^[1-9][0-9]*$ ]] || { echo "bench_heads.sh: --config '$config': BSZ must be an integer ≥ 1" >&2; exit 2; }
  key="$size $bsz"
  [ -n "${group_heads[$key]+set}" ] || { groups+=("$key"); group_heads[$key]=""; }
  group_heads[$key]+="$head "
done

echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(LC_ALL=C lscpu | sed -n 's/^Model name: *//p' | head -1), threads $threads, device $device"
if [ "$device" != cpu ] && command -v nvidia-smi >/dev/null; then
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
fi
echo "versions: $("$lmkit" --version 2>/dev/null | paste -sd ',' - | sed 's/,/, /g')"

# The table's rows, in Lua: lmkit reads its own JSON lines (no Python needed on the machine).
table_script=$(mktemp --suffix=.lua) lines_file=$(mktemp)
trap 'rm -f "$table_script" "$lines_file"' EXIT
cat >"$table_script" <<'LUA'
local cfg = lmkit.configure({lines = "", device = "cpu", header = false})
local runs, order = {}, {}
for line in io.lines(cfg.lines) do
  local r = lmkit.json_decode(line)
  local key = ("%s %s %d"):format(r.size, r.head, r.bsz)
  if not runs[key] then runs[key] = {}; order[#order + 1] = key end
  table.insert(runs[key], r)
end
local function median(list, field)
  local v = {}
  for _, r in ipairs(list) do v[#v + 1] = r[field] end
  table.sort(v)
  local n = #v
  return n % 2 == 1 and v[(n + 1) // 2] or (v[n // 2] + v[n // 2 + 1]) / 2
end
local function thousands(x)
  local s = ("%.0f"):format(x)
  return (s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end
local memory = cfg.device == "cpu" and "peak host MB (live tensors)" or "peak device MB (live tensors)"
if cfg.header then print(("| head (size, bptt×bsz, parameters) | tok/s | Softmax tok/s | step ms | Softmax step ms | step / Softmax | %s | memory / Softmax |"):format(memory))
print("|---|---|---|---|---|---|---|---|") end
local field = cfg.device == "cpu" and "peak_host_tensor_mb" or "peak_device_mb"
for _, key in ipairs(order) do
  local list = runs[key]
  local r = list[1]
  if r.head ~= "softmax" then
    local base = runs[("%s softmax %d"):format(r.size, r.bsz)]
    local step, base_step = median(list, "step_ms_mean"), median(base, "step_ms_mean")
    local mem, base_mem = median(list, field), median(base, field)
    print(("| %s (%s, %dx%d, %s) | %s | %s | %.2f | %.2f | %.3f | %s / %s | %s |"):format(
      r.head, r.size, r.bptt, r.bsz, thousands(r.parameters), thousands(median(list, "tokens_per_s")),
      thousands(median(base, "tokens_per_s")), step, base_step, step / base_step, thousands(mem), thousands(base_mem),
      base_mem > 0 and ("%.2f"):format(mem / base_mem) or "–"))
  end
end
LUA
run() {  # size head bsz -> one JSON line
  "$lmkit" run scripts/bench_lmkit_train.lua --set size="$1" --set head="$2" --set bsz="$3" --set threads="$threads" \
    --set steps="$steps" --set warmup="$warmup" --set device="$device" | tail -1
}
# A group's rows as soon as it is measured (under a deadline the finished groups stay): the header
# before the first group's rows.
header=true
for key in "${groups[@]}"; do
  read -r size bsz <<<"$key"
  lines=()
  for _ in $(seq 1 "$repeats"); do
    for head in softmax ${group_heads[$key]}; do
      line=$(run "$size" "$head" "$bsz")
      echo "$line"
      lines+=("$line")
    done
  done
  printf '%s\n' "${lines[@]}" >"$lines_file"
  "$lmkit" run "$table_script" --set lines="$lines_file" --set device="$device" --set header="$header"
  header=false
done

#!/usr/bin/env bash
# lmkit.train against the ORIGINAL research code, same sizes, same machine, one after the other:
# salesforce/awd-lstm-lm's main.py (AWD-LSTM Softmax) and zihangdai/mos's main.py (MoS, K = 15),
# each read at run time from a folder you name (a `git clone` of it), beside
# scripts/bench_lmkit_train.lua at the same sizes. Prints each raw line as it is measured, then one
# Markdown table: tokens/s, peak memory and the ratios, with issue 37's targets beside.
#
#   bash scripts/bench_reference.sh --reference-awd ../awd-lstm-lm --reference-mos ../mos     # an H100: PTB sizes
#   bash scripts/bench_reference.sh --reference-mos ../mos --batches 400 --warmup 40
#   bash scripts/bench_reference.sh --size wt2 --reference-awd ../awd-lstm-lm --reference-mos ../mos   # WikiText-2 sizes
#   PYTHON=/usr/bin/python3 bash scripts/bench_reference.sh --device cpu --size tiny --reference-awd ../awd-lstm-lm \
#     --reference-mos ../mos --batches 20 --warmup 5 --threads 2                              # a CPU check, seconds
#
# --reference-awd DIR, --reference-mos DIR (either or both): the original code's folders, each with its
#   main.py; they are only read: each is copied into the work folder and run there.
# --device cuda|cpu (cuda); --size ptb|wt2|tiny (ptb: the papers' PTB sizes on a synthetic corpus of
#   PTB's counts, 10,000 words and 929,589 / 73,760 / 82,430 tokens; wt2: the papers' WikiText-2
#   sizes on one of WikiText-2's counts, 33,278 words and 2,088,628 / 217,646 / 245,569 tokens;
#   tiny: 1,000 words and the sizes of bench_lmkit_train.lua's tiny model, for a CPU check); --batches N (200) timed batches,
#   after --warmup N (20); --threads T (2): the CPU threads of both programs; --cap SECONDS (900): the
#   most each program may run; --work DIR: the scratch folder (kept; default a temporary folder,
#   removed at the end).
# LMKIT: the lmkit binary (default ./build/lmkit in the repository root; a relative path is taken from
# the folder the script is run from); PYTHON: a python with torch (and numpy) for the original code
# (default python3).
#
# The original code runs with its papers' settings. PTB: AWD-LSTM 400/1150/3, batch 20, bptt 70,
# lr 30; MoS 280/960/620, 15 experts, batch 12, bptt 70, lr 20, the dropouts of its README's PTB
# command. WikiText-2: AWD-LSTM 400/1150/3, batch 80, lr 30, dropouti 0.65, dropouth 0.2 (its
# README's WT2 command); MoS 300/1150/650, 15 experts, batch 15, lr 15, the dropouts and
# --max_seq_len_delta 20 of its README's WT2 command, with --small_batch_size 15 (its 3-GPU
# command's value, on one GPU): the README's single-GPU command splits each batch of 15 into three
# of 5 to fit a 12 GB GPU, which an H100 does not need, and lmkit steps the batch of 15 at once.
# Seed 141; MoS with --single_gpu on CUDA. For one epoch, in the background, with --log-interval set
# so that the timed batches give at least four log lines; it is stopped (its process group) once
# those lines have appeared: its epoch's end (validation, test) is never waited for. tokens/s =
# batch size × the sampler's mean window length / the median ms/batch of the log lines after the
# warm-up (the original samples each window as max(5, int(N(bptt', 5))), bptt' = bptt with
# probability 0.95, else bptt / 2; MoS caps it at bptt + --max_seq_len_delta: 40 by default, 20 in
# its WT2 command).
# lmkit.train counts each window's own length. The one known incompatibility of the original code with
# Torch ≥ 1.x is patched in the copies: WeightDrop in eval mode sets the raw Parameter back as the LSTM's
# weight, and the next training forward then fails (awd-lstm-lm's issue #79); the copy's eval-mode
# weight is a plain tensor (`raw_w.data`). Nothing else of the original code is changed.
# Peak memory: on CUDA each program's processes' device memory from nvidia-smi (sampled every 0.5 s,
# the same way for both; the whole GPU's, less what was in use before, where nvidia-smi names no
# process of this machine, e.g. in a container); on the CPU each process's peak RSS (VmHWM).
# A side that fails prints its log's tail and reads "failed" in the table; the exit status is non-zero
# only when nothing could be measured.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
caller_dir=$PWD
me=bench_reference.sh

say() { echo "$me: $*" >&2; }
die() { local code=$1; shift; say "$@"; exit "$code"; }
absolute() {  # absolute PATH: PATH from the folder the script is run from
  case $1 in /*) printf '%s' "$1" ;; *) printf '%s' "$caller_dir/$1" ;; esac
}

ref_awd="" ref_mos="" device=cuda size=ptb batches=200 warmup=20 threads=2 cap=900 work=""
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    --reference-awd|--reference-mos|--device|--size|--batches|--warmup|--threads|--cap|--work)
      [ $# -ge 2 ] || die 2 "$1 needs a value (try --help)"
      case $1 in
        --reference-awd) ref_awd=$2 ;;
        --reference-mos) ref_mos=$2 ;;
        --device) device=$2 ;;
        --size) size=$2 ;;
        --batches) batches=$2 ;;
        --warmup) warmup=$2 ;;
        --threads) threads=$2 ;;
        --cap) cap=$2 ;;
        --work) work=$2 ;;
      esac
      shift ;;
    *) die 2 "unknown option '$1' (try --help)" ;;
  esac
  shift
done
case $device in cuda|cpu) ;; *) die 2 "--device must be cuda or cpu, got '$device'" ;; esac
case $size in ptb|wt2|tiny) ;; *) die 2 "--size must be ptb, wt2 or tiny, got '$size'" ;; esac
for pair in "batches $batches" "warmup $warmup" "threads $threads" "cap $cap"; do
  read -r name value <<<"$pair"
  [[ $value =~ ^[1-9][0-9]*$ ]] || die 2 "--$name takes an integer ≥ 1, got '$value'"
done
[ "$batches" -ge 4 ] || die 2 "--batches must be ≥ 4: the timed batches give four log lines of the original code, got $batches"
[ -n "$ref_awd$ref_mos" ] ||
  die 2 "give --reference-awd DIR, --reference-mos DIR or both: the original code's folders (on a connected machine: git clone https://github.com/salesforce/awd-lstm-lm; git clone https://github.com/zihangdai/mos)"

# The original code's folders: there, with a main.py, and the right one of the two.
check_folder() {  # check_folder OPTION DIR REPOSITORY MARK: dies unless DIR holds REPOSITORY's main.py
  local option=$1 dir=$2 repository=$3 mark=$4
  [ -d "$dir" ] || die 1 "$option: no folder '$dir' (clone https://github.com/$repository there, or name the folder that holds its main.py)"
  [ -f "$dir/main.py" ] || die 1 "$option: '$dir' has no main.py: name a copy of https://github.com/$repository (its main.py, model.py, weight_drop.py, data.py, utils.py)"
  grep -q -- "$mark" "$dir/main.py" ||
    die 1 "$option: '$dir/main.py' is not $repository's (it lacks '$mark'); --reference-awd takes salesforce/awd-lstm-lm, --reference-mos zihangdai/mos"
}
workloads=()
if [ -n "$ref_awd" ]; then
  ref_awd=$(absolute "$ref_awd")
  check_folder --reference-awd "$ref_awd" salesforce/awd-lstm-lm SplitCrossEntropyLoss
  workloads+=(awd)
fi
if [ -n "$ref_mos" ]; then
  ref_mos=$(absolute "$ref_mos")
  check_folder --reference-mos "$ref_mos" zihangdai/mos n_experts
  workloads+=(mos)
fi

lmkit=${LMKIT:-$root/build/lmkit}
lmkit=$(absolute "$lmkit")
python=${PYTHON:-python3}
[ -x "$lmkit" ] || die 1 "no lmkit binary at '$lmkit' (build it, or set LMKIT)"
command -v "$python" >/dev/null || die 1 "no python '$python' (set PYTHON to a python with torch)"
"$python" -c 'import torch, numpy' 2>/dev/null ||
  die 1 "'$python' has no torch or numpy, which the original code needs (Debian: apt-get install python3-torch; or set PYTHON to a python with torch)"
if [ "$device" = cuda ]; then
  "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    die 1 "the torch of '$python' sees no CUDA device (--device cpu measures on the CPU)"
fi
command -v setsid >/dev/null || die 1 "needs setsid (util-linux) to stop the original code's process group"
have_smi=no
if [ "$device" = cuda ]; then
  if command -v nvidia-smi >/dev/null; then have_smi=yes; else say "no nvidia-smi: peak device memory left out"; fi
fi
cd "$root"

# The scratch folder: the corpus, the copies of the original code, every program's log.
if [ -n "$work" ]; then
  work=$(absolute "$work")
  mkdir -p "$work"
  rm -rf "$work/corpus" "$work/awd" "$work/mos" "$work/awd-save"* "$work/mos-save"* "$work/lmkit-awd" "$work/lmkit-mos" "$work/logs"
  keep_work=yes
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/lmkit-bench-reference.XXXXXX")
  keep_work=no
fi
mkdir -p "$work/corpus" "$work/logs"
running=()  # process groups started here and not yet stopped
stop_group() {  # stop_group PID: TERM to its process group, KILL after 5 s
  local pid=$1 i
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for i in 1 2 3 4 5 6 7 8 9 10; do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
    [ "$i" != 10 ] || kill -KILL -- "-$pid" 2>/dev/null || true
  done
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local pid
  for pid in "${running[@]}"; do [ -z "$pid" ] || stop_group "$pid"; done
  [ "$keep_work" = yes ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

export OMP_NUM_THREADS=$threads PYTHONUNBUFFERED=1
echo "machine: $(env -u OMP_NUM_THREADS nproc) cores, $(LC_ALL=C lscpu | sed -n 's/^Model name: *//p' | head -1), threads $threads, device $device"
if [ "$have_smi" = yes ]; then
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
fi
echo "versions: $("$lmkit" --version 2>/dev/null | paste -sd ',' - | sed 's/,/, /g') | original code: Python $("$python" -c 'import sys, torch, numpy; print(sys.version.split()[0] + ", torch " + torch.__version__ + ", numpy " + numpy.__version__)')"
for w in "${workloads[@]}"; do
  dir=$ref_awd; [ "$w" = mos ] && dir=$ref_mos
  echo "original code ($w): $dir, commit $(git -C "$dir" rev-parse --short HEAD 2>/dev/null || echo 'unknown (not a git clone)')"
done

# --- the workloads -------------------------------------------------------------------------------
# The papers' PTB settings; tiny keeps them but for bench_lmkit_train.lua's tiny model and batch 20.
bptt=70
mos_delta=40  # MoS's --max_seq_len_delta: the cap of its window lengths is bptt + this
declare -A bsz args label
if [ "$size" = wt2 ]; then
  vocab=33278 mos_delta=20
  bsz[awd]=80 bsz[mos]=15
  args[awd]="--emsize 400 --nhid 1150 --nlayers 3 --batch_size 80 --lr 30 --dropouti 0.65 --dropouth 0.2"
  args[mos]="--emsize 300 --nhid 1150 --nhidlast 650 --nlayers 3 --n_experts 15 --batch_size 15 --small_batch_size 15"
  args[mos]+=" --max_seq_len_delta 20 --lr 15 --dropout 0.4 --dropouti 0.55 --dropouth 0.2 --dropoutl 0.29"
  label[awd]="AWD-LSTM Softmax, WikiText-2 sizes (400/1150/3, bsz 80, bptt 70)"
  label[mos]="MoS K=15, WikiText-2 sizes (300/1150/650, bsz 15, bptt 70)"
elif [ "$size" = ptb ]; then
  vocab=10000
  bsz[awd]=20 bsz[mos]=12
  args[awd]="--emsize 400 --nhid 1150 --nlayers 3"
  args[mos]="--emsize 280 --nhid 960 --nhidlast 620 --nlayers 3 --n_experts 15"
  label[awd]="AWD-LSTM Softmax, PTB sizes (400/1150/3, bsz 20, bptt 70)"
  label[mos]="MoS K=15, PTB sizes (280/960/620, bsz 12, bptt 70)"
else
  vocab=1000
  bsz[awd]=20 bsz[mos]=20
  args[awd]="--emsize 32 --nhid 64 --nlayers 3"
  args[mos]="--emsize 32 --nhid 64 --nhidlast 32 --nlayers 3 --n_experts 15"
  label[awd]="AWD-LSTM Softmax, tiny (32/64/3, bsz 20, bptt 70)"
  label[mos]="MoS K=15, tiny (32/64/32, bsz 20, bptt 70)"
fi
if [ "$size" != wt2 ]; then
  args[awd]+=" --batch_size ${bsz[awd]} --lr 30 --dropouti 0.4 --dropouth 0.25"
  args[mos]+=" --batch_size ${bsz[mos]} --lr 20 --dropout 0.4 --dropouti 0.4 --dropouth 0.225 --dropoutl 0.29"
fi
args[awd]+=" --bptt $bptt --seed 141 --epochs 1"
args[mos]+=" --bptt $bptt --seed 141 --epochs 1"
# --cuda is store_false in both: given, it turns CUDA off.
if [ "$device" = cpu ]; then
  args[awd]+=" --cuda" args[mos]+=" --cuda"
else
  args[mos]+=" --single_gpu"
fi

# The log lines: every `interval` batches; a line at batch b covers batches b-interval+1 .. b (the
# first one, at b = interval, also batch 0). Lines whose batches start before --warmup are dropped;
# the run is stopped at the line of batch `last`: `timed` batches after the warm-up in `lines` lines.
interval=$(( batches / 4 ))
skip=$(( (warmup - 1 + interval - 1) / interval ))   # ceil((warmup - 1) / interval), at least 1
[ "$skip" -ge 1 ] || skip=1
lines=$(( (batches + interval - 1) / interval ))
first=$(( (skip + 1) * interval ))                    # the first kept line's batch number
last=$(( (skip + lines) * interval ))
timed=$(( lines * interval ))
echo "original code's log: every $interval batches; the lines of batches $first to $last kept ($timed timed batches after $(( skip * interval + 1 )) of warm-up)"

# The reference sampler's mean window length, numerically (cap: MoS's bptt + 40; none for AWD-LSTM).
mean_window() {  # mean_window BPTT CAP
  "$python" - "$1" "$2" <<'PY'
import math, sys
bptt, cap = float(sys.argv[1]), float(sys.argv[2])
phi = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))
mean = 0.0
for p, mu in ((0.95, bptt), (0.05, bptt / 2)):
    # seq_len = max(5, int(x)), x ~ N(mu, 5): 5 for every x < 6, k for k <= x < k + 1
    m = 5 * phi((6 - mu) / 5)
    for k in range(6, int(mu) + 80):
        m += min(k, cap) * (phi((k + 1 - mu) / 5) - phi((k - mu) / 5))
    mean += p * m
print(f"{mean:.4f}")
PY
}
declare -A window
window[awd]=$(mean_window "$bptt" 1e9)
window[mos]=$(mean_window "$bptt" $(( bptt + mos_delta )))
echo "original code's mean window length: AWD-LSTM ${window[awd]}, MoS ${window[mos]} tokens (bptt $bptt)"

# --- the corpus ------------------------------------------------------------------------------------
# The original code's format: train/valid/test.txt, words separated by spaces, a sentence per line
# (data.Corpus adds <eos> to each line). Word types w1..w(vocab-1), each one in the training split's
# first lines, then uniform draws of a Park-Miller LCG; 5 to 40 words a line. Token counts include
# each line's <eos>.
if [ "$size" != tiny ]; then
  n_train=929589 n_valid=73760 n_test=82430
  [ "$size" = wt2 ] && n_train=2088628 n_valid=217646 n_test=245569
  # The run must end within the first epoch: `last` batches of at most ~1.2 bptt tokens per column.
  for w in "${workloads[@]}"; do
    need=$(( (last + 1) * bptt * 6 * ${bsz[$w]} / 5 ))
    [ "$need" -le "$n_train" ] ||
      die 2 "--warmup $warmup --batches $batches: the original code's $((last + 1)) batches need ~$need training tokens at batch ${bsz[$w]}, more than the $n_train of --size $size (fewer batches)"
  done
else
  need=$(( (last + 1) * bptt * 6 * 20 / 5 ))
  n_train=$(( need > 20000 ? need : 20000 )) n_valid=2000 n_test=2000
fi
awk -v V="$vocab" -v dir="$work/corpus" -v n_train="$n_train" -v n_valid="$n_valid" -v n_test="$n_test" 'BEGIN {
  x = 141; fresh = 1
  split("train valid test", names, " "); count["train"] = n_train; count["valid"] = n_valid; count["test"] = n_test
  for (s = 1; s <= 3; s++) {
    file = dir "/" names[s] ".txt"; left = count[names[s]]
    while (left > 0) {
      x = (16807 * x) % 2147483647; words = 5 + x % 36
      if (left - words - 1 < 6) words = left - 1
      line = ""
      for (i = 1; i <= words; i++) {
        if (s == 1 && fresh < V) id = fresh++
        else { x = (16807 * x) % 2147483647; id = 1 + x % (V - 1) }
        line = line (i > 1 ? " " : "") "w" id
      }
      print line > file
      left -= words + 1
    }
    close(file)
  }
}'
corpus_line=$(awk '{ n[FILENAME] += NF + 1; for (i = 1; i <= NF; i++) seen[$i] = 1 }
  END { v = 1; for (w in seen) v++; f = ARGV[1]; g = ARGV[2]; h = ARGV[3]
        printf "%s words (with <eos>); %s / %s / %s tokens (train / valid / test, with each line'"'"'s <eos>)", c(v), c(n[f]), c(n[g]), c(n[h]) }
  function c(x,  s) { s = sprintf("%d", x); while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]($|,)/, ",&", s); return s }' \
  "$work/corpus/train.txt" "$work/corpus/valid.txt" "$work/corpus/test.txt")
echo "corpus: $corpus_line"

# --- measuring one program -------------------------------------------------------------------------
gpu=${CUDA_VISIBLE_DEVICES:-0}
gpu=${gpu%%,*}
gpu_used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i "$gpu" 2>/dev/null | head -1 | tr -dc '0-9'; }
# watch_memory PGID: one sample into the globals peak_pids (the device MiB of the group's processes
# that nvidia-smi names), peak_device (the whole GPU's MiB less `baseline`) and peak_rss (the group's
# leader's VmHWM in MiB).
watch_memory() {
  local group=$1 pids used kib
  kib=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$group/status" 2>/dev/null || true)
  [ -z "$kib" ] || [ $(( kib / 1024 )) -le "$peak_rss" ] || peak_rss=$(( kib / 1024 ))
  [ "$have_smi" = yes ] || return 0
  pids=$(ps -eo pid=,pgid= | awk -v g="$group" '$2 == g { printf "%s ", $1 }')
  used=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
    awk -F', *' -v pids=" $pids" 'index(pids, " " $1 " ") && $2 ~ /^[0-9]+$/ { s += $2 } END { print s + 0 }')
  [ "$used" -le "$peak_pids" ] || peak_pids=$used
  used=$(gpu_used)
  [ -z "$used" ] || [ $(( used - baseline )) -le "$peak_device" ] || peak_device=$(( used - baseline ))
}
# start_watch: resets the peaks and reads the GPU's memory in use before the program starts.
start_watch() {
  peak_pids=0 peak_device=0 peak_rss=0 baseline=0
  if [ "$have_smi" = yes ]; then baseline=$(gpu_used); baseline=${baseline:-0}; fi
}
# peak_mib: the program's peak memory and where it comes from ("MiB source").
peak_mib() {
  if [ "$device" = cpu ]; then echo "$peak_rss VmHWM"
  elif [ "$have_smi" = no ]; then echo "- none"
  elif [ "$peak_pids" -gt 0 ]; then echo "$peak_pids nvidia-smi-processes"
  else echo "$peak_device nvidia-smi-whole-gpu"
  fi
}

declare -A orig_tps orig_mem lm_tps lm_mem orig_params lm_params
# run_original awd|mos: copies, patches and runs the original code; sets orig_tps, orig_mem, orig_params.
run_original() {
  local w=$1 src copy log pid status="" started now shown=0 count reason=""
  src=$ref_awd; [ "$w" = mos ] && src=$ref_mos
  copy=$work/$w log=$work/logs/original-$w.log
  mkdir -p "$copy"
  tar -C "$src" --exclude=./.git -cf - . | tar -C "$copy" -xf -
  # awd-lstm-lm's issue #79 (MoS has the same weight_drop.py): in eval mode dropout returns the raw
  # Parameter itself, which setattr registers as the LSTM's parameter; the next training forward's
  # plain tensor is then refused. Eval mode gets a plain tensor instead.
  if [ -f "$copy/weight_drop.py" ]; then
    sed -i 's/^\( *\)w = torch\.nn\.functional\.dropout(raw_w, p=self\.dropout, training=self\.training)$/\1w = torch.nn.functional.dropout(raw_w, p=self.dropout, training=self.training) if self.training else raw_w.data/' \
      "$copy/weight_drop.py"
    if grep -q 'if self.training else raw_w.data' "$copy/weight_drop.py"; then
      echo "original code ($w): weight_drop.py patched in the copy: eval mode's weight is raw_w.data (awd-lstm-lm issue #79)"
    else
      echo "original code ($w): weight_drop.py is not the known one; run as it is (the timed batches never reach evaluation)"
    fi
  fi
  # shellcheck disable=SC2086  # args[$w] is a list of options
  (cd "$copy" && exec setsid "$python" -u main.py --data "$work/corpus/" --save "$work/$w-save" \
     --log-interval "$interval" ${args[$w]} >"$log" 2>&1) &
  pid=$!
  running+=("$pid")
  start_watch
  started=$(date +%s)
  while :; do
    watch_memory "$pid"
    count=$(grep -c 'ms/batch' "$log" || true)
    if [ "$count" -gt "$shown" ]; then
      grep 'ms/batch' "$log" | sed -n "$((shown + 1)),${count}p" | sed "s/^/original $w: /"
      shown=$count
    fi
    if grep -qE "^\| epoch +1 \| +$last/" "$log"; then status=measured; break; fi
    if ! kill -0 "$pid" 2>/dev/null; then reason="it ended before batch $last"; break; fi
    now=$(date +%s)
    if [ $(( now - started )) -ge "$cap" ]; then reason="no log line of batch $last within --cap ${cap}s"; break; fi
    sleep 0.5
  done
  stop_group "$pid"
  running=()  # one program at a time: none is left running
  orig_params[$w]=$(sed -n 's/^.*Model total parameters: *\([0-9]*\).*$/\1/p' "$log" | head -1)
  local ms
  # "| epoch   1 |   100/  663 batches | lr ... | ms/batch 123.45 | ...": the kept lines' ms/batch.
  ms=$(awk -v first="$first" -v last="$last" 'match($0, /\| +[0-9]+\/ *[0-9]+ batches/) {
         b = substr($0, RSTART, RLENGTH); gsub(/[^0-9\/]/, "", b); split(b, parts, "/"); b = parts[1] + 0
         if (b < first || b > last || !match($0, /ms\/batch +[0-9.]+/)) next
         v = substr($0, RSTART, RLENGTH); sub(/ms\/batch +/, "", v); printf "%s ", v }' "$log")
  if [ "$status" != measured ] || [ -z "$ms" ]; then
    say "original $w: failed: ${reason:-no log line after the warm-up}; the tail of its log:"
    tail -20 "$log" >&2
    orig_tps[$w]=failed orig_mem[$w]=failed
    echo "{\"impl\": \"original $w main.py\", \"size\": \"$size\", \"device\": \"$device\", \"status\": \"failed\", \"reason\": \"${reason:-no log line after the warm-up}\"}"
    return 0
  fi
  local median tps mem source
  median=$(tr ' ' '\n' <<<"$ms" | awk 'NF' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
  tps=$(awk -v b="${bsz[$w]}" -v m="${window[$w]}" -v ms="$median" 'BEGIN { printf "%.1f", b * m / (ms / 1000) }')
  read -r mem source < <(peak_mib)
  orig_tps[$w]=$tps orig_mem[$w]=$mem
  echo "{\"impl\": \"original $w main.py\", \"size\": \"$size\", \"device\": \"$device\", \"bsz\": ${bsz[$w]}, \"bptt\": $bptt, \"log_interval\": $interval, \"batches\": \"$first-$last\", \"ms_per_batch\": [$(sed 's/ $//; s/ /, /g' <<<"$ms")], \"ms_per_batch_median\": $median, \"mean_window\": ${window[$w]}, \"tokens_per_s\": $tps, \"peak_mib\": \"$mem\", \"peak_source\": \"$source\", \"peak_rss_mib\": $peak_rss, \"parameters\": ${orig_params[$w]:-0}, \"threads\": $threads}"
}

# run_lmkit awd|mos: scripts/bench_lmkit_train.lua at the same size and head; sets lm_tps, lm_mem.
run_lmkit() {
  local w=$1 head=softmax log pid started rc=0 reason="" line
  [ "$w" = mos ] && head=mos
  log=$work/logs/lmkit-$w.log
  setsid "$lmkit" run scripts/bench_lmkit_train.lua --set size="$size" --set head="$head" --set device="$device" \
    --set steps="$batches" --set warmup="$warmup" --set threads="$threads" --set dir="$work/lmkit-$w" >"$log" 2>&1 &
  pid=$!
  running+=("$pid")
  start_watch
  started=$(date +%s)
  while kill -0 "$pid" 2>/dev/null; do
    watch_memory "$pid"
    if [ $(( $(date +%s) - started )) -ge "$cap" ]; then reason="still running after --cap ${cap}s"; break; fi
    sleep 0.5
  done
  if [ -n "$reason" ]; then stop_group "$pid"; else wait "$pid" || rc=$?; fi
  running=()  # one program at a time: none is left running
  line=$(grep '^{"impl": "lmkit.train"' "$log" | tail -1 || true)
  if [ -n "$reason" ] || [ "$rc" != 0 ] || [ -z "$line" ]; then
    say "lmkit $w: failed: ${reason:-exit $rc}; the tail of its log:"
    tail -20 "$log" >&2
    lm_tps[$w]=failed lm_mem[$w]=failed
    echo "{\"impl\": \"lmkit.train\", \"head\": \"$head\", \"size\": \"$size\", \"device\": \"$device\", \"status\": \"failed\", \"reason\": \"${reason:-exit $rc}\"}"
    return 0
  fi
  local mem source
  lm_tps[$w]=$(sed -n 's/.*"tokens_per_s": \([0-9.]*\).*/\1/p' <<<"$line")
  lm_params[$w]=$(sed -n 's/.*"parameters": \([0-9]*\).*/\1/p' <<<"$line")
  if [ "$device" = cpu ]; then
    mem=$(sed -n 's/.*"peak_rss_mb": \([0-9.]*\).*/\1/p' <<<"$line") source=VmHWM
  else
    read -r mem source < <(peak_mib)
  fi
  lm_mem[$w]=$mem
  echo "${line%\}}, \"peak_mib\": \"$mem\", \"peak_source\": \"$source\"}"
}

for w in "${workloads[@]}"; do
  run_original "$w"
  run_lmkit "$w"
done

# --- the table -------------------------------------------------------------------------------------
thousands() { awk -v x="$1" 'BEGIN { s = sprintf("%.0f", x); while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]($|,)/, ",&", s); print s }'; }
ratio() {  # ratio A B: A / B with two decimals and "×", or "–"
  if [[ $1 =~ ^[0-9.]+$ && $2 =~ ^[0-9.]+$ ]] && awk -v b="$2" 'BEGIN { exit !(b > 0) }'; then
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'
  else echo "–"; fi
}
cell() { if [[ $1 =~ ^[0-9.]+$ ]]; then thousands "$1"; else echo "$1"; fi; }
judged=no
[ "$device" = cuda ] && [ "$size" = ptb ] && judged=yes
verdict() {  # verdict RATIO OP BOUND: "met" or "missed" (on an H100/H200 at PTB sizes only)
  [ "$judged" = yes ] && [ "$1" != "–" ] || return 0
  if awk -v r="${1%×}" -v b="$3" -v op="$2" 'BEGIN { exit !(op == ">=" ? r >= b : r <= b) }'; then printf ': met'; else printf ': missed'; fi
}
rows=() summary=() measured=0
for w in "${workloads[@]}"; do
  [ "${orig_tps[$w]}" = failed ] || measured=$((measured + 1))
  [ "${lm_tps[$w]}" = failed ] || measured=$((measured + 1))
  speed=$(ratio "${lm_tps[$w]}" "${orig_tps[$w]}") memory=$(ratio "${lm_mem[$w]}" "${orig_mem[$w]}")
  params=""
  if [ -n "${orig_params[$w]:-}" ] && [ -n "${lm_params[$w]:-}" ] && [ "${orig_params[$w]}" != "${lm_params[$w]}" ]; then
    params="; parameters $(thousands "${orig_params[$w]}") original, $(thousands "${lm_params[$w]}") lmkit"
  elif [ -n "${orig_params[$w]:-}${lm_params[$w]:-}" ]; then
    params="; $(thousands "${orig_params[$w]:-${lm_params[$w]}}") parameters"
  fi
  if [ "$w" = awd ]; then
    target="≥ 1.5×$(verdict "$speed" ">=" 1.5)"
    summary+=("AWD-LSTM Softmax $speed (target ≥ 1.5×$(verdict "$speed" ">=" 1.5))")
  else
    target="≥ 8×$(verdict "$speed" ">=" 8), memory ≤ 0.25×$(verdict "$memory" "<=" 0.25)"
    summary+=("MoS $speed, memory $memory (targets ≥ 8×$(verdict "$speed" ">=" 8), ≤ 0.25×$(verdict "$memory" "<=" 0.25))")
  fi
  rows+=("| ${label[$w]}$params | $(cell "${orig_tps[$w]}") | $(cell "${lm_tps[$w]}") | $speed | $(cell "${orig_mem[$w]}") | $(cell "${lm_mem[$w]}") | $memory | $target |")
done
echo
echo "| workload | original tokens/s | lmkit.train tokens/s | lmkit / original | original peak MiB | lmkit peak MiB | memory lmkit / original | target (issue 37, H100/H200, PTB sizes) |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
if [ "$device" = cpu ]; then
  echo "peak MiB: each process's peak RSS (VmHWM). Targets are judged on a GPU at PTB sizes only."
else
  echo "peak MiB: each program's device memory from nvidia-smi, sampled every 0.5 s (CUDA context included)."
fi
joined=$(printf '%s; ' "${summary[@]}")
echo "ratios: ${joined%; }"
[ "$measured" -gt 0 ] || die 1 "nothing could be measured (the logs' tails are above)"

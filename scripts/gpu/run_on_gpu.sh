#!/usr/bin/env bash
# Builds, tests and benchmarks lmkit on an offline GPU node: a machine with CUDA (nvcc) and PyTorch
# 2.x but no apt and no internet. Run it from the root of the repository copied to the node, beside
# the dependencies fetched on a connected Debian 12 machine by scripts/gpu/fetch_debs.sh
# (.gpu-deps/carry/, or the unpacked .gpu-deps/prefix and .gpu-deps/tools; scripts/gpu/README.md).
# It records what the node has, configures lmkit against the Torch inside that PyTorch and the
# carried dependencies, builds with all cores, runs the GPU tests, the logP-rank timing, the GPU
# benchmarks (against the PyTorch yardstick, then each head against lmkit's Softmax) and the CPU suite. Every step is timed under one deadline and may fail without
# stopping the next ones (except that nothing runs without a build).
#
#   bash scripts/gpu/run_on_gpu.sh --quick     # facts, configure, build, ctest -L gpu: a first probe
#   bash scripts/gpu/run_on_gpu.sh             # also the rank timing, the benchmarks and the CPU suite
#   bash scripts/gpu/run_on_gpu.sh --only configure,build,cpu_suite   # chosen steps (an existing build is reused)
#   bash scripts/gpu/run_on_gpu.sh --quick --out ~/lmkit-results/node7
#
# Steps, in order: facts configure build doctor gpu_tests rank bench heads sharing cpu_suite.
# Options: --budget SECONDS (540): the whole run's deadline, each step gets what is left of it;
#          --bench-steps N (200) --bench-warmup N (20) --bench-repeats R (1): timed steps per program,
#          alternating lmkit.train, lmkit's Lua loop and the PyTorch yardstick R times per configuration;
#          --bench-config "SIZE HEAD [BSZ]" (repeatable; default: ptb softmax,
#            ptb mos, wt2 mos, wt2 softmax 15: the workloads with a PyTorch yardstick);
#          --heads-config "SIZE HEAD [BSZ]" (repeatable; default: scripts/bench_heads.sh's on a GPU:
#            SigSoftmax, GSS and LMS-PLIF at PTB sizes, LMS-PLIF, Mixtape and MoS at WT2 sizes,
#            each beside Softmax at the same batch; the steps, warm-up and repeats are --bench-*'s);
#          --sharing-k "LIST" ("1 2 4 8"): tasks per GPU for the grid's cells per hour
#            (scripts/bench_sharing.sh: PTB-size cells of --bench-steps steps, one round per K);
#          --rank-contexts N (82430, PTB test); --build-dir DIR (build-gpu, under the repository root);
#          --out DIR: the output folder (default: $LMKIT_GPU_OUT, else ./gpu-out in the repository
#            root; a relative DIR is taken from the folder the script is run from);
#          --device cpu: a dry run of this driver on a machine without a GPU (CUDA off, CPU benchmarks).
# PYTHON (default python3) is the Python whose torch lmkit is built against and the yardstick runs on.
# The output folder receives machine.txt (the node's facts), results.md (the table of steps, the
# benchmark table, the tail of each failed step's log) and logs.tar.gz (every step's full log):
# three files to copy back and attach to a report.

# shellcheck source-path=SCRIPTDIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
caller_dir=$PWD
cd "$root"
self=$root/scripts/gpu/run_on_gpu.sh

# --- a single step, run by the driver below as a child process under `timeout` -----------------
if [ "${1:-}" = --step ]; then
  step=$2
  build=$LMKIT_GPU_BUILD
  machine_python() {  # python3 without the carried libraries: they are for lmkit's build alone
    env LD_LIBRARY_PATH="$LMKIT_GPU_ORIGINAL_LD_LIBRARY_PATH" "$LMKIT_GPU_PYTHON" "$@"
  }
  case $step in
    facts)
      set +e  # a fact that cannot be read is written down as such; the others still are
      # The machine as it is, not as the carried dependencies make it look.
      PATH=$LMKIT_GPU_ORIGINAL_PATH LD_LIBRARY_PATH=$LMKIT_GPU_ORIGINAL_LD_LIBRARY_PATH
      section() { printf '\n== %s\n' "$1"; }
      show() { "$@" 2>&1 || echo "(failed: $*)"; }
      have() { command -v "$1" >/dev/null && echo "$1: $(command -v "$1")" || echo "$1: none"; }
      section date; date -u
      section os; cat /etc/os-release; uname -a
      section cpu-memory-disk; echo "cores: $LMKIT_GPU_CORES (OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset})"; grep -E 'MemTotal|MemAvailable' /proc/meminfo; df -h "$root" /tmp
      section glibc; ldd --version 2>&1 | head -1
      section compilers; have gcc; have g++; have c++; show gcc --version | head -1; show g++ --version | head -1
      echo "newest GLIBCXX of the compiler's libstdc++: $(strings "$(g++ -print-file-name=libstdc++.so.6)" 2>/dev/null |
        grep -E '^GLIBCXX_3\.4\.[0-9]+$' | sort -V | tail -1)"
      section build-tools; for t in cmake ninja make xz dpkg strings patchelf ccache; do have "$t"; done
      command -v cmake >/dev/null && cmake --version | head -1
      command -v ninja >/dev/null && echo "ninja $(ninja --version)"
      section cuda; have nvcc; command -v nvcc >/dev/null && nvcc --version | tail -2
      ls -d /usr/local/cuda* 2>/dev/null; echo "CUDA_HOME=${CUDA_HOME:-}"
      section nvidia-smi; show nvidia-smi
      show nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,compute_cap --format=csv
      section python-torch; have "$LMKIT_GPU_PYTHON"; show machine_python --version
      show machine_python -c 'import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch._C._GLIBCXX_USE_CXX11_ABI, torch.utils.cmake_prefix_path)'
      show machine_python - <<'PY'
import os, torch
print("torch file:", torch.__file__)
print("cuda available:", torch.cuda.is_available(), "devices:", torch.cuda.device_count())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device:", p.name, "capability:", f"{p.major}.{p.minor}", "memory GiB:", round(p.total_memory / 2**30, 1),
          "SMs:", p.multi_processor_count)
print("TF32 matmul allowed by default:", torch.backends.cuda.matmul.allow_tf32)
include = os.path.join(os.path.dirname(torch.__file__), "include")
print("torch/include holds:", " ".join(sorted(os.listdir(include))) if os.path.isdir(include) else "(none)")
PY
      section carried-prefix
      echo "carried cmake/ninja used: ${LMKIT_DEPS_TOOLS:-(carried dependencies not set up)}"
      grep -E '^(#|GLIBC)' .gpu-deps/carry/manifest.txt 2>/dev/null || echo "no .gpu-deps/carry/manifest.txt"
      ;;
    configure)
      abi=$(machine_python -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
      if [ "$abi" = 0 ]; then
        echo "warning: this PyTorch uses the old libstdc++ ABI; the carried fmt and GoogleTest are built" \
             "with the new one, so linking them into lmkit will fail (docs/development.md)"
      fi
      if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=$PATH:/usr/local/cuda/bin; fi
      # Only the CUDA architecture of this machine: half the nvcc work of the default "80;90".
      # TORCH_CUDA_ARCH_LIST spares Torch's CMake config its own detection (it adds nvcc flags).
      read -r arch TORCH_CUDA_ARCH_LIST < <(machine_python -c 'import torch; p = torch.cuda.get_device_capability(); print(f"{p[0]}{p[1]} {p[0]}.{p[1]}")' 2>/dev/null || echo "90 9.0")
      export TORCH_CUDA_ARCH_LIST
      echo "CUDA architecture: $arch (TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST)"
      cuda=ON
      [ "$LMKIT_GPU_DEVICE" = cpu ] && cuda=OFF
      bash scripts/gpu/configure.sh "$build" -DLMKIT_CUDA=$cuda -DLMKIT_CUDA_ARCHITECTURES="$arch" \
        -DLMKIT_BUILD_TESTS=ON -DPython3_EXECUTABLE="$(command -v "$LMKIT_GPU_PYTHON")"
      ;;
    build)
      cmake --build "$build" -j "$LMKIT_GPU_CORES"
      "$build/lmkit" --version
      echo 'print("lmkit.device(): " .. lmkit.device())' >"$build/print_device.lua"
      "$build/lmkit" run "$build/print_device.lua"
      echo "== where lmkit's Torch, CUDA and carried libraries load from"
      ldd "$build/lmkit" | grep -E 'torch|c10|cud|nv|fmt|lua|readline|lapack|blas|gfortran|tinfo|not found' | sed 's/ (0x.*//'
      ;;
    doctor)
      # The user's first check on a new machine: versions, each fused kernel against ATen, a
      # 20-step training run on the GPU against the CPU, a verdict (exit 0 when all passed).
      "$build/lmkit" doctor --device "$LMKIT_GPU_DEVICE"
      ;;
    gpu_tests)
      ctest --test-dir "$build" -L gpu --output-on-failure --timeout 300
      ;;
    bench)
      # Each configuration on its own, so that a slow one or the deadline cuts the table short
      # instead of losing it. "SIZE HEAD [BSZ]": the issue's workloads that the scripts express.
      IFS=';' read -r -a configs <<<"$LMKIT_GPU_BENCH_CONFIGS"
      printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$LMKIT_GPU_ORIGINAL_LD_LIBRARY_PATH" \
        "$(command -v "$LMKIT_GPU_PYTHON")" >/tmp/lmkit-machine-python
      chmod +x /tmp/lmkit-machine-python
      rows=() header=""
      for config in "${configs[@]}"; do
        left=$(( LMKIT_GPU_DEADLINE - $(date +%s) ))
        if [ "$left" -lt 60 ]; then echo "== $config: skipped, ${left}s left"; continue; fi
        echo "== $config"
        table=$(LMKIT="$build/lmkit" PYTHON=/tmp/lmkit-machine-python timeout "$((left - 10))" \
          bash scripts/bench.sh --device "$LMKIT_GPU_DEVICE" --threads 4 --config "$config" --repeats "$LMKIT_GPU_BENCH_REPEATS" \
            --steps "$LMKIT_GPU_BENCH_STEPS" --warmup "$LMKIT_GPU_BENCH_WARMUP" --ptb-steps "$LMKIT_GPU_BENCH_STEPS" --ptb-warmup "$LMKIT_GPU_BENCH_WARMUP") || { echo "$table"; echo "== $config: failed"; continue; }
        echo "$table"
        header=$(grep -m1 -A1 '^| config' <<<"$table")
        rows+=("$(tail -1 <<<"$table")")
      done
      echo; echo "== all configurations"
      [ ${#rows[@]} -eq 0 ] || { echo "$header"; printf '%s\n' "${rows[@]}"; }
      ;;
    heads)
      IFS=';' read -r -a configs <<<"$LMKIT_GPU_HEADS_CONFIGS"
      config_args=()
      for config in "${configs[@]}"; do config_args+=(--config "$config"); done
      LMKIT="$build/lmkit" bash scripts/bench_heads.sh --device "$LMKIT_GPU_DEVICE" --threads 4 \
        --steps "$LMKIT_GPU_BENCH_STEPS" --warmup "$LMKIT_GPU_BENCH_WARMUP" --repeats "$LMKIT_GPU_BENCH_REPEATS" "${config_args[@]}"
      ;;
    sharing)
      size=ptb
      [ "$LMKIT_GPU_DEVICE" = cpu ] && size=tiny
      LMKIT="$build/lmkit" bash scripts/bench_sharing.sh --device "$LMKIT_GPU_DEVICE" --size "$size" --k "$LMKIT_GPU_SHARING_K" \
        --steps "$LMKIT_GPU_BENCH_STEPS" --warmup "$LMKIT_GPU_BENCH_WARMUP" --cells-per-slot 1
      ;;
    rank)
      "$build/lmkit" run scripts/bench_rank.lua --set device="$LMKIT_GPU_DEVICE" --set threads="$LMKIT_GPU_CORES" \
        --set contexts="$LMKIT_GPU_RANK_CONTEXTS"
      ;;
    cpu_suite)
      left=$(( LMKIT_GPU_DEADLINE - $(date +%s) - 15 ))
      # --stop-time ends ctest itself before the deadline, so that its summary is still written.
      # Not the Slurm test (no Slurm there) nor the Debian package's (it requires a package that
      # depends on Debian's libtorch; Torch here is PyTorch's).
      ctest --test-dir "$build" -LE 'gpu|package' -E batch_slurm --output-on-failure -j "$LMKIT_GPU_CORES" --timeout 300 \
        --stop-time "$(date -d "+${left} seconds" +%H:%M:%S)"
      ;;
    *) echo "run_on_gpu.sh: unknown step '$step'" >&2; exit 2 ;;
  esac
  exit 0
fi

# --- the driver -------------------------------------------------------------------------------
# The rank timing before the benchmarks: one short run for one target, while the benchmarks take
# whatever time is left, configuration by configuration.
all_steps=(facts configure build doctor gpu_tests rank bench heads sharing cpu_suite)
steps=("${all_steps[@]}")
budget=540 build_dir=build-gpu
export LMKIT_GPU_BENCH_STEPS=200 LMKIT_GPU_BENCH_WARMUP=20 LMKIT_GPU_BENCH_REPEATS=1 LMKIT_GPU_DEVICE=cuda
export LMKIT_GPU_RANK_CONTEXTS=82430 LMKIT_GPU_PYTHON=${PYTHON:-python3} LMKIT_GPU_SHARING_K="1 2 4 8"
bench_configs=() heads_configs=()
out=${LMKIT_GPU_OUT:-}
while [ $# -gt 0 ]; do
  case $1 in
    --quick) steps=(facts configure build doctor gpu_tests) ;;
    --only) IFS=, read -r -a steps <<<"$2"; shift ;;
    --budget) budget=$2; shift ;;
    --bench-steps) LMKIT_GPU_BENCH_STEPS=$2; shift ;;
    --bench-warmup) LMKIT_GPU_BENCH_WARMUP=$2; shift ;;
    --bench-repeats) LMKIT_GPU_BENCH_REPEATS=$2; shift ;;
    --bench-config) bench_configs+=("$2"); shift ;;
    --heads-config) heads_configs+=("$2"); shift ;;
    --sharing-k) LMKIT_GPU_SHARING_K=$2; shift ;;
    --rank-contexts) LMKIT_GPU_RANK_CONTEXTS=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --device) LMKIT_GPU_DEVICE=$2; shift ;;
    --out) out=$2; shift ;;
    --out=?*) out=${1#--out=} ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "run_on_gpu.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
# The issue's workloads that the training benchmarks express: "SIZE HEAD [BSZ]".
[ ${#bench_configs[@]} -gt 0 ] || bench_configs=("ptb softmax" "ptb mos" "wt2 mos" "wt2 softmax 15")
LMKIT_GPU_BENCH_CONFIGS=$(IFS=';'; echo "${bench_configs[*]}")
export LMKIT_GPU_BENCH_CONFIGS
LMKIT_GPU_HEADS_CONFIGS=$(IFS=';'; echo "${heads_configs[*]}")
export LMKIT_GPU_HEADS_CONFIGS
for step in "${steps[@]}"; do
  [[ " ${all_steps[*]} " == *" $step "* ]] || { echo "run_on_gpu.sh: unknown step '$step' (${all_steps[*]})" >&2; exit 2; }
done

# The output folder: --out, else LMKIT_GPU_OUT, else gpu-out in the repository root (ignored by git).
if [ -z "$out" ]; then
  out=$root/gpu-out
elif [[ $out != /* ]]; then
  out=$caller_dir/$out
fi
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
export LMKIT_GPU_DEADLINE=$(( $(date +%s) + budget ))
export LMKIT_GPU_BUILD=$root/$build_dir
[[ $build_dir = /* ]] && LMKIT_GPU_BUILD=$build_dir
export LMKIT_GPU_ORIGINAL_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} LMKIT_GPU_ORIGINAL_PATH=$PATH
# All cores: nproc obeys OMP_NUM_THREADS, which an image may set.
LMKIT_GPU_CORES=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
export LMKIT_GPU_CORES
export PYTHONUNBUFFERED=1

results=()  # "| step | seconds | status |" rows
failed_logs=()
write_results() {
  {
    echo "# lmkit on a GPU machine: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo
    echo "| step | seconds | status |"
    echo "|---|---|---|"
    printf '%s\n' "${results[@]}"
    if [ -f "$out/logs/bench.log" ]; then
      echo; echo "## Benchmarks (scripts/bench.sh --device $LMKIT_GPU_DEVICE: lmkit.train, lmkit's Lua loop, the PyTorch yardstick)"; echo
      sed -n '/^== all configurations/,$p' "$out/logs/bench.log" | tail -n +2
      echo; echo '```'; grep -E '^(\{|machine:|versions:)' "$out/logs/bench.log" || true; echo '```'
    fi
    if [ -f "$out/logs/heads.log" ]; then
      echo; echo "## Each head against lmkit's Softmax (scripts/bench_heads.sh --device $LMKIT_GPU_DEVICE)"; echo
      grep '^|' "$out/logs/heads.log" || true
    fi
    if [ -f "$out/logs/sharing.log" ]; then
      echo; echo "## A grid's cells per hour with K tasks per GPU (scripts/bench_sharing.sh)"; echo
      grep -E '^(\||cells:)' "$out/logs/sharing.log" || true
    fi
    if [ -f "$out/logs/rank.log" ]; then
      echo; echo "## logP matrix + Press rank (scripts/bench_rank.lua)"; echo
      echo '```'; tail -3 "$out/logs/rank.log"; echo '```'
    fi
    for log in "${failed_logs[@]}"; do
      echo; echo "## Tail of $(basename "$log")"; echo; echo '```'; tail -40 "$log"; echo '```'
    done
  } >"$out/results.md"
}

# The carried dependencies once, here, so that every step sees the same PATH and LD_LIBRARY_PATH.
# Its log joins the output folder only when it failed: the folder keeps to its three files.
carried_ok=yes carried_log=$(mktemp)
carried_start=$(date +%s)
# shellcheck source=carried_deps.sh
source "$root/scripts/gpu/carried_deps.sh" >"$carried_log" 2>&1 || carried_ok=no
results+=("| unpack carried dependencies | $(( $(date +%s) - carried_start )) | $([ $carried_ok = yes ] && echo "ok (cmake/ninja: $LMKIT_DEPS_TOOLS)" || echo failed) |")

run_step() {
  local step=$1 log cap start rc=0 tenths seconds status
  log=$out/logs/$step.log
  [ "$step" = facts ] && log=$out/machine.txt
  cap=$(( LMKIT_GPU_DEADLINE - $(date +%s) ))
  if [ "$cap" -lt 20 ]; then
    results+=("| $step | 0 | skipped: the budget is spent |"); write_results; return 1
  fi
  echo "== $step (at most ${cap}s)"
  start=$(date +%s%N)
  timeout --kill-after=10 "$cap" bash "$self" --step "$step" >"$log" 2>&1 || rc=$?
  tenths=$(( ($(date +%s%N) - start) / 100000000 ))
  seconds=$(( tenths / 10 )).$(( tenths % 10 ))
  case $rc in
    0) status=ok ;;
    124|137) status="timed out (budget)" ;;
    *) status="failed (exit $rc)" ;;
  esac
  if [ "$step" = cpu_suite ] && grep -q "stop time has been passed" "$log"; then
    status="cut at the deadline: $(grep -oE '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1)"
  fi
  [ $rc = 0 ] || { failed_logs+=("$log"); tail -15 "$log"; }
  results+=("| $step | $seconds | $status |")
  write_results
  echo "   $status in ${seconds}s"
  return $rc
}

if [ $carried_ok = no ]; then
  cp "$carried_log" "$out/logs/carried_deps.log"
  cat "$carried_log"
  failed_logs+=("$out/logs/carried_deps.log")
fi
built=unknown  # "no" once configure or build failed: the later steps would only repeat that failure
for step in "${steps[@]}"; do
  if [ "$step" != facts ] && { [ $carried_ok = no ] || [ $built = no ]; }; then
    results+=("| $step | 0 | skipped: no build |"); write_results; continue
  fi
  if run_step "$step"; then
    [ "$step" = build ] && built=yes
  else
    case $step in configure|build) built=no ;; esac
  fi
done

write_results
tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$out/logs"
echo; cat "$out/results.md"
echo; echo "run_on_gpu.sh: the results are in $out (machine.txt, results.md, logs.tar.gz)"

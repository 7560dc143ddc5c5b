#!/usr/bin/env bash
# Builds, tests and benchmarks lmkit on an offline GPU node: a machine with CUDA (nvcc) and PyTorch
# 2.x but no apt and no internet. Run it from the root of the repository copied to the node, beside
# the dependencies fetched on a connected Debian 12 machine by scripts/gpu/fetch_debs.sh
# (.gpu-deps/carry/, or the unpacked .gpu-deps/prefix and .gpu-deps/tools; scripts/gpu/README.md).
# It records what the node has, configures lmkit against the Torch inside that PyTorch and the
# carried dependencies, builds with all cores the `lmkit` executable first and runs `lmkit doctor`,
# then the test executable and runs the GPU tests (a crashed or failed one is rerun under gdb or
# cuda-gdb and compute-sanitizer), counts cuDNN's RNN weight warnings in their logs, builds the rest,
# and runs the logP-rank timing, the GPU benchmarks (against the PyTorch yardstick, against the
# original research code when its folders are given, then each head against lmkit's Softmax) and the
# CPU suite. Every step is timed under one deadline and may fail
# without stopping the next ones, except those that need what a failed step should have built.
# Each step has a cap (a table below, --cap STEP=SECONDS) and gets the smaller of its cap and what is
# left of the budget; the whole run, packing the logs included, ends within --budget. results.md is
# rewritten as each step starts (its row says it is running) and as it ends (its result line goes to
# stderr too), so a run cut off by the node's time limit still shows what finished and where it was
# cut (results.md and logs/ in the output folder too). --dry-run prints that plan without running
# anything (no GPU, Torch or build needed) and fails when the caps do not fit the budget.
#
#   bash scripts/gpu/run_on_gpu.sh --quick     # facts, configure, lmkit + doctor, GPU tests (+ diagnose): a first probe
#   bash scripts/gpu/run_on_gpu.sh             # also the rank timing, the benchmarks and the CPU suite
#   bash scripts/gpu/run_on_gpu.sh --only configure,build,cpu_suite   # chosen steps (an existing build is reused)
#   bash scripts/gpu/run_on_gpu.sh --quick --out ~/lmkit-results/node7
#   bash scripts/gpu/run_on_gpu.sh --reference-awd ../awd-lstm-lm --reference-mos ../mos   # also the original code
#   bash scripts/gpu/run_on_gpu.sh --budget 560 --only facts,configure,build_lmkit --if-time doctor --dry-run
#
# Steps, in order: facts configure build_lmkit doctor build_tests gpu_tests diagnose warnings
#   determinism graphs build rank bench reference heads sharing cpu_suite (--quick: up to build): the
#   checks and the graphs' verdict before the benchmarks. build_lmkit builds the `lmkit`
#   executable alone, build_tests the GoogleTest executable that holds the GPU tests, build the rest;
#   diagnose reruns each GPU test that crashed, failed or was cut off, as one GoogleTest case, under
#   gdb (else cuda-gdb: `-batch -ex run -ex 'thread apply all bt 15'`) and `compute-sanitizer --tool
#   memcheck`, each capped by --diagnose-cap; warnings counts cuDNN's "not part of single contiguous
#   chunk of memory" in the logs of doctor, gpu_tests and cpu_suite that ran before it in this run
#   (a count above 0 fails the step); determinism
#   trains two runs from one seed per fused kernel's head through the lmkit executable
#   (scripts/gpu/determinism_check.lua, LMKIT_DETERMINISTIC=1), with CUDA graphs off and on, each run
#   capped at half the step's time; graphs times
#   the PyTorch yardstick's step eager and replayed as one captured CUDA graph (what graph replay
#   buys that step, or the op that refused capture), then lmkit.train with cuda_graphs off and
#   auto (when lmkit is built); reference
#   measures lmkit.train against the original research code (scripts/bench_reference.sh: AWD-LSTM
#   Softmax and MoS K=15 at the sizes of --reference-sizes), skipped when neither folder below is given.
# Options: --budget SECONDS (default: the sum of the plan's caps): the whole run's deadline, packing
#            the logs included; each step gets what is left of it, up to its cap, less the 5 s a
#            step stopped at its limit may take to end and the 2 s kept for packing;
#          --cap STEP=SECONDS (repeatable, or STEP=S,STEP=S): a step's cap instead of the table's
#            (step_caps below: what the step took on the H100 visit's 16 cores, with a margin);
#          --if-time STEPS: steps run after the others only while time is left, each given what is
#            left up to its cap; they are not counted in the plan's sum (a build that ends early
#            leaves its time to them);
#          --dry-run (or --plan): print the steps in order with their caps and the sum, and exit:
#            1 when the sum exceeds --budget; a real run prints the same plan first and warns
#            instead. The sum includes a fixed 10 s that no cap covers: unpacking the prefix and
#            the steps' starts (3 s), the last step's 5 s to end once stopped, packing the logs (2 s);
#          --bench-steps N (200) --bench-warmup N (20) --bench-repeats R (1), each at least 1: timed
#          steps per program, alternating lmkit.train, lmkit's Lua loop and the PyTorch yardstick R
#          times per configuration;
#          --bench-config "SIZE HEAD [BSZ]" (repeatable; default: ptb softmax,
#            ptb mos, wt2 mos, wt2 softmax 15: the workloads with a PyTorch yardstick);
#          --heads-config "SIZE HEAD [BSZ]" (repeatable; default: scripts/bench_heads.sh's on a GPU:
#            SigSoftmax, GSS and LMS-PLIF at PTB sizes, LMS-PLIF, Mixtape and MoS at WT2 sizes,
#            each beside Softmax at the same batch; the steps, warm-up and repeats are --bench-*'s);
#          --sharing-k "LIST" ("1 2 4 8"): tasks per GPU for the grid's cells per hour
#            (scripts/bench_sharing.sh: PTB-size cells of --bench-steps steps, one round per K);
#          --reference-awd DIR, --reference-mos DIR: the original code's folders (git clones of
#            salesforce/awd-lstm-lm and zihangdai/mos, only read; a relative DIR is taken from the
#            folder the script is run from); the reference step's timed batches and warm-up are --bench-*'s;
#          --reference-sizes LIST (ptb): the reference step's sizes, ptb and/or wt2, in order (e.g.
#            ptb,wt2), the step's time shared between them;
#          --rank-contexts N (82430, PTB test); --build-dir DIR (build-gpu, under the repository root);
#          --out DIR: the output folder (default: $LMKIT_GPU_OUT, else ./gpu-out in the repository
#            root; a relative DIR is taken from the folder the script is run from);
#          --test-timeout SECONDS (300): ctest's limit per test (gpu_tests, cpu_suite), lowered to
#            what is left of the step;
#          --diagnose-tools LIST (gdb,memcheck): the reruns of diagnose, in this order: ab (the test
#            again with LMKIT_TEST_QUICK_EXIT=1, which ends the process with std::_Exit right after
#            the tests, and again with lmkit's malloc settings as GLIBC_TUNABLES: a crash that the
#            quick exit removes is in the process's teardown, one that the malloc settings remove
#            depends on glibc's malloc settings), gdb (else cuda-gdb) and/or memcheck
#            (compute-sanitizer); `--diagnose-tools ab` or `gdb` for a short visit;
#          --diagnose-cap SECONDS (300): the most each rerun of diagnose may take, within the
#            diagnose step's own cap (--cap diagnose=SECONDS: raise both for long reruns);
#          --diagnose-max N (0: all): diagnose the first N tests that did not pass (crashes first);
#          --graph-config "SIZE HEAD" (repeatable; default: ptb softmax, ptb mos): graphs' workloads;
#          --cxx-standard N: the C++ standard to build with (default: what the Torch's headers
#            require, at least 17; scripts/gpu/configure.sh detects it);
#          --device cpu: a rehearsal of this driver on a machine without a GPU (CUDA off, CPU benchmarks).
# PYTHON (default python3) is the Python whose torch lmkit is built against and the yardstick and the
# original code run on.
# Numbers are whole, without leading zeros, and at least 1 (--diagnose-max: 0 or more).
# The output folder receives machine.txt (the node's facts), results.md (the table of steps, the
# benchmark table, the tail of each failed step's log) and logs.tar.gz (every step's full log):
# three files to copy back and attach to a report. A row "running since HH:MM:SS UTC" in results.md
# names the step that was running when the run was killed outright.

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
  write_machine_python() {  # /tmp/lmkit-machine-python: the machine's python3, for the benchmarks' PYTHON
    printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$LMKIT_GPU_ORIGINAL_LD_LIBRARY_PATH" \
      "$(command -v "$LMKIT_GPU_PYTHON")" >/tmp/lmkit-machine-python
    chmod +x /tmp/lmkit-machine-python
  }
  step_left() {  # seconds left of this step: its cap, or what was left of the budget when it began
    echo $(( LMKIT_GPU_STEP_DEADLINE - $(date +%s) ))
  }
  # ctest_limits MARGIN: --timeout and --stop-time for a ctest run that must end MARGIN seconds
  # before this step does, so that ctest writes its summary (and names the tests it cut) before the
  # step's own timeout would end it without one. Each test gets --test-timeout, or less when less is left.
  ctest_limits() {
    local left=$(( $(step_left) - $1 )) per_test=$LMKIT_GPU_TEST_TIMEOUT
    [ "$left" -ge 10 ] || left=10
    [ "$per_test" -le "$left" ] || per_test=$left
    echo "--timeout $per_test --stop-time $(date -d "+${left} seconds" +%H:%M:%S)"
  }
  join() {  # join SEPARATOR WORD...: the words with the separator between them
    local separator=$1 joined=$2; shift 2
    local word
    for word in "$@"; do joined+=$separator$word; done
    printf '%s' "$joined"
  }
  # diagnose: each GPU test that did not pass in this run's gpu_tests (or, without that log, in a
  # ctest -L gpu run of its own), rerun alone as one GoogleTest case under a debugger and under
  # compute-sanitizer, each capped; their logs go to the output folder's logs/diagnose/.
  diagnose() {
    set +e
    local tests_log=$LMKIT_GPU_OUT_DIR/logs/gpu_tests.log dir=$LMKIT_GPU_OUT_DIR/logs/diagnose
    mkdir -p "$dir"
    if [ ! -s "$tests_log" ]; then
      echo "== no gpu_tests log in this run: ctest -L gpu first"
      tests_log=$dir/ctest.log
      # shellcheck disable=SC2046  # ctest_limits prints options, split on purpose
      ctest --test-dir "$build" -L gpu --output-on-failure $(ctest_limits 30) >"$tests_log" 2>&1
    fi
    # "name<TAB>status" of each test that did not pass (a skipped one did: no GPU); one that started
    # and never ended was cut off.
    local broken=() limit=${LMKIT_GPU_DIAGNOSE_MAX:-0}
    mapfile -t broken < <(awk '
      /^ +Start +[0-9]+: / { name = $3; if (!(name in state)) order[++n] = name; state[name] = "cut off"; next }
      /^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: / {
        name = $4; line = $0
        sub(/^.*#[0-9]+: +[^ ]+ +\.* */, "", line); sub(/ +[0-9.]+ sec.*$/, "", line); sub(/^\*\*\*/, "", line)
        if (!(name in state)) order[++n] = name
        state[name] = line
      }
      END { for (i = 1; i <= n; i++) if (state[order[i]] !~ /^(Passed|Skipped|Disabled)$/) print order[i] "\t" state[order[i]] }
    ' "$tests_log" | sort -t$'\t' -k2,2 -s | awk -F'\t' '$2 != "Failed" { print } $2 == "Failed" { failed[++m] = $0 } END { for (i = 1; i <= m; i++) print failed[i] }')
    if [ ${#broken[@]} -eq 0 ]; then
      echo "result: every GPU test passed, nothing to diagnose"
      return 0
    fi
    echo "== GPU tests to diagnose (crashes first):"; printf '  %s\n' "${broken[@]}"
    if [ "$limit" -gt 0 ] && [ ${#broken[@]} -gt "$limit" ]; then
      echo "(the first $limit of them: --diagnose-max $limit)"
      broken=("${broken[@]:0:$limit}")
    fi

    # The tools: gdb, else cuda-gdb (the same arguments), and compute-sanitizer, from PATH or CUDA;
    # only those --diagnose-tools names (gdb alone for a short visit: memcheck runs a test ~10x slower).
    local cuda_bin=${CUDA_HOME:-/usr/local/cuda}/bin debugger="" sanitizer="" tool wanted=()
    [[ ,$LMKIT_GPU_DIAGNOSE_TOOLS, == *,ab,* ]] && wanted+=(ab)
    [[ ,$LMKIT_GPU_DIAGNOSE_TOOLS, == *,gdb,* ]] && wanted+=(debugger)
    [[ ,$LMKIT_GPU_DIAGNOSE_TOOLS, == *,memcheck,* ]] && wanted+=(sanitizer)
    for tool in gdb cuda-gdb "$cuda_bin/cuda-gdb" /usr/local/cuda/bin/cuda-gdb; do
      if command -v "$tool" >/dev/null 2>&1; then debugger=$(command -v "$tool"); break; fi
    done
    for tool in compute-sanitizer "$cuda_bin/compute-sanitizer" /usr/local/cuda/bin/compute-sanitizer; do
      if command -v "$tool" >/dev/null 2>&1; then sanitizer=$(command -v "$tool"); break; fi
    done
    echo "debugger: ${debugger:-none (neither gdb nor cuda-gdb)}; sanitizer: ${sanitizer:-none (no compute-sanitizer)};" \
      "rerun under: ${wanted[*]} (--diagnose-tools $LMKIT_GPU_DIAGNOSE_TOOLS)"

    # Each test's command, environment and folder from CTest itself: one small script per test that
    # runs `WRAPPER... COMMAND` there (WRAPPER: the debugger or the sanitizer with its arguments).
    ctest --test-dir "$build" -L gpu --show-only=json-v1 >"$dir/tests.json" 2>"$dir/tests.json.err"
    local names=() entry
    for entry in "${broken[@]}"; do names+=("${entry%%$'\t'*}"); done
    machine_python - "$dir/tests.json" "$dir" "${names[@]}" <<'PY' || { echo "result: could not read ctest --show-only=json-v1 ($dir/tests.json.err)"; return 1; }
import json, os, shlex, sys
tests = {t["name"]: t for t in json.load(open(sys.argv[1]))["tests"]}
for name in sys.argv[3:]:
    test = tests.get(name)
    path = os.path.join(sys.argv[2], name.replace("/", "_") + ".rerun.sh")  # TEST_P names hold slashes
    if test is None or not test.get("command"):
        if os.path.exists(path): os.remove(path)
        continue
    props = {p["name"]: p["value"] for p in test.get("properties", [])}
    env = props.get("ENVIRONMENT", [])
    env = [env] if isinstance(env, str) else env
    with open(path, "w") as out:
        out.write("#!/bin/sh\n# " + name + ": its CTest command, environment and folder, behind \"$@\"\n")
        out.write("cd " + shlex.quote(props.get("WORKING_DIRECTORY", os.getcwd())) + " || exit 1\n")
        out.write("exec env " + " ".join(shlex.quote(e) for e in env) + ' "$@" ' +
                  " ".join(shlex.quote(a) for a in test["command"]) + "\n")
PY

    local summaries=() name file status rerun cap left rc gdb_log check_log found signal frame errors no_caching
    for entry in "${broken[@]}"; do
      name=${entry%%$'\t'*} status=${entry#*$'\t'}
      file=${name//\//_}
      rerun=$dir/$file.rerun.sh
      if [ ! -f "$rerun" ]; then summaries+=("$name ($status): not in ctest -L gpu --show-only"); continue; fi
      found=()
      for tool in "${wanted[@]}"; do
        # Each rerun within the step's own time, 5 s kept for the summary and results.md's lines.
        left=$(( $(step_left) - 5 ))
        cap=$LMKIT_GPU_DIAGNOSE_CAP
        [ "$left" -lt "$cap" ] && cap=$left
        if [ "$cap" -lt 10 ]; then found+=("$tool: no time left in the step's cap"); continue; fi
        if [ "$tool" = ab ]; then
          # Two reruns without a tool, each at most half of the cap: the crash with the teardown
          # skipped, and with the malloc settings the lmkit executable uses (host_memory.cpp's
          # mallopt calls; the test program keeps glibc's defaults).
          local variant variant_cap outcome ab_log outcomes=() milestone
          for variant in quick_exit lmkit_malloc; do
            variant_cap=$(( cap / 2 ))
            ab_log=$dir/$file.$variant.log
            echo "== $name ($status): again with $variant, at most ${variant_cap}s -> logs/diagnose/${ab_log##*/}"
            if [ "$variant" = quick_exit ]; then
              timeout --kill-after=5 "$variant_cap" sh "$rerun" env LMKIT_TEST_QUICK_EXIT=1 LMKIT_TEST_MILESTONES=1 >"$ab_log" 2>&1
            else
              timeout --kill-after=5 "$variant_cap" sh "$rerun" env LMKIT_TEST_MILESTONES=1 \
                GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824:glibc.malloc.top_pad=67108864 \
                >"$ab_log" 2>&1
            fi
            rc=$?
            case $rc in
              0) outcome="passed" ;;
              124|137) outcome="cut at ${variant_cap}s" ;;
              *) if [ "$rc" -gt 128 ]; then outcome="signal $((rc - 128)) (exit $rc)"; else outcome="exit $rc"; fi ;;
            esac
            # The last milestone reached: where a crash came.
            milestone=$(grep -oE '^\[ milestone \] .*' "$ab_log" | tail -1 | cut -c15-90)
            outcomes+=("$variant: $outcome${milestone:+ (last milestone: $milestone)}")
            grep -E '^\[ milestone \]|^\[  (FAILED|PASSED)  \]' "$ab_log" | tail -4
          done
          found+=("ab: $(join ', ' "${outcomes[@]}")")
        elif [ "$tool" = debugger ]; then
          [ -n "$debugger" ] || { found+=("no gdb or cuda-gdb"); continue; }
          gdb_log=$dir/$file.gdb.log
          echo "== $name ($status): ${debugger##*/} -batch, at most ${cap}s -> logs/diagnose/${gdb_log##*/}"
          # Besides the backtraces, the words on top of the stopped thread's stack, as symbols: when
          # the program counter is 0 (a call through a null pointer) or the unwinder gives up, the
          # first of them that names a function is the return address, the caller.
          # Torch's caching allocator stays on: under PYTORCH_NO_CUDA_MEMORY_CACHING every CUDA graph
          # capture fails by Torch's design, which would hide a graph test's own failure (unset here
          # even when the node's environment sets it).
          # shellcheck disable=SC2016  # $sp is gdb's, not the shell's
          env -u PYTORCH_NO_CUDA_MEMORY_CACHING timeout --kill-after=5 "$cap" sh "$rerun" "$debugger" -batch -ex 'set pagination off' \
            -ex 'set print thread-events off' -ex 'set print asm-demangle on' -ex run -ex 'echo == stack words\n' -ex 'x/24a $sp' \
            -ex 'echo == end of stack words\n' -ex 'thread apply all bt 15' --args >"$gdb_log" 2>&1
          rc=$?
          signal=$(grep -m1 -oE 'received signal SIG[A-Z0-9]+' "$gdb_log" | sed 's/received signal //')
          if [ -n "$signal" ]; then
            # The first frame after the signal: where it stopped.
            frame=$(sed -n '/received signal/,$p' "$gdb_log" | grep -m1 -E '^#0 ' |
              sed -E 's/^#0 +(0x[0-9a-f]+ in )?//; s/ \(.*//')
            caller=""
            if [ -z "$frame" ] || [ "$frame" = "??" ]; then
              caller=$(sed -n '/^== stack words/,/^== end of stack words/p' "$gdb_log" | grep -oE '<[^>]+>' | head -1)
            fi
            found+=("${debugger##*/}: $signal in ${frame:-?}${caller:+, called from $caller (first function word on the stack)}")
            sed -n '/^== stack words/,/^== end of stack words/p' "$gdb_log" | head -26
            sed -n '/received signal/,/^$/p' "$gdb_log" | head -3
            grep -m1 -B1 -A16 -E '^#0 ' <(sed -n '/received signal/,$p' "$gdb_log")
          elif [ $rc = 124 ] || [ $rc = 137 ]; then
            found+=("${debugger##*/}: still running after ${cap}s")
          elif grep -q 'exited normally' "$gdb_log"; then
            found+=("${debugger##*/}: passed this time")
          else
            found+=("${debugger##*/}: $(grep -m1 -oE 'exited with code [0-9]+' "$gdb_log" || echo "exit $rc")")
          fi
        else
          [ -n "$sanitizer" ] || { found+=("no compute-sanitizer"); continue; }
          check_log=$dir/$file.memcheck.log
          echo "== $name ($status): compute-sanitizer --tool memcheck, at most ${cap}s -> logs/diagnose/${check_log##*/}"
          # Without Torch's caching allocator memcheck sees each allocation's own bounds, so an
          # overrun inside a cached block is caught; but no CUDA graph can be captured without it
          # (Torch refuses by design), so a test that captures graphs keeps the allocator and
          # memcheck sees the cached blocks' bounds only.
          no_caching=(PYTORCH_NO_CUDA_MEMORY_CACHING=1)
          [[ $name == *CudaGraph* ]] && no_caching=(-u PYTORCH_NO_CUDA_MEMORY_CACHING)
          env "${no_caching[@]}" timeout --kill-after=5 "$cap" sh "$rerun" "$sanitizer" --tool memcheck \
            --print-limit 50 >"$check_log" 2>&1
          rc=$?
          errors=$(grep -m1 -oE 'ERROR SUMMARY: [0-9]+ errors?' "$check_log" | sed 's/ERROR SUMMARY: //')
          if [ $rc = 124 ] || [ $rc = 137 ]; then
            found+=("memcheck: cut at ${cap}s${errors:+, $errors so far}")
          else
            found+=("memcheck: ${errors:-no summary (exit $rc)}")
          fi
          grep -m5 -E '^=+ (Invalid|Program hit|Saved host backtrace|    at )' "$check_log"
        fi
      done
      summaries+=("$name ($status): $(join '; ' "${found[@]}")")
    done
    printf '%s\n' "${summaries[@]}"
    echo "result: $(join ' | ' "${summaries[@]}")"
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
      # The C++ standard: --cxx-standard, else configure.sh reads what the Torch's headers require.
      standard=()
      [ -z "$LMKIT_GPU_CXX_STANDARD" ] || standard=(-DCMAKE_CXX_STANDARD="$LMKIT_GPU_CXX_STANDARD")
      # No ccache: the node's own (its version, its cache folder, that folder's permissions) is not
      # lmkit's to rely on, and an empty cache only costs on a first build.
      bash scripts/gpu/configure.sh "$build" -DLMKIT_CUDA=$cuda -DLMKIT_CUDA_ARCHITECTURES="$arch" \
        -DLMKIT_BUILD_TESTS=ON -DLMKIT_CCACHE=OFF -DPython3_EXECUTABLE="$(command -v "$LMKIT_GPU_PYTHON")" "${standard[@]}"
      echo "result: $(grep -E '^configure\.sh: (C\+\+ standard |protobuf:)' "$LMKIT_GPU_OUT_DIR/logs/configure.log" |
        sed -E 's/^configure\.sh: //; s/ \(.*//' | paste -sd ';' - | sed 's/;/; /g')"
      ;;
    build_lmkit)
      # The executable alone first: the doctor can run before the tests and the rest are compiled.
      # -k 0: past a failed file, the others are still compiled, so one run names every error.
      cmake --build "$build" -j "$LMKIT_GPU_CORES" --target lmkit -- -k 0
      "$build/lmkit" --version
      echo 'print("lmkit.device(): " .. lmkit.device())' >"$build/print_device.lua"
      "$build/lmkit" run "$build/print_device.lua"
      echo "== where lmkit's Torch, CUDA and carried libraries load from"
      ldd "$build/lmkit" | grep -E 'torch|c10|cud|nv|fmt|lua|readline|lapack|blas|gfortran|tinfo|not found' | sed 's/ (0x.*//'
      ;;
    build_tests)
      # The GoogleTest executable, which holds the GPU tests (tests/CMakeLists.txt: label gpu).
      cmake --build "$build" -j "$LMKIT_GPU_CORES" --target lmkit_tests -- -k 0
      ctest --test-dir "$build" -L gpu -N
      echo "result: $(ctest --test-dir "$build" -L gpu -N | grep -oE 'Total Tests: [0-9]+' | sed 's/Total Tests: //') GPU tests"
      ;;
    build)
      cmake --build "$build" -j "$LMKIT_GPU_CORES" -- -k 0
      ;;
    doctor)
      # The user's first check on a new machine: versions, each fused kernel against ATen, a
      # 20-step training run on the GPU against the CPU, a verdict (exit 0 when all passed).
      "$build/lmkit" doctor --device "$LMKIT_GPU_DEVICE"
      ;;
    gpu_tests)
      # Four at a time: each is its own process on the one GPU (no test depends on another's
      # timing or memory), and most of a test's time is the process's Torch and CUDA start.
      # shellcheck disable=SC2046  # ctest_limits prints options, split on purpose
      ctest --test-dir "$build" -L gpu --output-on-failure -j 4 $(ctest_limits 5)
      ;;
    diagnose)
      diagnose
      ;;
    warnings)
      # cuDNN's warning for an LSTM whose weights are not one flat buffer (issue 36): once per call.
      text="not part of single contiguous chunk of memory"
      total=0 counts=()
      for name in doctor gpu_tests cpu_suite; do
        log=$LMKIT_GPU_OUT_DIR/logs/$name.log
        [ -f "$log" ] || continue
        count=$(grep -cF "$text" "$log" || true)
        counts+=("$name $count") total=$((total + count))
        grep -m1 -F "$text" "$log" | cut -c1-200 | sed "s/^/$name: /" || true
      done
      if [ ${#counts[@]} -eq 0 ]; then echo "result: no doctor or ctest log in this run"; exit 0; fi
      echo "result: $total cuDNN RNN weight warnings ($(join ', ' "${counts[@]}"))"
      [ "$total" = 0 ]
      ;;
    bench)
      # Each configuration on its own, so that a slow one or the deadline cuts the table short
      # instead of losing it. "SIZE HEAD [BSZ]": the issue's workloads that the scripts express.
      IFS=';' read -r -a configs <<<"$LMKIT_GPU_BENCH_CONFIGS"
      write_machine_python
      rows=() header=""
      for config in "${configs[@]}"; do
        left=$(step_left)
        if [ "$left" -lt 60 ]; then echo "== $config: skipped, ${left}s left"; continue; fi
        echo "== $config"
        table=$(LMKIT="$build/lmkit" PYTHON=/tmp/lmkit-machine-python timeout "$((left - 10))" \
          bash scripts/bench.sh --device "$LMKIT_GPU_DEVICE" --threads 4 --config "$config" --repeats "$LMKIT_GPU_BENCH_REPEATS" \
            --steps "$LMKIT_GPU_BENCH_STEPS" --warmup "$LMKIT_GPU_BENCH_WARMUP" --ptb-steps "$LMKIT_GPU_BENCH_STEPS" --ptb-warmup "$LMKIT_GPU_BENCH_WARMUP") || { echo "$table"; echo "== $config: failed"; continue; }
        echo "$table"
        header=$(grep -m1 -A1 '^| config' <<<"$table" || true)
        rows+=("$(tail -1 <<<"$table")")
      done
      echo; echo "== all configurations"
      [ ${#rows[@]} -eq 0 ] || { echo "$header"; printf '%s\n' "${rows[@]}"; }
      ;;
    determinism)
      # Two runs from one seed per fused kernel's head through the lmkit executable (not the test
      # program), with LMKIT_DETERMINISTIC=1: bit-identical numbers and a clean exit (a crash after
      # "end of script" is in the process's exit). Once with CUDA graphs off and once with them on
      # (rehearsed on a CPU): the same numbers both times. Each run has a cap of its own, half of
      # what is left of the step for the first, the rest for the second: a run that hangs cannot
      # take the other's time, and the verdict line is still written.
      set +e  # each run's exit status is a result, not the end of the step
      graphed=auto
      [ "$LMKIT_GPU_DEVICE" = cpu ] && graphed=rehearse
      verdicts=() runs_left=2
      for mode in off $graphed; do
        log=$LMKIT_GPU_OUT_DIR/logs/determinism_$mode.log
        rm -f "$log"  # an earlier --only run's numbers must not stand in for a run that did not happen
        cap=$(( ($(step_left) - 5) / runs_left )) runs_left=$((runs_left - 1))
        if [ "$cap" -lt 5 ]; then verdicts+=("cuda_graphs=$mode not run: no time left in the step's cap"); continue; fi
        echo "== cuda_graphs=$mode: at most ${cap}s"
        LMKIT_DETERMINISTIC=1 timeout --kill-after=3 "$cap" "$build/lmkit" run scripts/gpu/determinism_check.lua \
          --set device="$LMKIT_GPU_DEVICE" --set cuda_graphs="$mode" >"$log" 2>&1
        status=$?
        grep '^determinism_check:' "$log" | sed "s/^/cuda_graphs=$mode: /"
        ended=no
        grep -q '^determinism_check: end of script' "$log" && ended=yes
        if [ $status = 124 ] || [ $status = 137 ]; then
          verdicts+=("cuda_graphs=$mode cut at its cap of ${cap}s (script ended: $ended)")
        else
          verdicts+=("cuda_graphs=$mode exit $status (script ended: $ended)")
        fi
      done
      same=no
      if [ -s "$LMKIT_GPU_OUT_DIR/logs/determinism_off.log" ] &&
         diff <(grep ' run [ab]: ' "$LMKIT_GPU_OUT_DIR/logs/determinism_off.log") \
              <(grep ' run [ab]: ' "$LMKIT_GPU_OUT_DIR/logs/determinism_$graphed.log") >/dev/null; then
        same=yes
      fi
      echo "result: $(join '; ' "${verdicts[@]}"); graphs give the eager numbers: $same"
      # The step fails unless both runs ended cleanly with the same numbers (under set +e, the
      # verdict must be this step's exit status, not a test whose failure is ignored).
      if [ "$same" = yes ] && [[ "${verdicts[*]}" != *"exit "[1-9]* ]] && [[ "${verdicts[*]}" != *"cut at"* ]] &&
         [[ "${verdicts[*]}" != *"not run"* ]]; then
        exit 0
      fi
      exit 1
      ;;
    graphs)
      # The yardstick's step eager, then captured once as a CUDA graph and replayed: how much of the
      # step is the host's launching (the lever for lmkit's own graphs, issue 37), or which op
      # refused capture. One line per workload: both JSON lines, then the ratio.
      if [ "$LMKIT_GPU_DEVICE" = cpu ]; then echo "result: skipped: a CUDA graph needs a GPU"; exit 0; fi
      IFS=';' read -r -a configs <<<"$LMKIT_GPU_GRAPH_CONFIGS"
      summary=()
      # Each program run gets an equal share of what is left of the step (the yardstick eager and
      # graphed, lmkit.train off and auto, per workload): one that ends early leaves its time to the
      # next, none takes the others'.
      runs_left=$(( ${#configs[@]} * 2 ))
      [ -x "$build/lmkit" ] && runs_left=$(( ${#configs[@]} * 4 ))
      run_cap() { cap=$(( ($(step_left) - 5) / runs_left )); runs_left=$((runs_left - 1)); }  # sets cap
      for config in "${configs[@]}"; do
        read -r size head <<<"$config"
        left=$(step_left)
        if [ "$left" -lt 20 ]; then echo "== $config: skipped, ${left}s left"; continue; fi
        lines=()
        for mode in "" --cuda-graph; do
          run_cap
          if [ "$cap" -lt 5 ]; then echo "$config${mode:+ $mode}: skipped, no time left in the step's cap"; lines+=(""); continue; fi
          line=$(timeout --kill-after=3 "$cap" env LD_LIBRARY_PATH="$LMKIT_GPU_ORIGINAL_LD_LIBRARY_PATH" "$LMKIT_GPU_PYTHON" \
            scripts/awd_lstm_reference.py --size "$size" --head "$head" --device cuda --threads 4 \
            --steps "$LMKIT_GPU_BENCH_STEPS" --warmup "$LMKIT_GPU_BENCH_WARMUP" $mode 2>&1 | tail -1) || true
          echo "$config${mode:+ $mode}: $line"
          lines+=("$line")
        done
        # lmkit.train with its own graphs off and on (when lmkit is built): random window lengths,
        # so a graph per length, each captured at its second use.
        if [ -x "$build/lmkit" ]; then
          for mode in off auto; do
            run_cap
            [ "$cap" -ge 5 ] || break
            line=$(timeout --kill-after=3 "$cap" "$build/lmkit" run scripts/bench_lmkit_train.lua --set size="$size" --set head="$head" \
              --set device=cuda --set threads=4 --set steps="$LMKIT_GPU_BENCH_STEPS" --set warmup="$LMKIT_GPU_BENCH_WARMUP" \
              --set cuda_graphs=$mode 2>&1 | tail -1) || true
            echo "$config lmkit.train cuda_graphs=$mode: $line"
            lines+=("$line")
          done
        fi
        ratio=$(machine_python -c 'import json, sys
def ratio(a, b, what):
    try:
        eager, graph = json.loads(a), json.loads(b)
        text = "%s eager %.2f ms, graph %.2f ms per step: %.2fx" % (what, eager["step_ms"], graph["step_ms"], eager["step_ms"] / graph["step_ms"])
        # lmkit.train says whether its graphs ran: a run that fell back to eager steps is no graph.
        if "graphs_replayed" in graph:
            text += " (graphs captured %d, replayed %d%s)" % (graph["graphs_captured"], graph["graphs_replayed"],
                ", eager because: " + graph["graphs_eager_because"][:300] if graph.get("graphs_eager_because") else "")
        return text
    except Exception:
        return "%s: no ratio (%s)" % (what, b[:200])
texts = sys.argv[1:] + [""] * 4
print(ratio(texts[0], texts[1], "yardstick") + ("; " + ratio(texts[2], texts[3], "lmkit.train") if texts[2] else ""))' "${lines[@]}")
        summary+=("$config: $ratio")
      done
      echo "result: $(join '; ' "${summary[@]}")"
      ;;
    reference)
      # lmkit.train against the original code (issue 37's table): each given folder's workload, the
      # original main.py and lmkit one after the other; a cap per program from what is left.
      write_machine_python
      reference_args=() programs=0
      [ -z "$LMKIT_GPU_REFERENCE_AWD" ] || { reference_args+=(--reference-awd "$LMKIT_GPU_REFERENCE_AWD"); programs=$((programs + 2)); }
      [ -z "$LMKIT_GPU_REFERENCE_MOS" ] || { reference_args+=(--reference-mos "$LMKIT_GPU_REFERENCE_MOS"); programs=$((programs + 2)); }
      [ "$programs" -gt 0 ] || { echo "result: skipped: no --reference-awd or --reference-mos given"; exit 0; }
      IFS=, read -r -a sizes <<<"$LMKIT_GPU_REFERENCE_SIZES"
      [ "$LMKIT_GPU_DEVICE" = cpu ] && sizes=(tiny)
      left=$(( $(step_left) - 20 ))
      cap=$(( left / (programs * ${#sizes[@]}) ))
      [ "$cap" -ge 30 ] || cap=30
      rc=0 ratios=()
      for size in "${sizes[@]}"; do
        echo "== reference, size $size"
        # Each size's own output, so that a size that ends early is not given another's ratios.
        size_log=$LMKIT_GPU_OUT_DIR/logs/reference-$size.out
        LMKIT="$build/lmkit" PYTHON=/tmp/lmkit-machine-python bash scripts/bench_reference.sh --device "$LMKIT_GPU_DEVICE" \
          --size "$size" --threads 4 --batches "$LMKIT_GPU_BENCH_STEPS" --warmup "$LMKIT_GPU_BENCH_WARMUP" --cap "$cap" \
          --work "$LMKIT_GPU_OUT_DIR/logs/reference-$size" "${reference_args[@]}" 2>&1 | tee "$size_log" || rc=$?  # (pipefail: its status)
        # Its logs (the original code's and lmkit's) travel in logs.tar.gz; the copies of the code,
        # the corpus and the runs' folders do not (none when it refused its arguments).
        if [ -d "$LMKIT_GPU_OUT_DIR/logs/reference-$size" ]; then
          find "$LMKIT_GPU_OUT_DIR/logs/reference-$size" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} + || true
        fi
        found=$(grep '^ratios: ' "$size_log" 2>/dev/null | tail -1 | cut -c9- || true)
        ratios+=("$size: ${found:-no ratios (see logs/reference-$size.out)}")
      done
      echo "result: $(join '; ' "${ratios[@]}")"
      exit $rc
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
      # --stop-time ends ctest itself before the step's cap, so that its summary is still written.
      # Not the Slurm test (no Slurm there) nor the Debian package's (it requires a package that
      # depends on Debian's libtorch; Torch here is PyTorch's).
      # shellcheck disable=SC2046  # ctest_limits prints options, split on purpose
      ctest --test-dir "$build" -LE 'gpu|package' -E batch_slurm --output-on-failure -j "$LMKIT_GPU_CORES" $(ctest_limits 15)
      ;;
    *) echo "run_on_gpu.sh: unknown step '$step'" >&2; exit 2 ;;
  esac
  exit 0
fi

# --- the driver -------------------------------------------------------------------------------
# What is most informative comes first: the doctor as soon as `lmkit` is built, the GPU tests (with
# diagnose and warnings) as soon as their executable is, before the rest of the build; then the
# verdict on CUDA graphs (determinism: graphs give the eager numbers; graphs: what they buy), and
# only then the rest of the build and the benchmarks. The rank timing before the other benchmarks:
# one short run for one target.
all_steps=(facts configure build_lmkit doctor build_tests gpu_tests diagnose warnings determinism graphs build rank bench reference heads sharing cpu_suite)
quick_steps=(facts configure build_lmkit doctor build_tests gpu_tests diagnose warnings determinism build)
# Each step's cap in seconds: it gets the smaller of its cap and what is left of --budget, so a step
# that hangs cannot take the next ones' time. The build steps' caps are what the H100 visit took on
# 16 cores (configure 18 s, `lmkit` 147 s, the test program 69 s) with about a quarter more; on a
# slower node raise them with --cap (a build cut at its cap goes on where it stopped in the next
# run: ninja keeps what was compiled). The benchmarks print each row as it is measured, so a cap
# that cuts one keeps the rows done.
declare -A step_caps=(
  [facts]=15 [configure]=35 [build_lmkit]=180 [doctor]=60 [build_tests]=90 [gpu_tests]=70
  [diagnose]=120 [warnings]=5 [determinism]=60 [graphs]=60 [build]=300 [rank]=60 [bench]=600
  [reference]=600 [heads]=600 [sharing]=300 [cpu_suite]=1200
)
# Seconds a plan keeps for what no cap covers, a fixed 10 in all (plan_overhead): unpacking the
# carried prefix before the first step and each step's start (3), the seconds a step stopped at its
# limit gets to end before SIGKILL (step_stop_grace: every step's limit leaves them before the
# steps' end), writing results.md and packing the logs after the last step (pack_seconds: the steps
# end that much before the budget's end). So a run that fits its plan gives every step its cap, and
# any run, packing included, ends within --budget.
step_stop_grace=5 pack_seconds=2
plan_overhead=$(( 3 + step_stop_grace + pack_seconds ))
steps=("${all_steps[@]}") optional_steps=() caps_given=() dry_run=no
budget="" build_dir=build-gpu
export LMKIT_GPU_BENCH_STEPS=200 LMKIT_GPU_BENCH_WARMUP=20 LMKIT_GPU_BENCH_REPEATS=1 LMKIT_GPU_DEVICE=cuda
export LMKIT_GPU_RANK_CONTEXTS=82430 LMKIT_GPU_PYTHON=${PYTHON:-python3} LMKIT_GPU_SHARING_K="1 2 4 8"
export LMKIT_GPU_DIAGNOSE_CAP=300 LMKIT_GPU_DIAGNOSE_MAX=0 LMKIT_GPU_DIAGNOSE_TOOLS=gdb,memcheck
export LMKIT_GPU_TEST_TIMEOUT=300 LMKIT_GPU_CXX_STANDARD=""
bench_configs=() heads_configs=() graph_configs=()
out=${LMKIT_GPU_OUT:-} reference_awd="" reference_mos="" reference_sizes=ptb
while [ $# -gt 0 ]; do
  case $1 in
    --quick) steps=("${quick_steps[@]}") ;;
    --only) IFS=, read -r -a steps <<<"$2"; shift ;;
    --if-time) IFS=, read -r -a optional_steps <<<"$2"; shift ;;
    --cap) caps_given+=("$2"); shift ;;
    --cap=?*) caps_given+=("${1#--cap=}") ;;
    --dry-run|--plan) dry_run=yes ;;
    --budget) budget=$2; shift ;;
    --bench-steps) LMKIT_GPU_BENCH_STEPS=$2; shift ;;
    --bench-warmup) LMKIT_GPU_BENCH_WARMUP=$2; shift ;;
    --bench-repeats) LMKIT_GPU_BENCH_REPEATS=$2; shift ;;
    --bench-config) bench_configs+=("$2"); shift ;;
    --heads-config) heads_configs+=("$2"); shift ;;
    --sharing-k) LMKIT_GPU_SHARING_K=$2; shift ;;
    --rank-contexts) LMKIT_GPU_RANK_CONTEXTS=$2; shift ;;
    --test-timeout) LMKIT_GPU_TEST_TIMEOUT=$2; shift ;;
    --diagnose-tools) LMKIT_GPU_DIAGNOSE_TOOLS=$2; shift ;;
    --diagnose-cap) LMKIT_GPU_DIAGNOSE_CAP=$2; shift ;;
    --diagnose-max) LMKIT_GPU_DIAGNOSE_MAX=$2; shift ;;
    --graph-config) graph_configs+=("$2"); shift ;;
    --cxx-standard) LMKIT_GPU_CXX_STANDARD=$2; shift ;;
    --reference-awd) reference_awd=$2; shift ;;
    --reference-mos) reference_mos=$2; shift ;;
    --reference-sizes) reference_sizes=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --device) LMKIT_GPU_DEVICE=$2; shift ;;
    --out) out=$2; shift ;;
    --out=?*) out=${1#--out=} ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "run_on_gpu.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
# Counts and seconds are whole numbers without leading zeros (a typo would otherwise surface as a
# shell error mid-run: bash reads 08 as a bad octal number), at least 1 where 0 means nothing (the
# benchmarks' scripts refuse 0 steps or warm-up steps); --diagnose-max 0 means all.
positive_options=("--bench-steps $LMKIT_GPU_BENCH_STEPS" "--bench-warmup $LMKIT_GPU_BENCH_WARMUP"
  "--bench-repeats $LMKIT_GPU_BENCH_REPEATS" "--rank-contexts $LMKIT_GPU_RANK_CONTEXTS"
  "--diagnose-cap $LMKIT_GPU_DIAGNOSE_CAP" "--test-timeout $LMKIT_GPU_TEST_TIMEOUT")
[ -z "$budget" ] || positive_options+=("--budget $budget")
for pair in "${positive_options[@]}"; do
  [[ ${pair#* } =~ ^[1-9][0-9]*$ ]] ||
    { echo "run_on_gpu.sh: ${pair%% *} takes a whole number ≥ 1 without leading zeros, got '${pair#* }'" >&2; exit 2; }
done
[[ $LMKIT_GPU_DIAGNOSE_MAX =~ ^(0|[1-9][0-9]*)$ ]] ||
  { echo "run_on_gpu.sh: --diagnose-max takes a whole number (0: all) without leading zeros, got '$LMKIT_GPU_DIAGNOSE_MAX'" >&2; exit 2; }
[[ $LMKIT_GPU_SHARING_K =~ ^[1-9][0-9]*( [1-9][0-9]*)*$ ]] ||
  { echo "run_on_gpu.sh: --sharing-k takes whole numbers ≥ 1 without leading zeros, one space apart (\"1 2 4 8\"), got '$LMKIT_GPU_SHARING_K'" >&2; exit 2; }
[[ $LMKIT_GPU_DIAGNOSE_TOOLS =~ ^(ab|gdb|memcheck)(,(ab|gdb|memcheck))*$ ]] ||
  { echo "run_on_gpu.sh: --diagnose-tools takes ab, gdb and/or memcheck, separated by commas (e.g. ab,gdb), got '$LMKIT_GPU_DIAGNOSE_TOOLS'" >&2; exit 2; }
[ -z "$LMKIT_GPU_CXX_STANDARD" ] || [[ $LMKIT_GPU_CXX_STANDARD =~ ^(17|20|23|26)$ ]] ||
  { echo "run_on_gpu.sh: --cxx-standard takes 17, 20, 23 or 26, got '$LMKIT_GPU_CXX_STANDARD'" >&2; exit 2; }
# The issue's workloads that the training benchmarks express: "SIZE HEAD [BSZ]".
[ ${#bench_configs[@]} -gt 0 ] || bench_configs=("ptb softmax" "ptb mos" "wt2 mos" "wt2 softmax 15")
LMKIT_GPU_BENCH_CONFIGS=$(IFS=';'; echo "${bench_configs[*]}")
export LMKIT_GPU_BENCH_CONFIGS
LMKIT_GPU_HEADS_CONFIGS=$(IFS=';'; echo "${heads_configs[*]}")
export LMKIT_GPU_HEADS_CONFIGS
[ ${#graph_configs[@]} -gt 0 ] || graph_configs=("ptb softmax" "ptb mos")
LMKIT_GPU_GRAPH_CONFIGS=$(IFS=';'; echo "${graph_configs[*]}")
export LMKIT_GPU_GRAPH_CONFIGS
[ ${#steps[@]} -gt 0 ] || { echo "run_on_gpu.sh: --only names no step (${all_steps[*]})" >&2; exit 2; }
for step in "${steps[@]}" "${optional_steps[@]}"; do
  [[ " ${all_steps[*]} " == *" $step "* ]] || { echo "run_on_gpu.sh: unknown step '$step' (${all_steps[*]})" >&2; exit 2; }
done
for step in "${optional_steps[@]}"; do
  [[ " ${steps[*]} " != *" $step "* ]] ||
    { echo "run_on_gpu.sh: step '$step' is both planned and in --if-time: name it in one of them" >&2; exit 2; }
done
# --cap STEP=SECONDS, repeatable, or several joined by commas.
for given in "${caps_given[@]}"; do
  IFS=, read -r -a pairs <<<"$given"
  for pair in "${pairs[@]}"; do
    step=${pair%%=*} seconds=${pair#*=}
    [[ $pair == *=* && " ${all_steps[*]} " == *" $step "* ]] ||
      { echo "run_on_gpu.sh: --cap takes STEP=SECONDS with STEP one of: ${all_steps[*]}; got '$pair'" >&2; exit 2; }
    [[ $seconds =~ ^[1-9][0-9]*$ ]] ||
      { echo "run_on_gpu.sh: --cap $step=SECONDS: SECONDS must be a whole number ≥ 1, got '$seconds'" >&2; exit 2; }
    step_caps[$step]=$seconds
  done
done

# The output folder: --out, else LMKIT_GPU_OUT, else gpu-out in the repository root (ignored by git).
if [ -z "$out" ]; then
  out=$root/gpu-out
elif [[ $out != /* ]]; then
  out=$caller_dir/$out
fi
# The original code's folders, from the folder the script is run from (as --out).
[ -z "$reference_awd" ] || [[ $reference_awd = /* ]] || reference_awd=$caller_dir/$reference_awd
[ -z "$reference_mos" ] || [[ $reference_mos = /* ]] || reference_mos=$caller_dir/$reference_mos
for folder in "--reference-awd $reference_awd" "--reference-mos $reference_mos"; do
  # Checked now, not after the build: a mistyped folder would cost the visit its comparison.
  [ -z "${folder#--reference-??? }" ] || [ -f "${folder#--reference-??? }/main.py" ] ||
    { echo "run_on_gpu.sh: ${folder%% *}: no main.py in '${folder#--reference-??? }' (a git clone of the original code; scripts/gpu/README.md)" >&2; exit 2; }
done
[[ $reference_sizes =~ ^(ptb|wt2)(,(ptb|wt2))*$ ]] ||
  { echo "run_on_gpu.sh: --reference-sizes takes ptb and/or wt2, separated by commas (e.g. ptb,wt2), got '$reference_sizes'" >&2; exit 2; }
export LMKIT_GPU_REFERENCE_AWD=$reference_awd LMKIT_GPU_REFERENCE_MOS=$reference_mos LMKIT_GPU_REFERENCE_SIZES=$reference_sizes
export LMKIT_GPU_BUILD=$root/$build_dir
[[ $build_dir = /* ]] && LMKIT_GPU_BUILD=$build_dir

# The plan: the steps in order with their caps, and their sum against the budget. Every step gets
# its whole cap only when the sum fits; --dry-run stops here (it needs no GPU, Torch or build).
plan_sum=$plan_overhead
for step in "${steps[@]}"; do plan_sum=$(( plan_sum + step_caps[$step] )); done
# Without --budget, the plan's own sum: every step gets its whole cap.
[ -n "$budget" ] || budget=$plan_sum
print_plan() {
  local i=0 step verdict="fits"
  [ "$plan_sum" -le "$budget" ] || verdict="does NOT fit"
  echo "run_on_gpu.sh: the plan, each step at most its cap (seconds; less if less of the budget is left):"
  printf '  %2s  %-12s %5s\n' '#' step cap
  for step in "${steps[@]}"; do i=$((i + 1)); printf '  %2s  %-12s %5s\n' "$i" "$step" "${step_caps[$step]}"; done
  printf '      %-12s %5s  %s\n' overhead "$plan_overhead" "(unpacking the prefix, packing the logs)"
  printf '      %-12s %5s  %s\n' sum "$plan_sum" "of the budget $budget: $verdict"
  if [ ${#optional_steps[@]} -gt 0 ]; then
    echo "  if time is left (--if-time: each gets what is left, up to its cap; not in the sum):"
    for step in "${optional_steps[@]}"; do i=$((i + 1)); printf '  %2s  %-12s %5s\n' "$i" "$step" "${step_caps[$step]}"; done
  fi
  echo "  output folder: $out"
  echo "  build folder: $LMKIT_GPU_BUILD"
}
over_budget="the plan's caps sum to $plan_sum s (with $plan_overhead s for unpacking the prefix and packing the logs), over the budget of $budget s (--budget)"
if [ $dry_run = yes ]; then
  print_plan
  if [ "$plan_sum" -gt "$budget" ]; then
    echo "run_on_gpu.sh: $over_budget: lower a step's cap (--cap STEP=SECONDS), move a step to --if-time, or raise --budget" >&2
    exit 1
  fi
  exit 0
fi
print_plan >&2
if [ "$plan_sum" -gt "$budget" ]; then
  echo "run_on_gpu.sh: warning: $over_budget: the last steps get less than their cap, or nothing" >&2
fi

# This run's logs only: a run that was cut off leaves its logs/ behind, which diagnose and
# warnings would otherwise read as this run's.
rm -rf "$out/logs"
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
export LMKIT_GPU_OUT_DIR=$out
# In milliseconds: the run's end (the budget from now), and the steps' end, pack_seconds before it so
# that results.md and logs.tar.gz are written within the budget.
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
run_end_ms=$(( $(now_ms) + budget * 1000 ))
steps_end_ms=$(( run_end_ms - pack_seconds * 1000 ))
export LMKIT_GPU_ORIGINAL_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} LMKIT_GPU_ORIGINAL_PATH=$PATH
# All cores: nproc obeys OMP_NUM_THREADS, which an image may set.
LMKIT_GPU_CORES=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
export LMKIT_GPU_CORES
export PYTHONUNBUFFERED=1
# Torch's caching allocator must stay on: under PYTORCH_NO_CUDA_MEMORY_CACHING every CUDA graph
# capture fails by Torch's design, so the graph tests, determinism and graphs would fail for Torch's
# reason rather than lmkit's. Only diagnose's memcheck reruns of tests that capture no graph set it.
environment_note=""
if [ -n "${PYTORCH_NO_CUDA_MEMORY_CACHING+set}" ]; then
  environment_note="PYTORCH_NO_CUDA_MEMORY_CACHING=$PYTORCH_NO_CUDA_MEMORY_CACHING was set: unset for this run (no CUDA graph can be captured under it)"
  unset PYTORCH_NO_CUDA_MEMORY_CACHING
fi

results=()  # "| step | seconds | status |" rows
failed_logs=()
declare -A recorded=()  # the steps with a row: the others are listed as running or not reached
# The step now running, for results.md and a signal's handler: its name, start (UTC, and for its
# seconds), limit and why, log and process.
current_step="" current_since="" current_start=0 current_limit="" current_log="" current_pid=""
write_results() {
  local step log  # local: run_step's own log (the step's output) must survive this call
  {
    echo "# lmkit on a GPU machine: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo
    echo "| step | seconds | status |"
    echo "|---|---|---|"
    printf '%s\n' "${results[@]}"
    # The step running as this is written, then the plan's steps not reached yet: after a kill
    # (SIGKILL: no handler runs), the step that was cut and what never ran are named, not merely absent.
    for step in "${steps[@]}" "${optional_steps[@]}"; do
      [ -z "${recorded[$step]:-}" ] || continue
      if [ "$step" = "$current_step" ]; then
        echo "| $step | | running since $current_since UTC (at most $current_limit): if this row stays, the run was cut here |"
      elif [[ " ${steps[*]} " == *" $step "* ]]; then
        echo "| $step | | not reached (cap ${step_caps[$step]} s) |"
      else
        echo "| $step | | not reached (if time is left, cap ${step_caps[$step]} s) |"
      fi
    done
    if [ -f "$out/logs/bench.log" ]; then
      echo; echo "## Benchmarks (scripts/bench.sh --device $LMKIT_GPU_DEVICE: lmkit.train, lmkit's Lua loop, the PyTorch yardstick)"; echo
      sed -n '/^== all configurations/,$p' "$out/logs/bench.log" | tail -n +2
      echo; echo '```'; grep -E '^(\{|machine:|versions:)' "$out/logs/bench.log" || true; echo '```'
    fi
    if grep -qs '^| workload' "$out/logs/reference.log"; then
      echo; echo "## Against the original code (scripts/bench_reference.sh --device $LMKIT_GPU_DEVICE: awd-lstm-lm's and MoS's main.py, lmkit.train)"; echo
      grep '^|' "$out/logs/reference.log" || true
      echo; grep '^peak MiB:' "$out/logs/reference.log" || true
      echo; echo '```'; grep -E '^(\{|machine:|gpu:|versions:|original code|corpus:)' "$out/logs/reference.log" || true; echo '```'
    fi
    if [ -f "$out/logs/heads.log" ]; then
      echo; echo "## Each head against lmkit's Softmax (scripts/bench_heads.sh --device $LMKIT_GPU_DEVICE)"; echo
      grep '^|' "$out/logs/heads.log" || true
    fi
    if [ -f "$out/logs/sharing.log" ]; then
      echo; echo "## A grid's cells per hour with K tasks per GPU (scripts/bench_sharing.sh)"; echo
      grep -E '^(\||cells:)' "$out/logs/sharing.log" || true
    fi
    if grep -qs '^== GPU tests to diagnose' "$out/logs/diagnose.log"; then
      echo; echo "## GPU tests rerun under a debugger and compute-sanitizer (logs/diagnose/ has their logs)"; echo
      echo '```'; { grep -vE '^(== |  |result: )' "$out/logs/diagnose.log" || true; } | head -80; echo '```'
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

say() { echo "$@" >&2; }  # progress: stderr, unbuffered, written as it happens

run_step() {
  local step=$1 log cap left limit="its cap" start rc=0 status detail
  log=$out/logs/$step.log
  [ "$step" = facts ] && log=$out/machine.txt
  # The step's cap, or what is left until the steps' end when that is less: whole seconds, less the
  # step_stop_grace that `timeout` gives a stopped step before SIGKILL, so that even a step that
  # ignores SIGTERM has ended by then.
  cap=${step_caps[$step]} left=$(( (steps_end_ms - $(now_ms)) / 1000 ))
  if [ $(( left - step_stop_grace )) -lt "$cap" ]; then
    cap=$(( left - step_stop_grace )) limit="the budget's end"
    if [ "$cap" -lt 10 ]; then
      [ "$left" -ge 0 ] || left=0
      record "$step" 0 "skipped: the budget is spent (${left}s left before packing the logs: under 10 s for the step and ${step_stop_grace} s for its stop)"; return 1
    fi
  fi
  say "== $step (at most ${cap}s: $limit)"
  start=$(date +%s%N)
  export LMKIT_GPU_STEP_DEADLINE=$(( $(date +%s) + cap ))
  # results.md before the step starts, its row saying so: a run killed outright (SIGKILL, no
  # handler) leaves that row, naming the step it was cut in.
  current_step=$step current_since=$(date -u +%H:%M:%S) current_start=$start current_limit="${cap} s: $limit" current_log=$log
  write_results
  # In the background, so that a signal to this script (the node's time limit) is handled at once.
  timeout --kill-after="$step_stop_grace" "$cap" bash "$self" --step "$step" >"$log" 2>&1 &
  current_pid=$!
  wait "$current_pid" || rc=$?
  current_pid="" current_step=""
  case $rc in
    0) status=ok ;;
    124|137) status="cut at $limit (${cap}s)" ;;
    *) status="failed (exit $rc)" ;;
  esac
  # The step's own summary: its last "result: " line, else a ctest summary.
  # (|| true: a log without such a line is no error, under pipefail and set -e alike.)
  detail=$(grep '^result: ' "$log" | tail -1 | cut -c9- || true)
  [ -n "$detail" ] || detail=$(grep -oE '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1 || true)
  # lmkit doctor's verdict: "Everything passed on cuda." or "2 of 10 checks failed on cuda ...".
  [ -n "$detail" ] || [ "$step" != doctor ] ||
    detail=$(grep -E '^(Everything passed|[0-9]+ of [0-9]+ checks failed)' "$log" | tail -1 || true)
  if [[ $step == @(cpu_suite|gpu_tests) ]] && grep -q "stop time has been passed" "$log"; then
    status="$status, ctest cut at its stop time (${cap}s)"
  fi
  [ -z "$detail" ] || status="$status: $detail"
  [ $rc = 0 ] || { failed_logs+=("$log"); tail -15 "$log" >&2; }
  record "$step" "$(elapsed "$start")" "$status"
  return $rc
}
elapsed() {  # elapsed START_NS: seconds since then, with tenths
  local tenths=$(( ($(date +%s%N) - $1) / 100000000 ))
  echo "$(( tenths / 10 )).$(( tenths % 10 ))"
}
record() {  # record STEP SECONDS STATUS: a row of results.md, written at once, and a line on stderr
  results+=("| $1 | $2 | ${3//|/\\|} |")
  recorded[$1]=yes
  write_results
  say "   $1: $3 (${2}s)"
}

[ -z "$environment_note" ] || record environment 0 "$environment_note"
# The carried dependencies once, here, so that every step sees the same PATH and LD_LIBRARY_PATH.
# Its log travels in logs.tar.gz; its tail joins results.md when it failed.
carried_ok=yes carried_log=$out/logs/carried_deps.log
carried_start=$(date +%s%N)
# shellcheck source=carried_deps.sh
source "$root/scripts/gpu/carried_deps.sh" >"$carried_log" 2>&1 || carried_ok=no
if [ $carried_ok = yes ]; then
  record "unpack carried dependencies" "$(elapsed "$carried_start")" "ok (cmake/ninja: $LMKIT_DEPS_TOOLS)"
else
  failed_logs+=("$carried_log"); tail -15 "$carried_log" >&2
  record "unpack carried dependencies" "$(elapsed "$carried_start")" "failed"
fi

# A signal (the node's time limit: Slurm sends SIGTERM, then SIGKILL) ends the running step and
# leaves the three files with what finished, the cut step named as such.
on_signal() {
  trap - TERM INT HUP
  if [ -n "$current_pid" ]; then
    kill -TERM "$current_pid" 2>/dev/null || true   # timeout passes it on to the step's processes
    wait "$current_pid" 2>/dev/null || true
    failed_logs+=("$current_log")
    local step=$current_step
    current_pid="" current_step=""
    record "$step" "$(elapsed "$current_start")" "cut off by SIG$1"
  fi
  tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$out/logs"
  say "run_on_gpu.sh: stopped by SIG$1; the results so far are in $out"
  exit $(( 128 + $2 ))
}
trap 'on_signal TERM 15' TERM
trap 'on_signal INT 2' INT
trap 'on_signal HUP 1' HUP

# What this run built: "ok" or "failed" per part (lmkit, the tests, everything); a part not built in
# this run counts as built when its executable is there (--only reusing an earlier build).
declare -A built=([lmkit]=unknown [tests]=unknown [all]=unknown)
configure_failed=no
note_build() {  # note_build STEP OK|FAILED: what a build step leaves built
  local step=$1 result=$2 part
  case $step in
    build_lmkit) built[lmkit]=$result ;;
    build_tests) built[tests]=$result ;;
    build)
      built[all]=$result
      # A failed whole build says nothing of a part already built by its own step.
      for part in lmkit tests; do [ "${built[$part]}" != unknown ] || built[$part]=$result; done ;;
  esac
}
ready() {  # ready PART FILE: prints why PART cannot be used, nothing when it can
  case ${built[$1]} in
    ok) ;;
    failed) echo "building $3 failed" ;;
    *) [ -x "$2" ] || echo "$3: not built" ;;
  esac
}
# why_not STEP: nothing when STEP can run now, else why it cannot. Each step needs what an earlier
# one builds; a failure is not repeated by the steps after it.
why_not() {
  local step=$1
  case $step in facts|warnings|graphs) return 0 ;; esac   # they need no build
  [ $carried_ok = yes ] || { echo "the carried dependencies are not usable"; return 0; }
  [ "$step" = configure ] || [ $configure_failed = no ] || { echo "configure failed"; return 0; }
  case $step in
    build_lmkit|build_tests|build) [ -f "$LMKIT_GPU_BUILD/build.ninja" ] || echo "not configured" ;;
    doctor|determinism|rank|bench|heads|sharing) ready lmkit "$LMKIT_GPU_BUILD/lmkit" lmkit ;;
    reference)
      if [ -z "$LMKIT_GPU_REFERENCE_AWD$LMKIT_GPU_REFERENCE_MOS" ]; then
        echo "no --reference-awd or --reference-mos given (the original code's folders: scripts/gpu/README.md)"
      else
        ready lmkit "$LMKIT_GPU_BUILD/lmkit" lmkit
      fi ;;
    gpu_tests|diagnose) ready tests "$LMKIT_GPU_BUILD/tests/lmkit_tests" "the test executable" ;;
    cpu_suite) ready all "$LMKIT_GPU_BUILD/lmkit" everything ;;
  esac
}

# The planned steps, then those of --if-time while time is left.
for step in "${steps[@]}" "${optional_steps[@]}"; do
  reason=$(why_not "$step")
  if [ -n "$reason" ]; then record "$step" 0 "skipped: $reason"; continue; fi
  if run_step "$step"; then
    note_build "$step" ok
  else
    note_build "$step" failed
    [ "$step" != configure ] || configure_failed=yes
  fi
done

write_results
# The logs packed in what is left of the budget (the steps ended pack_seconds before its end; at
# least one second): a tar cut there leaves logs/ unpacked, as after a kill, and no logs.tar.gz.
pack_ms=$(( run_end_ms - $(now_ms) ))
[ "$pack_ms" -ge 1000 ] || pack_ms=1000
if timeout --signal=KILL "$(( pack_ms / 1000 )).$(printf '%03d' $(( pack_ms % 1000 )))" \
     tar -C "$out" -czf "$out/logs.tar.gz" logs; then
  rm -rf "$out/logs"
  packed="machine.txt, results.md, logs.tar.gz"
else
  rm -f "$out/logs.tar.gz"
  packed="machine.txt, results.md, and logs/ unpacked: packing them did not end within the budget"
fi
trap - TERM INT HUP
echo; cat "$out/results.md"
echo; echo "run_on_gpu.sh: the results are in $out ($packed)"

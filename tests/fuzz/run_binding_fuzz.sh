#!/usr/bin/env bash
# Runs the binding fuzzer (binding_fuzz.lua, beside this script) in a sandbox: a fresh temporary
# working folder (every path the fuzzer passes is relative to it), bounded memory, a wall-clock
# limit; output of the fuzzed functions (help(), ...) goes to a file, the fuzzer's report to stderr.
#
#   run_binding_fuzz.sh [--sanitized] [--module DIR [--preload LIBS]] COMMAND SECONDS [key=value ...]
#
#   COMMAND      the lmkit executable; with --module, a Lua 5.4 interpreter that loads DIR/lmkit.so
#   SECONDS      the fuzzer's time budget; key=value are more fuzzer settings (seed=, verbose=, ...)
#   --sanitized  an ASan+UBSan build: allocation failures return null (Torch then raises), RSS is
#                capped; without it the address space is limited with ulimit -v instead
#   --preload    libraries for LD_PRELOAD (the ASan runtime, which an uninstrumented interpreter
#                must load first)
#
# Exit status 0 only when the fuzzer printed "binding fuzz ok" and exited normally. On failure the
# last calls of the trace and the working folder (kept) are shown.
set -uo pipefail

original_arguments=("$@")
sanitized=0
module_dir=""
preload=""
while [ $# -gt 0 ]; do
  case $1 in
    --sanitized) sanitized=1; shift ;;
    --module) module_dir=$2; shift 2 ;;
    --preload) preload=$2; shift 2 ;;
    --*) echo "run_binding_fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  sed -n '2,17p' "$0" >&2
  exit 2
fi
command=$1
seconds=$2
shift 2
case $command in
  */*) command=$(realpath "$command") ;;  # the run happens in another folder
esac
[ -n "$module_dir" ] && module_dir=$(realpath "$module_dir")

fuzzer="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/binding_fuzz.lua"
work=$(mktemp -d "${TMPDIR:-/tmp}/lmkit-binding-fuzz.XXXXXX")
cd "$work" || exit 2

export LMKIT_PROGRESS=off
unset LMKIT_DATA  # corpora and benchmarks are looked up under ./data: missing, as they should be
if [ "$sanitized" = 1 ]; then
  # ASan reserves terabytes of shadow address space, so ulimit -v cannot apply: oversized requests
  # fail instead (Torch's allocator then raises a Lua error) and RSS beyond 6 GiB is a failure.
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=3072:hard_rss_limit_mb=6144"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1"
else
  # A size argument that reaches an allocator must fail there, not page the machine to death.
  ulimit -v $((6 * 1024 * 1024))
fi

settings=("seconds=$seconds" "trace=$work/trace.log" "$@")
if [ -n "$module_dir" ]; then
  # The interpreter unloads lmkit.so in lua_close, before LeakSanitizer runs at exit: leak stacks
  # through it lose their module names and cannot be suppressed, so leaks are checked by the lmkit
  # executable's run only.
  [ "$sanitized" = 1 ] && export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
  run=(env "LUA_CPATH=$module_dir/?.so;;" "LD_PRELOAD=$preload" "$command" "$fuzzer" "${settings[@]}")
else
  run=("$command" run "$fuzzer" -- "${settings[@]}")
fi

limit=$(( ${seconds%.*} + 180 ))
timeout -k 10 "$limit" "${run[@]}" 2>&1 >"$work/stdout.log" | tee "$work/report.log"
status=${PIPESTATUS[0]}

if [ "$status" = 0 ] && grep -q '^binding fuzz ok' "$work/report.log"; then
  cd / && rm -rf "$work"
  exit 0
fi
{
  echo
  case $status in
    124|137) echo "binding fuzz: killed after ${limit}s (a hang in C++ code: the last call below never returned)" ;;
    *) echo "binding fuzz: exit status $status" ;;
  esac
  echo "last calls (oldest first; $work/trace.log has them all):"
  tail -n 15 "$work/trace.log" 2>/dev/null
  echo "working folder kept: $work"
  seed=$(sed -n 's/^binding fuzz: seed \([0-9]*\).*/\1/p' "$work/report.log" | head -n 1)
  last_call=$(tail -n 1 "$work/trace.log" 2>/dev/null | sed -n 's/^#\([0-9]*\).*/\1/p')
  if [ -n "$seed" ]; then
    printf 'replay:'
    printf ' %q' "$0" "${original_arguments[@]}" "seed=$seed" ${last_call:+"calls=$last_call"} verbose=true
    printf '\n'
  fi
} >&2
exit 1

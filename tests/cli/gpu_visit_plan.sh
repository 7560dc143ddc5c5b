#!/usr/bin/env bash
# gpu_visit_plan.sh ROOT: the next GPU visit's call, as docs/development.md shows it, is complete and
# fits its budget. The call is taken from the page itself (the fenced block after the line
# "<!-- next-visit-call: ...", "The next visit"), so the page and this test cannot drift apart, and
# run with --dry-run: scripts/gpu/run_on_gpu.sh then prints its plan and exits, needing no GPU, Torch
# or build. Checked: the block fetches the prefix first and packs what goes to the node (into an
# archive outside the tree), the call names its output folder and budget, the plan fits the budget,
# and the GPU tests, the determinism runs and the graphs' timing come before every benchmark.
set -euo pipefail
root=${1:?usage: gpu_visit_plan.sh ROOT}
page=$root/docs/development.md
fail() { echo "gpu_visit_plan: $*" >&2; exit 1; }

# The fenced block after the marker line, continuation lines joined.
block=$(awk '
  /^<!-- next-visit-call:/ { marked = 1; next }
  marked && !inside && /^```/ { inside = 1; next }
  inside && /^```/ { exit }
  inside { print }
' "$page" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta')
[ -n "$block" ] || fail "no fenced block after '<!-- next-visit-call:' in $page (docs/development.md, \"The next visit\")"
printf '%s\n' "$block" | sed 's/^/  doc: /'

line_of() { { grep -n "$1" <<<"$block" || true; } | head -1 | cut -d: -f1; }  # empty: no such line
fetch_line=$(line_of '^bash scripts/gpu/fetch_debs\.sh')
call_line=$(line_of '^bash scripts/gpu/run_on_gpu\.sh ')
[ -n "$call_line" ] || fail "the block holds no line starting 'bash scripts/gpu/run_on_gpu.sh '"
if [ -z "$fetch_line" ] || [ "$fetch_line" -gt "$call_line" ]; then
  fail "the block must fetch the prefix first: 'bash scripts/gpu/fetch_debs.sh' before the run_on_gpu.sh call"
fi
# The code only a CUDA Torch compiles is checked on the connected machine: a compile error on the
# node would cost the visit.
check_line=$(line_of '^bash scripts/gpu/check_cuda_sources\.sh')
if [ -z "$check_line" ] || [ "$check_line" -gt "$call_line" ]; then
  fail "the block must check the CUDA-only sources first: 'bash scripts/gpu/check_cuda_sources.sh' before the run_on_gpu.sh call"
fi
[ -f "$root/scripts/gpu/check_cuda_sources.sh" ] || fail "the block names scripts/gpu/check_cuda_sources.sh, which is not there"
# The archive outside the tree it packs (../NAME or an absolute path): inside it, tar reads its own
# growing archive ("file changed as we read it") and a rerun packs the previous one.
grep -qE '^tar -czf (\.\./|/)[^ ]*\.tar\.gz .*\.gpu-deps' <<<"$block" ||
  fail "the block must pack what goes to the node: a 'tar -czf ../NAME.tar.gz' line (outside the tree it packs) that names .gpu-deps"
call=$(sed -n "${call_line}p" <<<"$block")
for option in --out --budget; do
  [[ " $call " == *" $option "* ]] || fail "the call names no $option: every result goes to the folder it is given, within its budget"
done
# The call is read as words, not run by a shell: nothing in it may be more than words and quotes.
args=${call#bash scripts/gpu/run_on_gpu.sh }
[[ $args != *[\;\&\|\$\`\<\>\(\)\{\}]* ]] || fail "the call holds shell syntax this test does not run: $call"
eval "set -- $args"

cd "$root"
status=0
plan=$(bash scripts/gpu/run_on_gpu.sh "$@" --dry-run 2>&1) || status=$?
printf '%s\n' "$plan"
case $status in
  0) ;;
  1) fail "the documented call's plan does not fit its budget (run_on_gpu.sh --dry-run exited 1)" ;;
  *) fail "run_on_gpu.sh refused the documented call (exit $status): see its message above" ;;
esac
grep -qE '^ +sum +[0-9]+ +of the budget [0-9]+: fits$' <<<"$plan" || fail "the plan prints no 'sum ... fits' line"

# The steps in the order they run: "  N  STEP  CAP" lines; the planned ones before "if time is left".
planned=$(sed '/if time is left/,$d' <<<"$plan" | sed -nE 's/^ +[0-9]+  ([a-z_]+) +[0-9]+$/\1/p')
all=$(sed -nE 's/^ +[0-9]+  ([a-z_]+) +[0-9]+$/\1/p' <<<"$plan")
position() { { grep -nx "$1" <<<"$all" || true; } | cut -d: -f1; }  # empty: not in the plan
for step in gpu_tests determinism graphs; do
  grep -qx "$step" <<<"$planned" || fail "the plan does not run $step within its budget (it is missing or only in --if-time)"
done
last_check=0
for step in gpu_tests determinism graphs; do
  [ "$(position "$step")" -le "$last_check" ] || last_check=$(position "$step")
done
for step in rank bench reference heads sharing; do
  at=$(position "$step")
  [ -z "$at" ] || [ "$at" -gt "$last_check" ] ||
    fail "benchmark step $step comes before the GPU tests, the determinism runs or the graphs' timing"
done
echo "gpu visit plan ok: $(wc -l <<<"$planned") steps planned, $(grep -oE 'sum +[0-9]+ +of the budget [0-9]+' <<<"$plan" | tr -s ' ')"

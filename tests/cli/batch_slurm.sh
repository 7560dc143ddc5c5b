#!/bin/bash
# batch_slurm.sh LMKIT WORKDIR: the Slurm backend against a real private single-node Slurm
# (scripts/slurm/single_node.sh). The GSS grid at tiny scale (3 cells, 4 epochs) is submitted as
# one job array with --requeue; task 1 is preempted mid-training (scancel --batch --signal=TERM),
# saves its state, requeues itself and resumes; `lmkit report` then renders the complete table and
# the rank-vs-perplexity plot, and task 1's result equals an uninterrupted run of the same cell.
# Exit 77 (skipped) without the Slurm packages or root: bash scripts/setup.sh --with-slurm.
set -u
lmkit=$1
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/scripts/slurm/single_node.sh"
missing=$(slurm_missing_packages)
if [ -n "$missing" ] || [ "$(id -u)" != 0 ]; then
  echo "SKIP: needs root and Slurm ($missing missing): bash scripts/setup.sh --with-slurm"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
trap 'slurm_down' EXIT
trap 'exit 130' INT TERM
fail() {
  echo "FAIL: $*"
  for f in "$work"/*.txt "$work"/out/batch/logs/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }; done
  [ -n "${SLURM_CONF:-}" ] && { squeue; scontrol -o show job; tail -n 20 "$work"/slurm/log/slurmctld.log; } 2>&1
  exit 1
}
slurm_up "$work/slurm" || fail "the private Slurm did not start"

sets=(--set scale=tiny --set limit=3 --set epochs=4)
out=$work/out
cd "$root"
"$lmkit" batch recipes/gss_grid.lua --backend slurm --requeue --cpus-per-task 1 "${sets[@]}" --set out="$out" \
  >"$work/submit.txt" 2>&1 || fail "lmkit batch --backend slurm failed"
job=$(sed -n 's/^submitted Slurm array job \([0-9]*\).*/\1/p' "$work/submit.txt")
[ -n "$job" ] || fail "no job id in the submission output"

# Preempt task 1 once it has finished an epoch (mid-training), as a cluster would.
cell1=$out/cells/$(sed -n 's/^ *"\(c=-2[^"]*k=1.25\)",\{0,1\}$/\1/p' "$out/recipe.json" | head -n 1)
metrics=$cell1/run/metrics.jsonl
for _ in $(seq 1 1200); do [ -s "$metrics" ] && break; sleep 0.1; done
[ -s "$metrics" ] || fail "task 1 never finished an epoch"
"$lmkit" status "$out" >"$work/status-running.txt" 2>&1
scancel --batch --signal=TERM "${job}_1" || fail "scancel failed"

# Wait for the array to finish (the requeued task included), at most 5 minutes.
for _ in $(seq 1 600); do
  [ -z "$(squeue -h -r -j "$job" 2>/dev/null)" ] && break
  sleep 0.5
done
[ -z "$(squeue -h -r -j "$job")" ] || fail "the array did not finish in 5 minutes"
"$lmkit" status "$out" >"$work/status.txt" 2>&1 || fail "lmkit status: not every task is done"
grep -q "3 done" "$work/status.txt" || fail "status should count 3 done"
grep -q "requeueing ${job}_1" "$out/batch/logs/task-1.log" || fail "task 1 was not requeued by its job script"
grep -q "Resuming" "$out/batch/logs/task-1.log" || fail "task 1 did not resume from its saved state"
grep -q '"attempt": 2' "$out/batch/tasks/1.json" || fail "task 1 should have run twice"
scontrol -o show job "${job}_1" | grep -q "Restarts=1" || fail "Slurm did not record the restart"

# The report of the batch: the complete table and the plot.
"$lmkit" report "$out" >"$work/report.txt" 2>&1 || fail "lmkit report failed"
grep -q "have no result yet" "$work/report.txt" && fail "the report misses cells"
grep -q "report files: $out/report" "$work/report.txt" || fail "no report files"
[ -s "$out/rank_vs_ppl.png" ] || fail "no rank-vs-perplexity plot"
[ "$(grep -c '^|  *-\?[0-9]' "$out/report.md")" = 3 ] || fail "report.md should have 3 rows"

# Correctness: the preempted-and-resumed cell equals the same cell run without interruption (with
# the same thread count: a different one changes the order of floating-point sums).
"$lmkit" run recipes/gss_grid.lua --threads 1 "${sets[@]}" --set out="$work/reference" --set task=1 >"$work/reference.txt" 2>&1 ||
  fail "the reference run failed"
reference=$work/reference/cells/$(basename "$cell1")/result.json
cmp -s "$cell1/result.json" "$reference" ||
  fail "the resumed cell differs from an uninterrupted run: $(cat "$cell1/result.json" "$reference")"

# A second submission runs nothing: every task is done.
"$lmkit" batch recipes/gss_grid.lua --backend slurm --requeue --cpus-per-task 1 "${sets[@]}" --set out="$out" \
  >"$work/resubmit.txt" 2>&1 || fail "resubmission failed"
grep -q "nothing to run" "$work/resubmit.txt" || fail "a finished batch was submitted again"
echo "batch slurm ok"

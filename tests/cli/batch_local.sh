#!/bin/bash
# batch_local.sh LMKIT WORKDIR: `lmkit batch --backend local` runs a grid's cells as tasks; a failed
# task is reported by `lmkit status` and rerun alone by the next `lmkit batch`; a finished batch runs
# nothing; changed settings are refused; a copied or moved batch folder is its own; SIGTERM to the
# batch stops the tasks with their state saved and the next `lmkit batch` resumes them to the result
# of an uninterrupted run.
set -u
lmkit=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; for f in "$work"/*.txt; do echo "--- $f"; cat "$f"; done; exit 1; }

# 1. Task 2 fails: exit 1, status names the error and the log; the report marks the missing cell.
TINY_FAIL=2 "$lmkit" batch "$here/tiny_recipe.lua" --jobs 2 --set out="$work/tiny" >"$work/first.txt" 2>&1
[ $? = 1 ] || fail "a failed task should make lmkit batch exit 1"
"$lmkit" status "$work/tiny" >"$work/status1.txt" 2>&1
[ $? = 1 ] || fail "lmkit status should exit 1 with a failed task"
grep -q "1 done, 1 failed" "$work/status1.txt" || fail "status counts"
grep -q "fails on purpose" "$work/status1.txt" || fail "status does not show the error"
"$lmkit" report "$work/tiny" >"$work/report1.txt" 2>&1 || fail "report of a partial batch"
grep -q "squares: 1 -" "$work/report1.txt" || fail "the report does not mark the missing cell"

# Counts are bounded where machines are: --jobs past any machine is refused before anything runs,
# and more jobs than tasks run as many at once as there are tasks (it ran out of memory making slots).
"$lmkit" batch "$here/tiny_recipe.lua" --jobs 99999999999 --set out="$work/huge" >"$work/huge.txt" 2>&1
[ $? = 2 ] || fail "--jobs 99999999999 should be refused (exit 2)"
grep -qF "option 'jobs' must be in [1, 100000], got 99999999999" "$work/huge.txt" || fail "no bound named for --jobs"
[ ! -e "$work/huge" ] || fail "a refused batch made its folder"
"$lmkit" batch "$here/tiny_recipe.lua" --jobs 64 --set out="$work/wide" >"$work/wide.txt" 2>&1 || fail "--jobs 64 for 2 tasks"
grep -qF "running 2 tasks on this machine, 2 at a time" "$work/wide.txt" || fail "more jobs than tasks were not clamped"

# Planning for a cluster where Slurm is not installed (a laptop): the dry run writes the job script
# and shows the submission; only submitting needs sbatch, and says how to plan without it.
mkdir -p "$work/no_slurm_here"
out=$(PATH="$work/no_slurm_here" "$lmkit" batch "$here/tiny_recipe.lua" --backend slurm --dry-run --set out="$work/plan" 2>&1) ||
  fail "a dry run without Slurm failed: $out"
echo "$out" | grep -qF "would submit: sbatch --parsable" || fail "the dry run shows no submission: $out"
[ -s "$work/plan/batch/slurm/array.dry-run.sbatch" ] || fail "the dry run wrote no job script to read"
[ -e "$work/plan/batch/slurm/array.sbatch" ] && fail "the dry run wrote the submission's job script"
[ -e "$work/plan/recipe.json" ] && fail "the dry run wrote the folder's record"
out=$(PATH="$work/no_slurm_here" "$lmkit" batch "$here/tiny_recipe.lua" --backend slurm --set out="$work/plan" 2>&1) &&
  fail "a submission without sbatch was accepted: $out"
echo "$out" | grep -qF "lmkit batch --dry-run plans the submission anywhere" || fail "no way to plan named: $out"

# A grid planned before it is sent: the dry run says what each task trains, its estimated cost and
# whether its data is where the tasks will look; data that is missing stops the batch up front (not
# in one failed task per cell).
recipes=$(cd "$here/../../recipes" && pwd)
mkdir -p "$work/no_data"
out=$(LMKIT_DATA="$work/no_data" "$lmkit" batch "$recipes/compare_heads.lua" --dry-run --set scale=small --set seeds=2 \
      --set heads=softmax,mos --set out="$work/planned" 2>&1) || fail "the dry run of a grid failed: $out"
echo "$out" | grep -qF "plan: 4 of 4 cells to run" || fail "no plan: $out"
echo "$out" | grep -Eq "2 × Softmax, PTB, small scale: 40 epochs, about 0\.[0-9]+ GPU-hours, 767 MB on the device each" ||
  fail "no estimate for Softmax: $out"
echo "$out" | grep -qF "one NVIDIA H100" || fail "the estimate does not say where its rates were measured: $out"
echo "$out" | grep -qF "data MISSING: 4 tasks need ptb's train.txt, valid.txt, test.txt (full protocol)" || fail "missing data not said: $out"
out=$(LMKIT_DATA="$work/no_data" "$lmkit" batch "$recipes/compare_heads.lua" --set scale=small --set seeds=2 \
      --set heads=softmax,mos --set out="$work/planned" 2>&1) && fail "a batch whose data is missing was started: $out"
echo "$out" | grep -qF "compare_heads: nothing started, its tasks would fail: 4 tasks need ptb's" || fail "no refusal: $out"
[ -n "$(ls -A "$work/planned/batch/tasks" 2>/dev/null)" ] && fail "a refused batch started a task"
[ -e "$work/planned/cells" ] && fail "a refused batch ran a cell"

# The report and status of a folder that is no batch, or whose record (here an older batch's manifest)
# is damaged: exit 2, the file named.
mkdir -p "$work/not_a_batch/batch"
"$lmkit" report "$work/not_a_batch" >"$work/nobatch.txt" 2>&1
[ $? = 2 ] || fail "report of a folder without a manifest should exit 2"
grep -q "not_a_batch' holds none of lmkit's results: no recipe.json" "$work/nobatch.txt" || fail "no clear message for a folder without a record"
echo '{"recipe": ' >"$work/not_a_batch/batch/manifest.json"
"$lmkit" report "$work/not_a_batch" >"$work/damaged.txt" 2>&1
[ $? = 2 ] || fail "report of a damaged manifest should exit 2"
grep -q "manifest.json: the batch manifest is damaged" "$work/damaged.txt" || fail "no clear message for a damaged manifest"

# 2. Other settings for the same folder are refused, naming both.
"$lmkit" batch "$here/tiny_recipe.lua" --set out="$work/tiny" --set base=5 >"$work/mismatch.txt" 2>&1 &&
  fail "a batch with other settings in the same folder was accepted"
grep -q "already holds a batch" "$work/mismatch.txt" || fail "no clear message for changed settings"

# 3. Only the failed task runs again; then nothing is left to run.
"$lmkit" batch "$here/tiny_recipe.lua" --set out="$work/tiny" >"$work/second.txt" 2>&1 || fail "the rerun failed"
grep -q "1 done, 0 running or queued, 1 to run" "$work/second.txt" || fail "the rerun should run task 2 only"
grep -q '"attempt": 1' "$work/tiny/batch/tasks/1.json" || fail "task 1 ran again"
grep -q '"attempt": 2' "$work/tiny/batch/tasks/2.json" || fail "task 2 was not retried"
"$lmkit" status "$work/tiny" >"$work/status2.txt" 2>&1 || fail "status should exit 0 when all are done"
"$lmkit" batch "$here/tiny_recipe.lua" --set out="$work/tiny" >"$work/third.txt" 2>&1 || fail "third batch"
grep -q "nothing to run" "$work/third.txt" || fail "a finished batch should run nothing"
"$lmkit" report "$work/tiny" | grep -q "squares: 1 4" || fail "the full report"

# 5. A batch folder is its own wherever it lies. A copy of an unfinished batch runs its remaining task
# into the copy (not the original); a moved folder's status, batch and report are the moved one's;
# an edited manifest or a damaged result is named, never a traceback.
TINY_FAIL=2 "$lmkit" batch "$here/tiny_recipe.lua" --set out="$work/orig" >"$work/orig.txt" 2>&1
cp -r "$work/orig" "$work/copy"
grep -q "$work/orig" "$work/orig/recipe.json" && fail "the record holds its folder's absolute path"
"$lmkit" batch "$here/tiny_recipe.lua" --set out="$work/copy" >"$work/copy.txt" 2>&1 || fail "the copy's remaining task failed"
grep -q "1 done, 0 running or queued, 1 to run" "$work/copy.txt" || fail "the copy should run its one remaining task"
[ -f "$work/copy/cells/x=2/result.json" ] || fail "the copy's remaining cell did not land in the copy"
[ -f "$work/orig/cells/x=2/result.json" ] && fail "the copy's remaining task wrote into the original"
"$lmkit" status "$work/orig" >"$work/orig_status.txt" 2>&1
grep -q "1 done, 1 failed" "$work/orig_status.txt" || fail "the original's status took the copy's results"
mv "$work/copy" "$work/moved"
"$lmkit" status "$work/moved" >"$work/moved_status.txt" 2>&1 || fail "status of a moved, finished folder"
grep -q "tiny in $work/moved: 2 tasks — 2 done" "$work/moved_status.txt" || fail "status of the moved folder"
"$lmkit" batch "$here/tiny_recipe.lua" --set out="$work/moved" >"$work/moved_batch.txt" 2>&1 || fail "batch on a moved folder"
grep -q "nothing to run" "$work/moved_batch.txt" || fail "a moved, finished batch should run nothing"
"$lmkit" report "$work/moved" | grep -q "squares: 1 4" || fail "the moved folder's report"
echo '{"square": ' >"$work/moved/cells/x=2/result.json"
"$lmkit" status "$work/moved" >"$work/damaged_result.txt" 2>&1
grep -q "x=2/result.json is damaged" "$work/damaged_result.txt" || fail "a damaged result is not named"
sed -i 's/"cells"/"cells_renamed"/' "$work/moved/recipe.json"
"$lmkit" status "$work/moved" >"$work/edited.txt" 2>&1
[ $? = 2 ] || fail "status of an edited record should exit 2"
grep -q "recipe.json: it lacks its cells" "$work/edited.txt" || fail "the edited record's key is not named"
grep -q "traceback" "$work/edited.txt" && fail "an edited record gave a traceback"

# 6. One folder, two commands: a folder begun by `lmkit run` (cell 2 failed) is finished by
# `lmkit batch`, and a batch's folder by `lmkit run`; status and report read either.
TINY_FAIL=2 "$lmkit" run "$here/tiny_recipe.lua" --set out="$work/mixed" >"$work/mixed_run.txt" 2>&1 &&
  fail "the run with a failing cell succeeded"
"$lmkit" batch "$here/tiny_recipe.lua" --set out="$work/mixed" >"$work/mixed_batch.txt" 2>&1 || fail "batch after run: $(cat "$work/mixed_batch.txt")"
grep -q "1 done, 0 running or queued, 1 to run" "$work/mixed_batch.txt" || fail "batch after run should run cell 2 only: $(cat "$work/mixed_batch.txt")"
"$lmkit" status "$work/mixed" | grep -q "2 tasks — 2 done" || fail "status after run and batch"
"$lmkit" batch "$here/tiny_recipe.lua" --set out="$work/mixed" --set base=5 >"$work/mixed_other.txt" 2>&1 &&
  fail "a batch of other settings continued a run's folder"
grep -q "already holds a batch of .*tiny_recipe.lua (2 tasks) (its settings: base = 1 there, 5 now)" "$work/mixed_other.txt" ||
  fail "other settings in a run's folder: $(cat "$work/mixed_other.txt")"
TINY_FAIL=2 "$lmkit" batch "$here/tiny_recipe.lua" --set out="$work/mixed2" >"$work/mixed2_batch.txt" 2>&1
"$lmkit" run "$here/tiny_recipe.lua" --set out="$work/mixed2" >"$work/mixed2_run.txt" 2>&1 || fail "run after batch: $(cat "$work/mixed2_run.txt")"
grep -q "squares: 1 4" "$work/mixed2_run.txt" || fail "run after batch: no whole report"
grep -q '"backend": "local"' "$work/mixed2/recipe.json" || fail "the run dropped the batch's record"
"$lmkit" status "$work/mixed2" | grep -q "2 tasks — 2 done" || fail "status after batch and run"

# 4. SIGTERM to the batch: tasks save their state (exit 75); the next batch resumes both.
"$lmkit" batch "$here/train_recipe.lua" --jobs 2 --threads 1 --set out="$work/train" --set step_delay=0.01 >"$work/train1.txt" 2>&1 &
batch_pid=$!
for _ in $(seq 1 1800); do
  [ -s "$work/train/cells/seed=1/run/metrics.jsonl" ] && [ -s "$work/train/cells/seed=2/run/metrics.jsonl" ] && break
  kill -0 $batch_pid 2>/dev/null || break
  sleep 0.1
done
kill -TERM $batch_pid
wait $batch_pid
status=$?
[ $status = 75 ] || fail "a batch stopped by SIGTERM should exit 75, got $status"
grep -q "2 preempted" "$work/train1.txt" || fail "both tasks should be preempted"
# 4b. Ctrl-C (SIGINT to the batch alone): the pool stops its tasks the same way, exit 130.
"$lmkit" batch "$here/train_recipe.lua" --jobs 2 --threads 1 --set out="$work/train" --set step_delay=0.01 >"$work/train_int.txt" 2>&1 &
batch_pid=$!
for _ in $(seq 1 600); do
  grep -q "start  task 2" "$work/train_int.txt" && break
  sleep 0.1
done
sleep 1
kill -INT $batch_pid
wait $batch_pid
status=$?
[ $status = 130 ] || fail "a batch stopped by Ctrl-C should exit 130, got $status"
grep -q "the running tasks saved their state" "$work/train_int.txt" || fail "Ctrl-C should say the tasks saved their state"
"$lmkit" batch "$here/train_recipe.lua" --jobs 2 --threads 1 --set out="$work/train" --set step_delay=0.01 >"$work/train2.txt" 2>&1 ||
  fail "resuming the batch failed"
grep -q "Resuming" "$work/train/batch/logs/task-1.log" || fail "task 1 did not resume from its state"
# The reference: cell 1 without interruption, in a folder of its own.
"$lmkit" run "$here/train_recipe.lua" --threads 1 --set out="$work/reference" --set task=1 >"$work/reference.txt" 2>&1 ||
  fail "the reference run failed"
cmp -s "$work/train/cells/seed=1/result.json" "$work/reference/cells/seed=1/result.json" ||
  fail "the resumed task's result differs from an uninterrupted run's: $(cat "$work"/*/cells/seed=1/result.json)"
echo "batch local ok"
rm -rf "$work"

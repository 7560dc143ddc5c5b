#!/bin/bash
# one_writer.sh LMKIT WORKDIR: one writer per run directory and per batch folder. A second `lmkit run`
# on a live run's directory or task is refused, naming the holder, also when the lock's record file
# was deleted by hand (the lock is the folder's); after the holder is SIGKILLed its lock is
# gone with it and the next run goes ahead; two `lmkit batch` started at the same moment on one
# folder run each task once (the second is refused, or finds nothing left to run).
set -u
lmkit=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; for f in "$work"/*.txt; do echo "--- $f"; cat "$f"; done; exit 1; }
wait_for_file() {  # wait_for_file FILE PID: until FILE is non-empty (or PID has ended)
  for _ in $(seq 1 1800); do
    [ -s "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# 1. A live run's directory: a second writer is refused with the holder named.
"$lmkit" run "$here/train_recipe.lua" --threads 1 --set out="$work/a" --set task=1 --set step_delay=0.05 \
  >"$work/first.txt" 2>&1 &
first=$!
wait_for_file "$work/a/cells/seed=1/run/metrics.jsonl" $first || fail "the first run did not start training"
state_before=$(cat "$work/a/batch/tasks/1.json")
"$lmkit" run "$here/train_recipe.lua" --threads 1 --set out="$work/a" --set task=1 >"$work/second.txt" 2>&1 &&
  fail "a second writer of the same task was accepted"
grep -q "tasks/1' is in use: it is held by pid $first on host" "$work/second.txt" ||
  fail "no clear message naming the holder (pid $first) for a task in use"
[ "$(cat "$work/a/batch/tasks/1.json")" = "$state_before" ] || fail "the refused task rewrote the task's state"
# The run directory's own lock, and the folder's lock outliving a deleted record: the whole recipe
# (no task) reaches cell 1's run directory and is refused there, even with run/.lock deleted by hand.
rm -f "$work/a/cells/seed=1/run/.lock"
"$lmkit" run "$here/train_recipe.lua" --threads 1 --set out="$work/a" >"$work/second_run.txt" 2>&1 &&
  fail "a second writer on a live run directory was accepted (its .lock deleted)"
grep -q "run' is in use: it is held by another process (its record" "$work/second_run.txt" ||
  fail "no clear message for a run directory in use whose record was deleted"
grep -q "Resuming" "$work/a/cells/seed=1/run/log.txt" && fail "the second writer resumed the live run"

# 2. SIGKILL: no stale lock to clean by hand; the next run goes ahead.
kill -KILL $first
wait $first 2>/dev/null
"$lmkit" run "$here/train_recipe.lua" --threads 1 --set out="$work/a" --set task=1 --set epochs=1 >"$work/third.txt" 2>&1 ||
  fail "after its holder was killed, the run directory stayed locked"

# 3. Two batches at the same moment on one folder: each task runs once.
"$lmkit" batch "$here/train_recipe.lua" --threads 1 --set out="$work/b" --set epochs=1 --set step_delay=0.01 >"$work/batch1.txt" 2>&1 &
one=$!
"$lmkit" batch "$here/train_recipe.lua" --threads 1 --set out="$work/b" --set epochs=1 --set step_delay=0.01 >"$work/batch2.txt" 2>&1 &
two=$!
wait $one; status_one=$?
wait $two; status_two=$?
refused=0
for f in "$work/batch1.txt" "$work/batch2.txt"; do
  grep -q "batch' is in use: it is held by pid" "$f" && refused=$((refused + 1))
done
[ $((status_one + status_two)) -le 2 ] || fail "batch exit statuses $status_one and $status_two"
[ $refused -le 1 ] || fail "both batches were refused"
for task in 1 2; do
  grep -q '"attempt": 1' "$work/b/batch/tasks/$task.json" || fail "task $task ran more than once: $(cat "$work/b/batch/tasks/$task.json")"
done
[ "$(grep -c '"type": *"epoch"' "$work/b/cells/seed=1/run/metrics.jsonl")" = 1 ] ||
  fail "cell 1 has more than one epoch row: $(cat "$work/b/cells/seed=1/run/metrics.jsonl")"
echo "one writer ok"
rm -rf "$work"

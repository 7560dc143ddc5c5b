#!/bin/bash
# preempt_resume.sh LMKIT WORKDIR: a run preempted by SIGTERM exits with status 75 (requeue), the
# same command then resumes it, and the result equals a run that was never interrupted.
set -u
lmkit=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
"$lmkit" run "$here/preempt_run.lua" --set run_dir="$work/whole" >"$work/whole.log" 2>&1 ||
  { echo "the uninterrupted run failed:"; cat "$work/whole.log"; exit 1; }
"$lmkit" run "$here/preempt_run.lua" --set run_dir="$work/split" --set preempt_at=150 >"$work/first.log" 2>&1
status=$?
if [ "$status" -ne 75 ]; then
  echo "expected exit status 75 after SIGTERM, got $status:"; cat "$work/first.log"; exit 1
fi
grep -q "preempted" "$work/first.log" || { echo "no preemption message:"; cat "$work/first.log"; exit 1; }
"$lmkit" run "$here/preempt_run.lua" --set run_dir="$work/split" >"$work/second.log" 2>&1 ||
  { echo "the resumed run failed:"; cat "$work/second.log"; exit 1; }
grep -q "Resuming" "$work/second.log" || { echo "the second run did not resume:"; cat "$work/second.log"; exit 1; }
"$lmkit" run "$here/compare_runs.lua" -- "$work/whole" "$work/split" && rm -rf "$work"

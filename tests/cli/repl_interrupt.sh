#!/usr/bin/env bash
# repl_interrupt.sh LMKIT WORKDIR: Ctrl-C (SIGINT) while lmkit.train runs in the REPL stops the run
# at the next step boundary with its state saved (as SIGTERM does), returns to the prompt with the
# session intact, and the same call then resumes it to the result of a run that never stopped
# (lmkit.resume would too, but without the run's callbacks, which change its lr).
# `lmkit run` interrupted the same way exits with 130 and resumes too; so does one interrupted in a
# Lua loop or in lmkit.process.sleep (interrupted_script.lua).
set -u
lmkit=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
"$lmkit" run "$here/preempt_run.lua" --set run_dir="$work/whole" >"$work/whole.log" 2>&1 ||
  { echo "the uninterrupted run failed:"; cat "$work/whole.log"; exit 1; }

output=$(printf '%s\n' \
  "train = dofile('$here/signalled_run.lua')" \
  "session_value = 42" \
  "ok, err = pcall(train, '$work/repl', {signal = 'INT', at = 150})" \
  "print('train returned', ok, err)" \
  "summary = lmkit.open_run('$work/repl'):summary()" \
  "print('status', summary.status, summary.stop_reason)" \
  "print('session', session_value)" \
  "run = train('$work/repl')" \
  "print('resumed', run:summary().status)" | "$lmkit" repl 2>&1)
printf '%s\n' "$output"
expect() {
  printf '%s\n' "$output" | grep -Fq -- "$1" || { echo "missing in the REPL's output: $1" >&2; exit 1; }
}
expect "[Ctrl-C] stopping at the next safe point"
expect "train returned	false"
expect "training run interrupted (Ctrl-C) at epoch"
expect "status	preempted	interrupted (Ctrl-C)"
expect "session	42"
expect "resumed	finished"
"$lmkit" run "$here/compare_runs.lua" -- "$work/whole" "$work/repl" || exit 1

"$lmkit" run "$here/preempt_run.lua" --set run_dir="$work/script" --set preempt_at=150 --set signal=INT \
  >"$work/script.log" 2>&1
status=$?
[ "$status" -eq 130 ] || { echo "expected exit status 130 after Ctrl-C, got $status:"; cat "$work/script.log"; exit 1; }
"$lmkit" run "$here/preempt_run.lua" --set run_dir="$work/script" >"$work/script2.log" 2>&1 ||
  { echo "the resumed script run failed:"; cat "$work/script2.log"; exit 1; }
"$lmkit" run "$here/compare_runs.lua" -- "$work/whole" "$work/script" || exit 1

# Ctrl-C outside training, in a Lua loop or in lmkit.process.sleep: 130 too, and at once.
for wait in loop sleep; do
  start=$(date +%s)
  "$lmkit" run "$here/interrupted_script.lua" --set wait=$wait >"$work/$wait.log" 2>&1
  status=$?
  [ "$status" -eq 130 ] || { echo "Ctrl-C in a $wait: expected exit status 130, got $status:"; cat "$work/$wait.log"; exit 1; }
  [ $(( $(date +%s) - start )) -lt 20 ] || { echo "Ctrl-C in a $wait took effect only after the wait"; exit 1; }
done
grep -q "interrupted!" "$work/loop.log" || { echo "no 'interrupted!' for a Lua loop:"; cat "$work/loop.log"; exit 1; }
grep -q "lmkit.process.sleep: waiting interrupted (Ctrl-C)" "$work/sleep.log" ||
  { echo "no clear message for an interrupted sleep:"; cat "$work/sleep.log"; exit 1; }
echo "interrupt ok"
rm -rf "$work"

#!/bin/bash
# folder_status.sh LMKIT WORKDIR: `lmkit status` and `lmkit report` on a recipe's output folder (its
# cells), on a cell's training run (finished, running, stopped) and on a folder that is neither.
set -u
lmkit=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "folder status: $1"; exit 1; }
rm -rf "$work"

"$lmkit" run "$here/train_recipe.lua" --set out="$work" --set epochs=2 --set task=1 >/dev/null || fail "task 1 failed"
out=$("$lmkit" status "$work"); rc=$?
[ "$rc" = 3 ] || fail "a recipe folder with a pending cell: exit $rc, not 3: $out"
echo "$out" | grep -Eq "^ +1  seed=1 +done$" || fail "cell 1 not done: $out"
echo "$out" | grep -Eq "^ +2  seed=2 +pending$" || fail "cell 2 not pending: $out"
echo "$out" | grep -q "1 of 2 cells done" || fail "no count: $out"
# The report with the folder's own settings (epochs=2, recorded in recipe.json).
out=$("$lmkit" report "$work") || fail "report failed: $out"
echo "$out" | grep -Eq "^test ppl: [0-9.]+ -$" || fail "report: $out"

run="$work/cells/seed=1/run"
out=$("$lmkit" status "$run"); rc=$?
[ "$rc" = 0 ] || fail "a finished run: exit $rc: $out"
echo "$out" | grep -Eq "^Run $run: finished, epoch 2 of 2, best valid ppl [0-9.]+ \(epoch [12]\), test ppl [0-9.]+$" ||
  fail "finished run: $out"
out=$("$lmkit" report "$run") || fail "run report failed: $out"
echo "$out" | grep -Eq "^ +2 +[0-9.]+ +[0-9.]+ +[0-9.]+$" || fail "no epoch 2 line: $out"
echo "$out" | grep -qF "plot: $run/learning_curve.png" || fail "no plot: $out"
[ -s "$run/learning_curve.png" ] || fail "learning_curve.png is empty or missing"

# Running: another process holds the run directory's lock, as a training run does.
out=$("$lmkit" run "$here/hold_run_lock.lua" -- "$lmkit" "$run")
echo "$out" | grep -qF "Run $run: running, epoch 2 of 2" || fail "a locked run is not running: $out"
echo "$out" | grep -Eq "training in pid [0-9]+ on host .*: training run $run" || fail "no holder named: $out"
echo "$out" | grep -q "^exit 3$" || fail "a running run: not exit 3: $out"

# Stopped: no summary and nobody training it (a killed process), its state.ckpt still there.
mv "$run/summary.json" "$run/summary.moved"
out=$("$lmkit" status "$run"); rc=$?
mv "$run/summary.moved" "$run/summary.json"
[ "$rc" = 3 ] || fail "a stopped run: exit $rc: $out"
echo "$out" | grep -qF "Run $run: stopped, epoch 2 of 2" || fail "not stopped: $out"
echo "$out" | grep -qF "lmkit resume $run (or lmkit.resume(\"$run\") in Lua) continues it" || fail "no way to continue: $out"

# The same from the shell: `lmkit resume` trains a copy of the finished run on, `lmkit finetune`
# adds a finetune stage at its own rate (the copy keeps the recipe's cell as it was).
cp -r "$run" "$work-more"
out=$("$lmkit" resume "$work-more" --epochs 3 --device cpu 2>&1) || fail "lmkit resume --epochs 3 failed: $out"
echo "$out" | grep -qF "Continuing the finished run $work-more: epochs 2 → 3" || fail "resume did not say what it trains: $out"
echo "$out" | grep -Eq "^Run $work-more: finished, epoch 3 of 3" || fail "resume: not 3 epochs: $out"
out=$("$lmkit" finetune "$work-more" --epochs 1 --lr 2.5 --device cpu 2>&1) || fail "lmkit finetune failed: $out"
echo "$out" | grep -qF "with ASGD at lr 2.5" || fail "finetune: not at its own rate: $out"
echo "$out" | grep -Eq "^Run $work-more: finished, epoch 4 of 4" || fail "finetune: no finetune epoch: $out"
out=$("$lmkit" finetune "$work-more" --epochs 2 --lr 3 --device cpu 2>&1); rc=$?
[ "$rc" = 2 ] || fail "a finetune at another rate inside the stage: exit $rc: $out"
echo "$out" | grep -qF "finetune_lr cannot change now" || fail "no message for a changed finetune rate: $out"
out=$("$lmkit" resume "$here" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "resume of a folder without a run: exit $rc: $out"
echo "$out" | grep -qF "nothing to resume in '$here'" || fail "resume: no message for a folder without a run: $out"
rm -rf "$work-more"

# Both cells side by side: `lmkit compare` on the recipe folder, with its plot where asked.
"$lmkit" run "$here/train_recipe.lua" --set out="$work" --set epochs=2 --set task=2 >/dev/null || fail "task 2 failed"
out=$("$lmkit" compare "$work" --plot "$work/compare.svg") || fail "compare failed: $out"
echo "$out" | grep -qF "2 runs compared" || fail "compare: $out"
echo "$out" | grep -Eq "^ +$work/seed=2 +finished +2/2 +[0-9.]+ +[12] +[0-9.]+ " || fail "compare: no row for cell 2: $out"
echo "$out" | grep -Eq "^ +run +train\.seed$" || fail "compare: the seed is not the one setting that differs: $out"
echo "$out" | grep -qF "plot: $work/compare.svg" || fail "compare: no plot named: $out"
# The legend names each curve by the setting that differs, not by its folder's path.
grep -qF ">seed=1<" "$work/compare.svg" || fail "compare.svg has no curve named seed=1"
grep -qF ">seed=2<" "$work/compare.svg" || fail "compare.svg has no curve named seed=2"
grep -qF "$work/" "$work/compare.svg" && fail "compare.svg names a curve by its folder's path"
# A number the recipe recorded itself (run:record in on_epoch_end), by epoch; a name no run records
# is refused with the names they do.
out=$("$lmkit" compare "$work" --metric valid_ppl_twice --plot "$work/twice.svg") || fail "compare --metric failed: $out"
grep -qF "valid_ppl_twice" "$work/twice.svg" || fail "twice.svg does not name the number it shows"
out=$("$lmkit" compare "$work" --metric no_such_number --plot "$work/none.svg" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "compare --metric of a number no run records: exit $rc: $out"
echo "$out" | grep -qF "no plot: no run records 'no_such_number' per epoch; their records have " ||
  fail "compare --metric: no message for an unrecorded number: $out"
echo "$out" | grep -qF "valid_ppl_twice" || fail "compare --metric: the recorded numbers are not named: $out"
out=$("$lmkit" compare "$work" --metric "valid ppl" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "compare --metric with a space: exit $rc: $out"
echo "$out" | grep -qF -- "--metric valid ppl: a number's name in the runs' records" || fail "compare --metric: $out"
out=$("$lmkit" compare "$here" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "compare of a folder without runs: exit $rc: $out"
echo "$out" | grep -qF "holds no training run: give a run directory" || fail "compare: no message: $out"

# A cell whose run raised: failed, with its message; the rest is named as a command.
TINY_FAIL=2 "$lmkit" run "$here/tiny_recipe.lua" --set out="$work-failed" >/dev/null 2>&1 && fail "TINY_FAIL=2 did not fail"
out=$("$lmkit" status "$work-failed"); rc=$?
[ "$rc" = 1 ] || fail "a recipe folder with a failed cell: exit $rc, not 1: $out"
echo "$out" | grep -Eq "^ +2  x=2 +failed +.*cell x=2 fails on purpose" || fail "cell 2 not failed: $out"
echo "$out" | grep -qF "1 of 2 cells done; the rest: lmkit run $here/tiny_recipe.lua --set out=$work-failed" ||
  fail "no command for the rest: $out"
rm -rf "$work-failed"

# Damaged records: named in lmkit's words, never a library's message.
mkdir -p "$work-damaged/cells/x=1"
echo '{"recipe": "r.lua", "name": null, "settings": {}, "cells": ["x=1", "../../etc"]}' >"$work-damaged/recipe.json"
out=$("$lmkit" status "$work-damaged" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "a recipe.json with a path for a cell: exit $rc: $out"
echo "$out" | grep -qF "recipe.json: 'cells'[2] has no cell id that names a folder under cells/" || fail "no message for a path as a cell: $out"
echo '{"recipe": "r.lua", "name": null, "settings": {}, "cells": ["x=1"]}' >"$work-damaged/recipe.json"
echo '[1' >"$work-damaged/cells/x=1/result.json"
out=$("$lmkit" status "$work-damaged" 2>&1); rc=$?
[ "$rc" = 3 ] || fail "a damaged result: exit $rc: $out"
echo "$out" | grep -Eq "^ +1  x=1 +damaged +result.json is not a JSON object" || fail "a damaged result is not damaged: $out"
rm -rf "$work-damaged"

out=$("$lmkit" status "$here" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "a folder of no results: exit $rc: $out"
echo "$out" | grep -qF "holds none of lmkit's results" || fail "no message: $out"
rm -rf "$work"
echo "folder status: every check passed"

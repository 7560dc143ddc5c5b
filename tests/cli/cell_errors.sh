#!/bin/bash
# cell_errors.sh LMKIT WORKDIR: what `lmkit run` shows when a recipe's cell goes wrong. A bug in the
# recipe: its message and a traceback of the recipe's own frames (lmkit's left out), kept in
# failed.json too. A mistake an lmkit function names: the message alone. Ctrl-C: the message alone,
# exit 130, and the cell is not marked failed (a training cell resumes on the next run).
set -u
lmkit=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
recipe="$here/cell_errors_recipe.lua"
rm -rf "$work"
mkdir -p "$work"
fail() { echo "cell errors: $1"; exit 1; }

out=$("$lmkit" run "$recipe" --set out="$work/bug" --set kind=bug 2>&1); rc=$?
[ "$rc" = 1 ] || fail "a bug: exit $rc, not 1: $out"
echo "$out" | grep -qF "cell_errors_recipe.lua:13: attempt to index a nil value (local 't')" || fail "a bug: no message: $out"
echo "$out" | grep -qF "stack traceback:" || fail "a bug: no traceback: $out"
echo "$out" | grep -qF "cell_errors_recipe.lua:13: in " || fail "a bug: the traceback misses the recipe's frame: $out"
echo "$out" | grep -qF "cell_errors_recipe.lua:22: in " || fail "a bug: the traceback misses the caller: $out"
echo "$out" | grep -q "bindings/lua/" && fail "a bug: the traceback goes through lmkit's own Lua: $out"
echo "$out" | grep -Eq "\([0-9]+ frames? of lmkit's own Lua left out\)" || fail "a bug: the frames left out are not said: $out"
grep -qF "cell_errors_recipe.lua:13: in " "$work/bug/cells/x=1/failed.json" || fail "a bug: failed.json has no traceback"
grep -q "bindings/lua/" "$work/bug/cells/x=1/failed.json" && fail "a bug: failed.json's traceback goes through lmkit's Lua"

out=$("$lmkit" run "$recipe" --set out="$work/mistake" --set kind=mistake 2>&1); rc=$?
[ "$rc" = 1 ] || fail "a mistake: exit $rc, not 1: $out"
echo "$out" | grep -qF "lmkit.read_tensors: cannot open tensor file 'no/such/outputs.npy'" || fail "a mistake: no message: $out"
echo "$out" | grep -qF "stack traceback" && fail "a mistake: a traceback: $out"

for kind in loop train; do
  out=$("$lmkit" run "$recipe" --set out="$work/$kind" --set kind=$kind 2>&1); rc=$?
  [ "$rc" = 130 ] || fail "Ctrl-C ($kind): exit $rc, not 130: $out"
  echo "$out" | grep -qF "stack traceback" && fail "Ctrl-C ($kind): a traceback: $out"
  [ -e "$work/$kind/cells/x=1/failed.json" ] && fail "Ctrl-C ($kind): the cell was marked failed"
  out=$("$lmkit" status "$work/$kind" 2>&1)
  echo "$out" | grep -q "failed" && fail "Ctrl-C ($kind): status says failed: $out"
done
[ -s "$work/train/cells/x=1/run/state.ckpt" ] || fail "Ctrl-C (train): no state saved"
echo "cell errors: every check passed"

#!/bin/bash
# recipe_tasks.sh LMKIT WORKDIR: task 2 alone, then the report marks task 1 missing; a full run
# fills it in; --set overrides reach the grid; a setting that changes results, not cells, is refused
# in a folder whose cells were made without it (a run and a report alike, changing nothing), and runs
# in its own; a setting that chooses cells shares the finished ones.
set -u
lmkit=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
"$lmkit" run "$here/tiny_recipe.lua" --set out="$work" --set task=2 || exit 1
[ -f "$work/cells/x=2/result.json" ] || { echo "task 2 left no result.json"; exit 1; }
"$lmkit" run "$here/tiny_recipe.lua" --set out="$work" --set report_only=true | grep -q "squares: - 4" ||
  { echo "report_only did not mark task 1 missing"; exit 1; }
"$lmkit" run "$here/tiny_recipe.lua" --set out="$work" --set base=3 | grep -q "squares: 9 16" ||
  { echo "--set base=3 did not reach the grid"; exit 1; }
"$lmkit" run "$here/tiny_recipe.lua" --set out="$work" | grep -q "squares: 1 4" || { echo "the full run failed"; exit 1; }
# The tidy table: one row per cell and metric, the grid field a column, numbers as numbers.
[ "$(cat "$work/results.csv")" = "$(printf 'cell,x,metric,value\nx=1,1,square,1\nx=2,2,square,4')" ] ||
  { echo "results.csv is not the tidy table:"; cat "$work/results.csv"; exit 1; }
for mode in "" "--set report_only=true"; do
  # shellcheck disable=SC2086
  out=$("$lmkit" run "$here/tiny_recipe.lua" --set out="$work" --set offset=5 $mode 2>&1) &&
    { echo "offset=5 ($mode) was served the results of offset=0: $out"; exit 1; }
  echo "$out" | grep -qF "2 cells (x=1, ...) in $work hold results made with other settings (offset = 0 there, 5 now)" ||
    { echo "no settings message ($mode): $out"; exit 1; }
  # In lmkit's words alone: no Lua position, no binding's name before them.
  echo "$out" | grep -q "^lmkit: recipe tiny: 2 cells" || { echo "the settings message does not start with the recipe ($mode): $out"; exit 1; }
  if [ -z "$mode" ]; then
    echo "$out" | grep -qF -- "--set out=$work-offset5" || { echo "no folder suggested: $out"; exit 1; }
  else
    echo "$out" | grep -qF -- "Report it with the folder's settings (--set offset=0)" || { echo "no way to report: $out"; exit 1; }
  fi
done
[ "$(cat "$work/cells/x=1/result.json" | tr -d ' \n')" = '{"square":1}' ] || { echo "a refused run changed a result"; exit 1; }
# A damaged settings.json proves nothing: its cell is not taken as another run's.
cp "$work/cells/x=1/settings.json" "$work/settings.kept"
echo '{oops' >"$work/cells/x=1/settings.json"
out=$("$lmkit" run "$here/tiny_recipe.lua" --set out="$work" 2>&1) && { echo "a damaged settings.json was taken: $out"; exit 1; }
echo "$out" | grep -qF "its settings.json is damaged" || { echo "no damaged-settings message: $out"; exit 1; }
mv "$work/settings.kept" "$work/cells/x=1/settings.json"
# A refused run changed nothing either: the folder's report is still of its own settings.
"$lmkit" report "$work" | grep -q "squares: 1 4" || { echo "the folder's report changed after a refused run"; exit 1; }
# A setting that chooses the grid's cells (base) takes the finished cells it shares with their results.
"$lmkit" run "$here/tiny_recipe.lua" --set out="$work" --set base=2 | grep -q "squares: 4 9" ||
  { echo "base=2 refused cells it shares with base=1 and base=3"; exit 1; }
"$lmkit" run "$here/tiny_recipe.lua" --set out="$work-offset5" --set offset=5 | grep -q "squares: 6 9" ||
  { echo "offset=5 in its own folder failed"; exit 1; }
rm -rf "$work-offset5"
"$lmkit" run "$here/tiny_recipe.lua" --set out="$work" | grep -q "squares: 1 4" || { echo "the rerun failed"; exit 1; }
rm -rf "$work"
echo "recipe tasks: every check passed"

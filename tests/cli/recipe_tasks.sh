#!/bin/bash
# recipe_tasks.sh LMKIT WORKDIR: task 2 alone, then the report marks task 1 missing; a full run
# fills it in; --set overrides reach the grid.
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
"$lmkit" run "$here/tiny_recipe.lua" --set out="$work" && rm -rf "$work"

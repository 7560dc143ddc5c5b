#!/usr/bin/env bash
# recipe_anywhere.sh LMKIT SOURCE_DIR WORKDIR: the "write your own ablation" recipe of
# docs/recipes.md, saved in a folder outside lmkit's tree and run from there, finds lmkit's presets
# (`require "presets.awd_lstm"`), runs one cell, and reports it with the yardsticks.
set -u
lmkit=$1
source_dir=$2
work=$3
rm -rf "$work"
mkdir -p "$work/elsewhere"
awk '/^## Write your own ablation/ {section = 1} section && /^```lua$/ {inside = 1; next}
     inside && /^```$/ {exit} inside {print}' "$source_dir/docs/recipes.md" >"$work/elsewhere/my_ablation.lua"
grep -q 'require "presets.awd_lstm"' "$work/elsewhere/my_ablation.lua" ||
  { echo "no example with presets found in docs/recipes.md"; exit 1; }
cd "$work/elsewhere" || exit 1
LMKIT_PROGRESS=off "$lmkit" run my_ablation.lua --set seeds=1 --set task=1 --set out="$work/out" || exit 1
[ -f "$work/out/cells/head=softmax,seed=1/result.json" ] || { echo "the cell left no result.json"; exit 1; }
# Its report carries the built-in recipes' yardsticks: the run's summary has the unigram model's
# perplexity, which t:note_yardsticks reads.
report=$(LMKIT_PROGRESS=off "$lmkit" run my_ablation.lua --set seeds=1 --set report_only=true --set out="$work/out") || exit 1
echo "$report" | grep -q "Yardsticks on the test split: the unigram model .* has perplexity [0-9]" ||
  { echo "the report has no yardsticks:"; echo "$report"; exit 1; }
grep -q '"unigram_ppl"' "$work/out/cells/head=softmax,seed=1/result.json" ||
  { echo "the cell's result (the run's summary) has no unigram_ppl"; exit 1; }
echo "recipe outside lmkit's tree ok"
rm -rf "$work"

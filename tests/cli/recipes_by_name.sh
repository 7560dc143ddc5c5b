#!/usr/bin/env bash
# recipes_by_name.sh LMKIT WORKDIR: `lmkit recipes` lists every recipe (names from the files, tables
# from their declarations), `lmkit run NAME --help` prints a recipe's settings with defaults and
# docs, `lmkit run NAME` runs lmkit's recipe from any folder, and an unknown name is named.
set -u
lmkit=$1
work=$2
rm -rf "$work"
mkdir -p "$work/elsewhere"
cd "$work/elsewhere" || exit 1
fail() { echo "FAILED: $*"; exit 1; }

list=$("$lmkit" recipes) || fail "lmkit recipes exited non-zero"
printf '%s\n' "$list"
for name in gss_grid compare_heads press_robustness pairwise_kl quickstart; do
  printf '%s\n' "$list" | grep -Eq "^  $name " || fail "$name is not listed"
done
printf '%s\n' "$list" | grep -q "gss_grid .*Tables 4.4/4.5" || fail "gss_grid's tables are not shown"

help=$("$lmkit" run gss_grid --help) || fail "lmkit run gss_grid --help exited non-zero"
printf '%s\n' "$help"
printf '%s\n' "$help" | grep -Eq '^  scale +=  ?"tiny" +tiny \| small \| paper' || fail "the scale setting and its doc are missing"
printf '%s\n' "$help" | grep -Eq '^  limit += 0 ' || fail "the limit setting is missing"

"$lmkit" run gss_grid --set limit=1 --set epochs=1 --set out="$work/out" >"$work/run.log" 2>&1 ||
  { cat "$work/run.log"; fail "gss_grid by name failed"; }
[ -f "$work/out/report.md" ] || fail "gss_grid by name left no report"

out=$("$lmkit" run no_such_recipe 2>&1) && fail "an unknown recipe name succeeded"
printf '%s\n' "$out" | grep -q "no recipe 'no_such_recipe' in .*recipes (\`lmkit recipes\` lists them)" ||
  fail "the unknown name's error: $out"
echo "recipes by name ok"
rm -rf "$work"

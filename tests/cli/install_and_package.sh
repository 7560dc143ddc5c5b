#!/usr/bin/env bash
# install_and_package.sh BUILD_DIR WORKDIR: lmkit as a user installs it. `cmake --install` into a
# fresh prefix, and `cpack -G DEB` → lmkit_<version>_amd64.deb unpacked into a temporary root (dpkg -x:
# the files a `dpkg -i` would put under /usr). Then, from a folder outside the source tree and with
# nothing pointing at it: the installed lmkit lists its recipes and their settings; the package's
# runs the quickstart and gss_grid (one cell) by name, and its Lua module loads in the stock lua5.4.
set -u
build=$1
work=$2
rm -rf "$work"
mkdir -p "$work/elsewhere"
fail() { echo "FAILED: $*"; exit 1; }
unset LMKIT_RECIPES

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install"; }
for f in bin/lmkit lib/lua/5.4/lmkit.so share/lmkit/recipes/gss_grid.lua share/lmkit/recipes/presets/awd_lstm.lua \
         share/lmkit/recipes/data/table5_1_contexts.txt share/doc/lmkit/recipes.md share/doc/lmkit/LICENSE \
         share/doc/lmkit/CITATION.cff share/man/man1/lmkit.1; do
  [ -e "$work/prefix/$f" ] || fail "the installation lacks $f"
done
cd "$work/elsewhere" || exit 1
"$work/prefix/bin/lmkit" recipes | grep -q "^  gss_grid " || fail "the installed lmkit does not list gss_grid"
"$work/prefix/bin/lmkit" recipes | grep -q "Recipes in $work/prefix/share/lmkit/recipes" ||
  fail "the installed lmkit does not use its own recipes folder"
"$work/prefix/bin/lmkit" run compare_heads --help | grep -q "seeds" || fail "the installed lmkit's recipe help"

(cd "$build" && cpack -G DEB -B "$work/package" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$work/package"/lmkit_*_amd64.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { cat "$work/cpack.log"; fail "no lmkit_<version>_amd64.deb"; }
echo "package: $(basename "$deb") ($(du -h "$deb" | cut -f1))"
dpkg-deb --info "$deb" | grep -E "^ (Package|Version|Architecture|Depends|Recommends):" || fail "dpkg-deb --info"
dpkg-deb --field "$deb" Depends | grep -q "libtorch" || fail "the package does not depend on Debian's libtorch"
dpkg-deb --contents "$deb" >"$work/contents.txt" || fail "dpkg-deb --contents"
grep -q "./usr/share/lmkit/recipes/gss_grid.lua" "$work/contents.txt" || fail "the package lacks the recipes"
dpkg -x "$deb" "$work/root" || fail "dpkg -x"
lmkit="$work/root/usr/bin/lmkit"
"$lmkit" --version || fail "the packaged lmkit does not start"
"$lmkit" run quickstart --set run_dir="$work/quickstart-run" >"$work/quickstart.log" 2>&1 ||
  { tail -30 "$work/quickstart.log"; fail "the packaged quickstart"; }
grep -q "test perplexity" "$work/quickstart.log" || fail "the quickstart printed no test perplexity"
"$lmkit" run gss_grid --set scale=tiny --set limit=1 --set epochs=1 --set out="$work/gss" >"$work/gss.log" 2>&1 ||
  { tail -30 "$work/gss.log"; fail "the packaged gss_grid"; }
[ -f "$work/gss/report.md" ] || fail "gss_grid left no report"
if command -v lua5.4 >/dev/null; then
  lua5.4 -e "package.cpath = '$work/root/usr/lib/lua/5.4/?.so;' .. package.cpath; local lmkit = require 'lmkit'; \
             assert(lmkit.zeros(2, 3):size(2) == 3); print('module ok')" 2>&1 | grep -q "module ok" ||
    fail "the packaged Lua module does not load in lua5.4"
fi
echo "install and package ok"
rm -rf "$work"

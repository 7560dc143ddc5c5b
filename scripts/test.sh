#!/usr/bin/env bash
# Runs lmkit's whole test suite — GoogleTest, Lua and command-line tests, all through CTest —
# building first if needed.
#
#   bash scripts/test.sh                  # the suite on ./build
#   bash scripts/test.sh --sanitize       # the suite on the ASan+UBSan build in ./build-asan, less the
#                                         # whole workflows (label workflow: recipes that train model
#                                         # after model, batch grids), which the normal suite runs
#   bash scripts/test.sh -L lua           # extra arguments go to ctest (labels: cpp lua cli recipe
#                                         # workflow fuzz gpu package); with a selection of one's own
#                                         # (-L, -LE, -R, -E, -I), --sanitize leaves out nothing
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

build_dir=$root/build
cmake_extra=()
ctest_extra=()
sanitize=no
own_selection=no
for option in "$@"; do
  case $option in
    --sanitize) sanitize=yes; build_dir=$root/build-asan; cmake_extra+=(-DLMKIT_SANITIZE=ON) ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -L|-LE|-R|-E|-I|--label-regex|--label-exclude|--tests-regex|--exclude-regex|--tests-information|-L*|-R*|-E*|-I*)
      own_selection=yes; ctest_extra+=("$option") ;;
    *) ctest_extra+=("$option") ;;
  esac
done
# CTest ANDs repeated -LE options (a test is left out only when every one matches), so the
# sanitizer pass's own exclusion is added only when the caller chose nothing.
if [ $sanitize = yes ] && [ $own_selection = no ]; then
  ctest_extra+=(-LE workflow)
fi

if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_extra[@]}"
fi
cmake --build "$build_dir"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 900 --no-tests=error "${ctest_extra[@]}"

#!/usr/bin/env bash
# Runs lmkit's whole test suite — GoogleTest, Lua and command-line tests, all through CTest —
# building first if needed.
#
#   bash scripts/test.sh                  # the suite on ./build
#   bash scripts/test.sh --sanitize       # the suite on the ASan+UBSan build in ./build-asan, less the
#                                         # whole workflows (label workflow: recipes that train model
#                                         # after model, batch grids), which the normal suite runs
#   bash scripts/test.sh -L lua           # extra arguments go to ctest (labels: cpp lua cli recipe workflow fuzz)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

build_dir=$root/build
cmake_extra=()
ctest_extra=()
for option in "$@"; do
  case $option in
    --sanitize) build_dir=$root/build-asan; cmake_extra+=(-DLMKIT_SANITIZE=ON); ctest_extra+=(-LE workflow) ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) ctest_extra+=("$option") ;;
  esac
done

if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_extra[@]}"
fi
cmake --build "$build_dir"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 900 "${ctest_extra[@]}"

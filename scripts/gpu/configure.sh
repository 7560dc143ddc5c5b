#!/usr/bin/env bash
# Configures lmkit with every non-Torch dependency taken from the prefix that
# scripts/gpu/fetch_debs.sh carried (.gpu-deps/), never from the machine's /usr: each one is named
# by an explicit path, so a dependency missing from the prefix fails here instead of being found
# elsewhere. Torch is whichever cmake/LmkitTorch.cmake finds (PyTorch's on a GPU machine).
#
#   bash scripts/gpu/configure.sh BUILD_DIR [cmake arguments...]
#   bash scripts/gpu/configure.sh build-gpu -DLMKIT_CUDA=ON -DLMKIT_CUDA_ARCHITECTURES=90
#
# Source scripts/gpu/carried_deps.sh before building or running tests from BUILD_DIR: the carried
# shared libraries are found through LD_LIBRARY_PATH.

# shellcheck source-path=SCRIPTDIR
set -euo pipefail
lmkit_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: configure.sh BUILD_DIR [cmake arguments...]" >&2; exit 2; }
build_dir=$1; shift
# shellcheck source=carried_deps.sh
source "$lmkit_root/scripts/gpu/carried_deps.sh"

usr=$LMKIT_DEPS_PREFIX
lib=$usr/lib/$LMKIT_DEPS_MULTIARCH
# Debian's multiarch include folder: luaconf.h includes lua5.4-deb-multiarch.h from there. A compiler
# on Debian searches the machine's own /usr/include/x86_64-linux-gnu by itself, never the prefix's.
include_multiarch=$usr/include/$LMKIT_DEPS_MULTIARCH
boost_configs=("$lib"/cmake/Boost-*)
boost_config=${boost_configs[0]}
[ -d "$boost_config" ] || boost_config=""
required=(
  "$usr/include/lua5.4/lua.h" "$include_multiarch/lua5.4-deb-multiarch.h" "$lib/liblua5.4.so" "$usr/bin/lua5.4"
  "$lib/cmake/fmt" "$usr/share/cmake/nlohmann_json" "$usr/share/cmake/CLI11" "$boost_config"
  "$lib/cmake/GTest" "$usr/include/readline/readline.h" "$lib/libreadline.so"
  "$usr/include/lapacke.h" "$lib/liblapacke.so" "$lib/openblas-pthread/libopenblas.so"
  "$usr/include/xxhash.h" "$lib/libxxhash.so" "$usr/include/glpk.h" "$lib/libglpk.so"
  "$usr/include/zlib.h" "$lib/libz.so"
)
for path in "${required[@]}"; do
  if [ -z "$path" ] || [ ! -e "$path" ]; then
    echo "configure.sh: '${path:-a Boost CMake config}' is missing from the carried prefix (rerun scripts/gpu/fetch_debs.sh)" >&2
    exit 1
  fi
done

# CMAKE_LIBRARY_PATH puts OpenBLAS first for FindBLAS/FindLAPACK (BLA_VENDOR narrows them to it);
# the explicit paths cover the dependencies found by find_path/find_library/FindLua.
# CMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES puts the multiarch folder last on every C++ file's include
# path (as -isystem): LUA_INCLUDE_DIR cannot take a second folder (FindLua reads lua.h's version from
# it), and a cmake argument of the caller's own CMAKE_CXX_FLAGS would replace an -isystem there.
# CMakeLists.txt checks at configure time that `#include <lua.hpp>` compiles with these folders.
cmake -S "$lmkit_root" -B "$build_dir" -G Ninja \
  -DCMAKE_PREFIX_PATH="$usr" \
  -DCMAKE_LIBRARY_PATH="$lib/openblas-pthread;$lib" \
  -DCMAKE_INCLUDE_PATH="$usr/include" \
  -DLUA_INCLUDE_DIR="$usr/include/lua5.4" -DLUA_LIBRARY="$lib/liblua5.4.so" \
  -DLUA_INTERPRETER="$usr/bin/lua5.4" \
  -DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES="$include_multiarch" \
  -Dfmt_DIR="$lib/cmake/fmt" \
  -Dnlohmann_json_DIR="$usr/share/cmake/nlohmann_json" \
  -DCLI11_DIR="$usr/share/cmake/CLI11" \
  -DBoost_DIR="$boost_config" -DBoost_NO_SYSTEM_PATHS=ON \
  -DGTest_DIR="$lib/cmake/GTest" \
  -DREADLINE_INCLUDE_DIR="$usr/include" -DREADLINE_LIBRARY="$lib/libreadline.so" \
  -DLAPACKE_INCLUDE_DIR="$usr/include" -DLAPACKE_LIBRARY="$lib/liblapacke.so" \
  -DXXHASH_INCLUDE_DIR="$usr/include" -DXXHASH_LIBRARY="$lib/libxxhash.so" \
  -DGLPK_INCLUDE_DIR="$usr/include" -DGLPK_LIBRARY="$lib/libglpk.so" \
  -DZLIB_INCLUDE_DIR="$usr/include" -DZLIB_LIBRARY="$lib/libz.so" \
  -DBLA_VENDOR=OpenBLAS \
  "$@"

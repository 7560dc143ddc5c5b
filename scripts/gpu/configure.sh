#!/usr/bin/env bash
# Configures lmkit with every non-Torch dependency taken from the prefix that
# scripts/gpu/fetch_debs.sh carried (.gpu-deps/), never from the machine's /usr: each one is named
# by an explicit path, so a dependency missing from the prefix fails here instead of being found
# elsewhere. Torch is whichever cmake/LmkitTorch.cmake finds (PyTorch's on a GPU machine).
# Nothing is taken from what the node happens to have:
#  - the C++ standard is the one the Torch's own headers require (their "#error C++NN or later"
#    line; PyTorch 2.x: 17, the newest: 20) or its CMake config names, never less than lmkit's 17;
#    -DCMAKE_CXX_STANDARD=N among the arguments overrides it;
#  - protobuf (TensorBoard event files) only when the prefix carries it, else it is not looked for.
#
#   bash scripts/gpu/configure.sh BUILD_DIR [cmake arguments...]
#   bash scripts/gpu/configure.sh build-gpu -DLMKIT_CUDA=ON -DLMKIT_CUDA_ARCHITECTURES=90
#   bash scripts/gpu/configure.sh build-gpu -DCMAKE_CXX_STANDARD=20   # the standard by hand
#
# Source scripts/gpu/carried_deps.sh before building or running tests from BUILD_DIR: the carried
# shared libraries are found through LD_LIBRARY_PATH.

# shellcheck source-path=SCRIPTDIR
set -euo pipefail
lmkit_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: configure.sh BUILD_DIR [cmake arguments...]" >&2; exit 2; }
build_dir=$1; shift
# Python runs without the carried libraries (carried_deps.sh puts them on LD_LIBRARY_PATH).
machine_ld_library_path=${LD_LIBRARY_PATH:-}
# shellcheck source=carried_deps.sh
source "$lmkit_root/scripts/gpu/carried_deps.sh"
# shellcheck source=torch_headers.sh
source "$lmkit_root/scripts/gpu/torch_headers.sh"

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

# The arguments' value of a cmake -D option (the last one given wins, as with cmake itself).
given_definition() {  # given_definition NAME ARGS...
  local name=$1 value="" arg; shift
  for arg in "$@"; do
    case $arg in -D"$name"=*|-D"$name":*=*) value=${arg#*=} ;; esac
  done
  printf '%s' "$value"
}

# The Torch's include folder, found where cmake/LmkitTorch.cmake looks: Torch_DIR (the arguments',
# then the environment's), a system Torch (Debian's libtorch-dev), then the CMake config inside the
# PyTorch of Python3_EXECUTABLE (else $PYTHON, else python3). A Torch config sits three folders
# below its prefix in PyTorch (torch/share/cmake/Torch), four in Debian's (lib/<multiarch>/cmake/Torch).
torch_config_dir() {
  local dir python prefix
  dir=$(given_definition Torch_DIR "$@")
  [ -n "$dir" ] || dir=${Torch_DIR:-}
  if [ -n "$dir" ]; then printf '%s' "$dir"; return; fi
  for dir in /usr/lib/"$LMKIT_DEPS_MULTIARCH"/cmake/Torch /usr/share/cmake/Torch /usr/local/share/cmake/Torch; do
    if [ -f "$dir/TorchConfig.cmake" ]; then printf '%s' "$dir"; return; fi
  done
  python=$(given_definition Python3_EXECUTABLE "$@")
  [ -n "$python" ] || python=${PYTHON:-python3}
  prefix=$(LD_LIBRARY_PATH=$machine_ld_library_path "$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null) || return 0
  [ -z "$prefix" ] || printf '%s' "$prefix/Torch"
}
torch_include_dir() {  # torch_include_dir CONFIG_DIR: the folder that holds ATen/ATen.h
  local up include
  for up in "$1/../../.." "$1/../../../.."; do
    for include in "$up/include" "$up/lib/include"; do
      if [ -f "$include/ATen/ATen.h" ]; then (cd "$include" && pwd); return; fi
    done
  done
}

# The C++ standard. lmkit's own is 17 (CMakeLists.txt). A Torch whose headers refuse it says so in
# an "#error C++NN or later compatible compiler is required" line; its CMake config may name one on
# its target (CXX_STANDARD NN). The highest of these is used, unless the arguments give one.
cxx_standard=$(given_definition CMAKE_CXX_STANDARD "$@")
if [ -n "$cxx_standard" ]; then
  echo "configure.sh: C++ standard $cxx_standard (given: -DCMAKE_CXX_STANDARD=$cxx_standard)"
else
  cxx_standard=17 why="lmkit's own"
  torch_config=$(torch_config_dir "$@")
  torch_include=""
  [ -z "$torch_config" ] || torch_include=$(torch_include_dir "$torch_config")
  if [ -n "$torch_include" ]; then
    why="lmkit's own; what the headers in $torch_include require is not more"
    if read -r header_standard header_path < <(torch_header_standard "$torch_include") &&
       [ "$header_standard" -gt "$cxx_standard" ]; then
      cxx_standard=$header_standard why="required by $header_path"
    fi
    # (|| true: a config that cannot be read names no standard; under set -e and pipefail it would
    # otherwise end this script without a word.)
    named=$(sed -nE 's/.*CXX_STANDARD +([0-9]+).*/\1/p' "$torch_config/TorchConfig.cmake" 2>/dev/null | sort -n | tail -1 || true)
    if [ -n "$named" ] && [ "$named" -gt "$cxx_standard" ]; then
      cxx_standard=$named why="named by $torch_config/TorchConfig.cmake"
    fi
  else
    why="lmkit's own; no Torch headers found to read (Torch_DIR, a system Torch, or ${PYTHON:-python3}'s torch)"
  fi
  echo "configure.sh: C++ standard $cxx_standard ($why; -DCMAKE_CXX_STANDARD=N overrides it)"
fi
[[ $cxx_standard =~ ^(17|20|23|26)$ ]] ||
  { echo "configure.sh: -DCMAKE_CXX_STANDARD must be 17, 20, 23 or 26, got '$cxx_standard'" >&2; exit 2; }
# CMakeLists.txt keeps a given CMAKE_CXX_STANDARD (17 otherwise). Passed for 17 too, so that a
# build folder configured earlier for another standard follows.
standard_args=(-DCMAKE_CXX_STANDARD="$cxx_standard")
[ "$cxx_standard" = 17 ] ||
  echo "configure.sh: compiling as C++$cxx_standard (lmkit is tested as C++17)"

# protobuf: only the prefix's. Otherwise CMake's FindProtobuf would take whatever protobuf the
# node has (its headers, its protoc, maybe of another version than its library), and Torch's CMake
# config (pip's wheels) defines protobuf::libprotobuf as an empty stand-in that FindProtobuf then
# reuses: TensorBoard's messages would compile and link against nothing. Without it lmkit builds
# and refuses TensorBoard event files by name. (packages.sh carries no protobuf today; one carried
# would still meet that stand-in of a pip wheel's Torch: build it once before relying on it.)
if [ -x "$usr/bin/protoc" ] && [ -e "$lib/libprotobuf.so" ] && [ -f "$usr/include/google/protobuf/message.h" ]; then
  protobuf_args=(-DProtobuf_PROTOC_EXECUTABLE="$usr/bin/protoc" -DProtobuf_INCLUDE_DIR="$usr/include"
                 -DProtobuf_LIBRARY="$lib/libprotobuf.so" -DProtobuf_PROTOC_LIBRARY="$lib/libprotoc.so")
  echo "configure.sh: protobuf: the prefix's ($usr/bin/protoc)"
else
  protobuf_args=(-DCMAKE_DISABLE_FIND_PACKAGE_Protobuf=ON)
  echo "configure.sh: protobuf: not carried in the prefix, so not looked for (no TensorBoard event files)"
fi

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
  "${standard_args[@]}" "${protobuf_args[@]}" \
  "$@"

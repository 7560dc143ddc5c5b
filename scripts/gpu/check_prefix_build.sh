#!/usr/bin/env bash
# Proves, on this Debian machine, that the prefix fetched by scripts/gpu/fetch_debs.sh is complete:
# configures, builds and tests lmkit in a private mount namespace where the system's own copies of
# every carried dependency (headers, CMake configs, libraries, lua5.4) are hidden, so that each one
# can only come from .gpu-deps/. Torch stays the system's (Debian's libtorch), as on a GPU machine it
# is PyTorch's. Then checks where headers and libraries came from. Needs root (unshare -m).
#
#   bash scripts/gpu/check_prefix_build.sh BUILD_DIR [ctest arguments...]
#   nice -n 19 bash scripts/gpu/check_prefix_build.sh /tmp/build-prefix -j2 --timeout 1200 -E batch_slurm
#
# JOBS (default 2) caps the build's parallel jobs; ctest arguments "none" skip the tests.
set -euo pipefail
lmkit_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: check_prefix_build.sh BUILD_DIR [ctest arguments...|none]" >&2; exit 2; }
build_dir=$(realpath -m "$1"); shift
[ "$(id -u)" = 0 ] || { echo "check_prefix_build.sh: needs root for a private mount namespace" >&2; exit 1; }

if [ "${LMKIT_IN_PRIVATE_NAMESPACE:-}" != 1 ]; then
  LMKIT_IN_PRIVATE_NAMESPACE=1 exec unshare --mount --propagation private "$0" "$build_dir" "$@"
fi

# Hide the system's copies. Folders are covered by an empty folder, files by /dev/null; symlinks
# are left alone (they point at hidden files).
lib=/usr/lib/x86_64-linux-gnu
hidden=(
  /usr/include/{boost,fmt,nlohmann,lua5.4,readline,gtest,gmock,CLI}
  /usr/include/{lapack.h,lapacke.h,lapacke_config.h,lapacke_mangling.h,lapacke_utils.h,xxhash.h,xxh3.h,glpk.h}
  /usr/share/cmake/{nlohmann_json,CLI11} /usr/src/googletest
  $lib/cmake/{Boost-*,boost_*,BoostDetectToolset-*,GTest,fmt,openblas} $lib/openblas-pthread
  $lib/{liblua5.4*,libfmt.so*,libreadline.so*,libhistory.so*,liblapacke.so*,libtmglib.so*,libxxhash.so,libxxhash.a,libglpk.so,libglpk.a}
  $lib/{libgtest*,libgmock*,libblas.so*,liblapack.so*,libopenblas*,libgfortran.so*}
  /usr/bin/lua5.4 /usr/bin/luac5.4
)
empty=$(mktemp -d)
for path in "${hidden[@]}"; do
  if [ -L "$path" ] || [ ! -e "$path" ]; then continue; fi
  if [ -d "$path" ]; then mount --bind "$empty" "$path"; else mount --bind /dev/null "$path"; fi
done

cd "$lmkit_root"
"$lmkit_root/scripts/gpu/configure.sh" "$build_dir" -DLMKIT_CUDA=OFF -DLMKIT_CUDA_COMPILE_CHECK=OFF
# shellcheck source=carried_deps.sh
source "$lmkit_root/scripts/gpu/carried_deps.sh"
cmake --build "$build_dir" -j "${JOBS:-2}"

echo "== where the dependencies came from"
prefix=$(realpath "$LMKIT_DEPS_PREFIX")
grep -E '^(LUA_INCLUDE_DIR|LUA_LIBRARY|LUA_INTERPRETER|fmt_DIR|nlohmann_json_DIR|CLI11_DIR|Boost_DIR|boost_headers_DIR|GTest_DIR|READLINE_INCLUDE_DIR|READLINE_LIBRARY|LAPACKE_INCLUDE_DIR|LAPACKE_LIBRARY|GLPK_INCLUDE_DIR|GLPK_LIBRARY|BLAS_openblas_LIBRARY|Torch_DIR):' \
  "$build_dir/CMakeCache.txt" | tee "$build_dir/dependency_paths.txt"
outside=$(grep -v '^Torch_DIR' "$build_dir/dependency_paths.txt" | grep -v "=$prefix" || true)
[ -z "$outside" ] || { echo "check_prefix_build.sh: found outside the prefix:"$'\n'"$outside" >&2; exit 1; }
# Headers the compiler actually read (ninja's dependency log): none of the carried libraries' from /usr.
system_headers=$(ninja -C "$build_dir" -t deps | grep -oE '^ +/usr/include/(boost|fmt|nlohmann|lua5\.4|readline|gtest|gmock|CLI|lapack|glpk)[^ ]*' | sort -u || true)
[ -z "$system_headers" ] || { echo "check_prefix_build.sh: system headers used:"$'\n'"$system_headers" >&2; exit 1; }
echo "headers: none of the carried libraries' read from /usr/include"
ldd "$build_dir/lmkit" | grep -E 'lua|fmt|readline|lapacke|tmglib|blas|lapack|gfortran|tinfo|glpk|torch' | sed 's/ (0x.*//'
not_carried=$(ldd "$build_dir/lmkit" | grep -E 'lua|fmt|readline|lapacke|tmglib|openblas|gfortran|glpk' | grep -v "=> $prefix/" || true)
[ -z "$not_carried" ] || { echo "check_prefix_build.sh: loaded from outside the prefix:"$'\n'"$not_carried" >&2; exit 1; }

[ "${1:-}" = none ] && exit 0
echo "== ctest $*"
ctest --test-dir "$build_dir" --output-on-failure "$@"

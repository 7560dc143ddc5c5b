# shellcheck shell=bash
# Sourced (bash) by scripts/gpu/configure.sh and run_on_gpu.sh: makes the dependencies that
# scripts/gpu/fetch_debs.sh carried usable in this shell. Unpacks .gpu-deps/carry/*.tar.xz when only
# the tarballs travelled, puts the carried libraries on LD_LIBRARY_PATH (CMake's RUNPATH covers
# only direct dependencies: liblapacke's own liblapack.so.3/libblas.so.3 must be found too) and the
# carried lua5.4 on PATH, and falls back to the carried cmake/ninja when the machine has none.
# Exports LMKIT_DEPS_PREFIX (the unpacked prefix's usr/ folder), LMKIT_DEPS_MULTIARCH (the multiarch
# folder name inside it: x86_64-linux-gnu) and LMKIT_DEPS_TOOLS ("system" or the folder of the
# carried cmake/ninja wrappers).

lmkit_root=${lmkit_root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
lmkit_deps_dir=$lmkit_root/.gpu-deps

# untar ARCHIVE DEST: xz may be missing on a bare machine; Python's tarfile reads xz by itself.
lmkit_untar() {
  mkdir -p "$2"
  if xz --version >/dev/null 2>&1; then
    tar -C "$2" -xJf "$1"
  else
    # filter="tar" keeps symlinks and modes as packed (newer Pythons would otherwise warn or filter).
    python3 -c 'import sys, tarfile
kw = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
tarfile.open(sys.argv[1]).extractall(sys.argv[2], **kw)' "$1" "$2"
  fi
}

if [ ! -d "$lmkit_deps_dir/prefix/usr" ]; then
  [ -f "$lmkit_deps_dir/carry/deps.tar.xz" ] || {
    echo "carried_deps.sh: neither .gpu-deps/prefix nor .gpu-deps/carry/deps.tar.xz is here:" \
         "run scripts/gpu/fetch_debs.sh where apt works, and carry .gpu-deps/carry" >&2
    return 1
  }
  lmkit_untar "$lmkit_deps_dir/carry/deps.tar.xz" "$lmkit_deps_dir" || return 1
fi
export LMKIT_DEPS_PREFIX=$lmkit_deps_dir/prefix/usr
# Debian's multiarch tuple of this machine (x86_64-linux-gnu on x86-64, the only architecture
# fetch_debs.sh fetches for): the prefix's libraries live in lib/<tuple>, some headers in include/<tuple>.
LMKIT_DEPS_MULTIARCH=$(uname -m)-linux-gnu
export LMKIT_DEPS_MULTIARCH
lmkit_deps_libdir=$LMKIT_DEPS_PREFIX/lib/$LMKIT_DEPS_MULTIARCH
[ -d "$lmkit_deps_libdir" ] || {
  echo "carried_deps.sh: the carried prefix has no lib/$LMKIT_DEPS_MULTIARCH: it was fetched for another" \
       "architecture than this machine's ($(uname -m)); scripts/gpu/fetch_debs.sh fetches for amd64" >&2
  return 1
}
export LD_LIBRARY_PATH=$lmkit_deps_libdir:$lmkit_deps_libdir/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$LMKIT_DEPS_PREFIX/bin:$PATH

# cmake >= 3.24 (CMakeLists.txt's minimum) and ninja from the machine when it has them.
lmkit_cmake_usable() {
  command -v cmake >/dev/null || return 1
  local version
  version=$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9]*\.[0-9]*\).*/\1/p')
  [ -n "$version" ] && [ "$(printf '%s\n' 3.24 "$version" | sort -V | head -1)" = 3.24 ]
}
if lmkit_cmake_usable && ninja --version >/dev/null 2>&1; then
  export LMKIT_DEPS_TOOLS=system
else
  if [ ! -d "$lmkit_deps_dir/tools/usr" ]; then
    [ -f "$lmkit_deps_dir/carry/tools.tar.xz" ] || {
      echo "carried_deps.sh: this machine lacks cmake >= 3.24 or ninja, and .gpu-deps/carry/tools.tar.xz" \
           "did not travel (scripts/gpu/fetch_debs.sh without --no-tools makes it)" >&2
      return 1
    }
    lmkit_untar "$lmkit_deps_dir/carry/tools.tar.xz" "$lmkit_deps_dir" || return 1
  fi
  # Wrappers, not PATH + LD_LIBRARY_PATH for the whole shell: the carried curl/ssl/icu libraries
  # must not shadow the machine's own for python3 and the rest.
  lmkit_wrappers=$lmkit_deps_dir/tools-bin
  mkdir -p "$lmkit_wrappers"
  for lmkit_tool in cmake ctest; do
    # shellcheck disable=SC2016  # the wrapper expands LD_LIBRARY_PATH and its arguments when it runs
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
      "$lmkit_deps_dir/tools/usr/lib/x86_64-linux-gnu" "$lmkit_deps_dir/tools/usr/bin/$lmkit_tool" \
      >"$lmkit_wrappers/$lmkit_tool"
    chmod +x "$lmkit_wrappers/$lmkit_tool"
  done
  ln -sfn "$lmkit_deps_dir/tools/usr/bin/ninja" "$lmkit_wrappers/ninja"
  export PATH=$lmkit_wrappers:$PATH
  export LMKIT_DEPS_TOOLS=$lmkit_wrappers
fi

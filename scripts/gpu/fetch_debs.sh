#!/usr/bin/env bash
# Fetches, here (Debian 12 with its apt mirror), every non-Torch dependency lmkit needs to build and
# run, for a GPU machine that has CUDA and PyTorch but no apt and no internet (scripts/gpu/README.md).
#
#   bash scripts/gpu/fetch_debs.sh              # lmkit's dependencies + a fallback cmake/ninja
#   bash scripts/gpu/fetch_debs.sh --no-tools   # without the fallback cmake/ninja
#   bash scripts/gpu/fetch_debs.sh --full-boost # all of Boost's headers, not only those lmkit reaches
#
# Everything lands under .gpu-deps/ (ignored by git):
#   debs/     the .deb files, as apt-get download gives them (debs/prefix, debs/tools)
#   prefix/   lmkit's dependencies unpacked with dpkg -x (usr/include, usr/lib/x86_64-linux-gnu, usr/bin)
#   tools/    cmake, ctest and ninja with the shared libraries they need
#   carry/    what travels to the GPU machine: deps.tar.xz, tools.tar.xz, manifest.txt
# scripts/gpu/run_on_gpu.sh unpacks carry/ there (or uses prefix/ and tools/ when those travelled).

# shellcheck source-path=SCRIPTDIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

with_tools=yes full_boost=no
for option in "$@"; do
  case $option in
    --no-tools) with_tools=no ;;
    --full-boost) full_boost=yes ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "fetch_debs.sh: unknown option '$option' (try --help)" >&2; exit 2 ;;
  esac
done
for tool in apt-get dpkg-deb tar xz g++ readelf ldd; do
  command -v "$tool" >/dev/null || { echo "fetch_debs.sh: needs '$tool' (run it on Debian 12 with build-essential)" >&2; exit 1; }
done
[ "$(dpkg --print-architecture)" = amd64 ] ||
  { echo "fetch_debs.sh: the GPU machines are x86-64; run this on an amd64 Debian 12" >&2; exit 1; }

# lmkit's dependencies (lmkit_deps_packages) and the fallback cmake/ninja (lmkit_tools_packages).
# shellcheck source=packages.sh
source "$root/scripts/gpu/packages.sh"
deps_packages=("${lmkit_deps_packages[@]}")
tools_packages=("${lmkit_tools_packages[@]}")

deps_dir=.gpu-deps
# Everything is made afresh: stale .debs or files of a package no longer listed would travel too.
rm -rf "$deps_dir/debs" "$deps_dir/prefix" "$deps_dir/tools" "$deps_dir/tools-bin" "$deps_dir/carry"
mkdir -p "$deps_dir/debs/prefix" "$deps_dir/debs/tools" "$deps_dir/prefix" "$deps_dir/tools" "$deps_dir/carry"

fetch() {  # fetch NAME PACKAGE...: the .deb of each package into debs/NAME
  local debs=$deps_dir/debs/$1; shift
  # _apt cannot write into a folder only root may write: download as root without the sandbox.
  (cd "$debs" && apt-get -q -o APT::Sandbox::User=root download "$@") >"$deps_dir/download.log" 2>&1 ||
    { cat "$deps_dir/download.log" >&2; echo "fetch_debs.sh: apt-get download failed (apt-get update first?)" >&2; exit 1; }
}
unpack() {  # unpack NAME PACKAGE...: dpkg -x each package's .deb from debs/NAME into NAME/
  local name=$1; shift
  for package in "$@"; do
    local deb
    local debs=("$deps_dir/debs/$name/${package}"_*.deb)
    deb=${debs[0]}
    [ -f "$deb" ] || { echo "fetch_debs.sh: no .deb for $package in $deps_dir/debs/$name" >&2; exit 1; }
    dpkg-deb -x "$deb" "$deps_dir/$name"
    # shellcheck disable=SC2016  # dpkg-deb's own ${...} fields
    dpkg-deb --show --showformat='${Package} ${Version}\n' "$deb" >>"$deps_dir/carry/manifest.txt"
  done
}

# Debian 12 still ships some libraries under /lib; merge them into usr/ (as usrmerge does) so that
# one lib folder holds everything, and make absolute symlinks relative so the tree can move.
normalize_tree() {
  local tree=$1
  for top in lib lib64 bin sbin; do
    if [ -d "$tree/$top" ] && [ ! -L "$tree/$top" ]; then
      mkdir -p "$tree/usr/$top"
      cp -a "$tree/$top/." "$tree/usr/$top/"
      rm -rf "${tree:?}/$top"
    fi
  done
  local link target
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    case $target in /lib/*|/bin/*|/sbin/*) target=/usr$target ;; esac
    [ -e "$tree$target" ] || { echo "fetch_debs.sh: $link points to $target, which is not carried" >&2; exit 1; }
    ln -sfn "$(realpath --relative-to="$(dirname "$link")" "$tree$target")" "$link"
  done < <(find "$tree" -type l -lname '/*' -print0)
  # Documentation, translations and editor files are of no use to a build.
  rm -rf "$tree"/usr/share/{doc,man,info,lintian,bug,locale,emacs,vim,bash-completion,aclocal}
  local dangling
  dangling=$(find "$tree" -xtype l)
  [ -z "$dangling" ] || { echo "fetch_debs.sh: links that lead nowhere after the merge:"$'\n'"$dangling" >&2; exit 1; }
}

slim_prefix() {
  local prefix=$1 lib=$1/usr/lib/x86_64-linux-gnu
  # Static archives are large and unused (lmkit links shared libraries), except GoogleTest's:
  # Debian ships it only static.
  find "$prefix" -name '*.a' ! -name 'libgtest*.a' ! -name 'libgmock*.a' -delete
  # What update-alternatives would do on install: OpenBLAS as libblas.so.3/liblapack.so.3.
  for name in libblas liblapack; do
    ln -sfn "openblas-pthread/$name.so.3" "$lib/$name.so.3"
    ln -sfn "$name.so.3" "$lib/$name.so"
  done
  if [ "$full_boost" = no ]; then
    # The Boost headers lmkit reaches (found by the preprocessor, in C++17 and C++20), kept as whole
    # top-level folders of boost/ so that another compiler's #if branches still find theirs.
    local probe used
    probe=$(mktemp -d)
    grep -rhoE '#include <boost/[^>]+>' runtime ops bindings repl tests | sort -u >"$probe/probe.cpp"
    [ -s "$probe/probe.cpp" ] || { echo "fetch_debs.sh: lmkit includes no Boost header?" >&2; exit 1; }
    used=$(for std in c++17 c++20; do
             g++ -std=$std -M -isystem "$prefix/usr/include" "$probe/probe.cpp"
           done | tr '\\ ' '\n' | sed -n "s|^$prefix/usr/include/boost/\([^/]*\).*|\1|p" | sort -u)
    rm -rf "$probe"
    local entry
    for entry in "$prefix"/usr/include/boost/*; do
      grep -qxF "$(basename "$entry")" <<<"$used" || rm -rf "$entry"
    done
  fi
}

slim_tools() {
  local tools=$1
  # cpack and the CMake manual are not needed to configure and build.
  rm -f "$tools"/usr/bin/cpack
  rm -rf "$tools"/usr/share/cmake-*/Help "$tools"/usr/share/cmake-*/editors
  find "$tools" -name '*.a' -delete
}

is_elf() { [ "$(od -An -tx1 -N4 "$1" | tr -d ' ')" = 7f454c46 ]; }

# Every ELF file's needed libraries must resolve inside its tree, or be part of glibc, libstdc++ or
# libgcc, which any machine with a C++ compiler has. Prints the newest GLIBC_/GLIBCXX_ versions needed.
check_closure() {
  local tree=$1 libdirs file line missing=0 elf_files=()
  libdirs=$(find "$root/$tree" -name '*.so*' -printf '%h\n' | sort -u | paste -sd:)
  while IFS= read -r -d '' file; do
    is_elf "$file" && elf_files+=("$file")
  done < <(find "$tree" -type f \( -name '*.so*' -o -path '*/bin/*' \) -print0)
  for file in "${elf_files[@]}"; do
    while IFS= read -r line; do
      case $line in
        *"not found"*) echo "fetch_debs.sh: $file: $line" >&2; missing=1 ;;
        *"=> $root/$tree/"*|*linux-vdso*|*ld-linux*|"statically linked") ;;
        *libc.so.6*|*libm.so.6*|*libpthread.so.0*|*libdl.so.2*|*librt.so.1*|*libresolv.so.2*|*libstdc++.so.6*|*libgcc_s.so.1*) ;;
        *) echo "fetch_debs.sh: $file needs $line, outside the carried tree" >&2; missing=1 ;;
      esac
    done < <(LD_LIBRARY_PATH=$libdirs ldd "$file" | sed 's/^[[:space:]]*//')
  done
  [ $missing = 0 ] || { echo "fetch_debs.sh: $tree is not self-contained: add the packages named above" >&2; exit 1; }
  readelf --version-info --wide "${elf_files[@]}" | grep -oE 'GLIBC(XX)?_[0-9.]+' |
    sort -u -t_ -k1,1 -k2,2V | awk -F_ '{newest[$1] = $2} END {for (k in newest) print k "_" newest[k]}' | sort
}

echo "fetch_debs.sh: downloading ${#deps_packages[@]} packages for lmkit"
fetch prefix "${deps_packages[@]}"
echo "# package version (lmkit's dependencies, unpacked into prefix/)" >"$deps_dir/carry/manifest.txt"
unpack prefix "${deps_packages[@]}"
normalize_tree "$deps_dir/prefix"
slim_prefix "$deps_dir/prefix"
{
  echo "# newest symbol versions prefix/ needs from the machine (glibc, libstdc++)"
  check_closure "$deps_dir/prefix"
} >>"$deps_dir/carry/manifest.txt"

if [ "$with_tools" = yes ]; then
  echo "fetch_debs.sh: downloading ${#tools_packages[@]} packages for a fallback cmake and ninja"
  fetch tools "${tools_packages[@]}"
  echo "# package version (fallback build tools, unpacked into tools/)" >>"$deps_dir/carry/manifest.txt"
  unpack tools "${tools_packages[@]}"
  normalize_tree "$deps_dir/tools"
  slim_tools "$deps_dir/tools"
  {
    echo "# newest symbol versions tools/ needs from the machine (glibc, libstdc++)"
    check_closure "$deps_dir/tools"
  } >>"$deps_dir/carry/manifest.txt"
  # The carried cmake must run from its new place: CMake finds its modules relative to itself.
  LD_LIBRARY_PATH=$root/$deps_dir/tools/usr/lib/x86_64-linux-gnu "$deps_dir/tools/usr/bin/cmake" --version | head -1
fi

# xz: the headers and OpenBLAS's kernels compress several-fold, and the carry limit is 64 MiB.
tar -C "$deps_dir" -cJf "$deps_dir/carry/deps.tar.xz" prefix
[ "$with_tools" = no ] || tar -C "$deps_dir" -cJf "$deps_dir/carry/tools.tar.xz" tools

# The three ways the dependencies could travel; the tarballs are the smallest by far.
echo "fetch_debs.sh: sizes in MiB (the carry limit is 64 MiB, the working tree included):"
printf '  %-8s %8s %10s %8s\n' part '.debs' unpacked tar.xz
for name in prefix tools; do
  [ -f "$deps_dir/carry/${name/prefix/deps}.tar.xz" ] || continue
  printf '  %-8s %8s %10s %8s\n' "$name" \
    "$(du -sm --apparent-size "$deps_dir/debs/$name" | cut -f1)" \
    "$(du -sm --apparent-size "$deps_dir/$name" | cut -f1)" \
    "$(du -sm --apparent-size "$deps_dir/carry/${name/prefix/deps}.tar.xz" | cut -f1)"
done
echo "  carried (.gpu-deps/carry): $(du -sh --apparent-size "$deps_dir/carry" | cut -f1)"

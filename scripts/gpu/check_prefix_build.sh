#!/usr/bin/env bash
# Proves, on this Debian machine, that the prefix fetched by scripts/gpu/fetch_debs.sh is complete:
# configures, builds and tests lmkit in a private mount namespace where every file that the carried
# packages (scripts/gpu/packages.sh, lmkit_deps_packages) installed on this machine is absent:
# headers (those in the multiarch /usr/include/x86_64-linux-gnu, which GCC searches by itself, too),
# CMake configs, libraries, lua5.4, GNU time, and the update-alternatives links that lead to them
# (libblas.so.3, cblas.h). So each one can only come from .gpu-deps/, as on an offline GPU node,
# whose compiler knows nothing of them. Torch stays the system's (Debian's libtorch), as on a GPU
# node it is PyTorch's. Then checks where headers and libraries came from: the CMake cache, ninja's
# header log and ldd must name no file of a carried package outside the prefix. Needs root
# (unshare --mount, overlayfs).
#
#   bash scripts/gpu/check_prefix_build.sh BUILD_DIR [ctest arguments...|none]
#   bash scripts/gpu/check_prefix_build.sh --targets "TARGET..." BUILD_DIR
#   bash scripts/gpu/check_prefix_build.sh --list-hidden
#   nice -n 19 bash scripts/gpu/check_prefix_build.sh /tmp/build-prefix -j2 --timeout 1200 -E batch_slurm
#   nice -n 19 bash scripts/gpu/check_prefix_build.sh --targets bindings/CMakeFiles/lmkit_bindings.dir/lua_fs.cpp.o /tmp/build-prefix
#
# --targets "T1 T2": build only these ninja targets (a target's name, or one object file such as
#   the one above: `ninja -C BUILD_DIR -t targets all` lists them) and run no tests; the header
#   checks cover what was compiled. A quick check of the prefix's headers without a whole build.
# --list-hidden: print what would be hidden (one "package path" line per hidden entry) and exit.
# JOBS (default 2) caps the build's parallel jobs; ctest arguments "none" skip the tests.
#
# How the files are hidden: a read-only overlay on each top folder concerned (/usr), whose upper
# layer, a tmpfs, holds an overlayfs whiteout for each hidden entry: a hidden file is absent, not
# empty, so that an `#include` of it fails instead of reading nothing; a folder all of whose files
# are hidden is absent as a whole. The carried runtime libraries (libtinfo, libz, libgmp, ...) are
# hidden too: every program started inside (bash, the compiler, cmake) gets them from the prefix
# through the LD_LIBRARY_PATH of scripts/gpu/carried_deps.sh, sourced before anything is hidden.

# shellcheck source-path=SCRIPTDIR
set -euo pipefail
lmkit_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
original_args=("$@")
targets=() list_hidden=no
while [ $# -gt 0 ]; do
  case $1 in
    --targets) read -r -a targets <<<"${2//,/ }"; shift 2 ;;
    --list-hidden) list_hidden=yes; shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) break ;;
  esac
done
usage="usage: check_prefix_build.sh [--targets \"TARGET...\"] BUILD_DIR [ctest arguments...|none] | --list-hidden"
[ $list_hidden = yes ] || [ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
# shellcheck source=packages.sh
source "$lmkit_root/scripts/gpu/packages.sh"
command -v dpkg-query >/dev/null || { echo "check_prefix_build.sh: needs dpkg (a Debian machine)" >&2; exit 1; }

# --- the hidden set -----------------------------------------------------------------------------
# owner[PATH]: the package of each hidden file or link (its folders resolved: /lib/x86_64-linux-gnu/
# libz.so.1 is /usr/lib/x86_64-linux-gnu/libz.so.1 on a merged /usr); whole[DIR]: a folder whose
# every entry is hidden; whiteouts: the hidden entries whose folder is not hidden as a whole.
declare -A owner=() whole=()
whiteouts=() not_installed=()
compute_hidden() {
  local package path dir i
  local -a packages=() paths=() path_packages=() dirs=() canonical=()
  local -A dir_seen=() dir_canonical=()
  for package in "${lmkit_deps_packages[@]}"; do
    if [ "$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null)" = installed ]; then
      packages+=("$package")
    else
      not_installed+=("$package")
    fi
  done
  local -a listed=()
  local -A parents=()
  for package in "${packages[@]}"; do
    mapfile -t listed < <(dpkg -L "$package" | grep '^/')   # not its "diverted by ..." lines
    parents=()
    for path in "${listed[@]}"; do dir=${path%/*}; parents[${dir:-/}]=1; done
    for path in "${listed[@]}"; do
      # Folders: only their files count (/lib is one, though a link to usr/lib on a merged /usr).
      [ -z "${parents[$path]:-}" ] || continue
      [ -d "$path" ] && [ ! -L "$path" ] && continue
      [ -e "$path" ] || [ -L "$path" ] || continue          # listed, but not on this machine
      paths+=("$path") path_packages+=("$package")
      dir=${path%/*}
      [ -n "${dir_seen[$dir]:-}" ] || { dir_seen[$dir]=1; dirs+=("$dir"); }
    done
  done
  mapfile -t canonical < <(realpath -m -- "${dirs[@]}")
  for i in "${!dirs[@]}"; do dir_canonical[${dirs[$i]}]=${canonical[$i]}; done
  for i in "${!paths[@]}"; do
    path=${paths[$i]}
    owner[${dir_canonical[${path%/*}]}/${path##*/}]=${path_packages[$i]}
  done

  # Folders, deepest first: hidden as a whole when each entry is a hidden file or such a folder.
  local -A candidate=()
  for path in "${!owner[@]}"; do
    dir=${path%/*}
    while [ -n "$dir" ] && [ -z "${candidate[$dir]:-}" ]; do candidate[$dir]=1; dir=${dir%/*}; done
  done
  local entry all any slashes
  shopt -s nullglob dotglob
  while IFS= read -r dir; do
    all=1 any=0
    for entry in "$dir"/*; do
      any=1
      [ -n "${owner[$entry]:-}" ] || [ -n "${whole[$entry]:-}" ] || { all=0; break; }
    done
    [ $any = 1 ] && [ $all = 1 ] && whole[$dir]=1
  done < <(for dir in "${!candidate[@]}"; do slashes=${dir//[!\/]/}; echo "${#slashes} $dir"; done | sort -rn | cut -d' ' -f2-)
  shopt -u nullglob dotglob

  local -A mixed=()
  for path in "${!owner[@]}" "${!whole[@]}"; do
    dir=${path%/*}
    [ -z "${whole[$dir]:-}" ] || continue
    whiteouts+=("$path"); mixed[$dir]=1
  done
  # Links beside them that lead to a hidden file (update-alternatives': libblas.so.3, cblas.h,
  # /usr/bin/lua) would be left dangling; they are hidden as well, named after what they lead to.
  local -a links=() targets_of=()
  for dir in "${!mixed[@]}"; do
    mapfile -t links < <(find "$dir" -mindepth 1 -maxdepth 1 -type l | sort)
    [ ${#links[@]} -gt 0 ] || continue
    mapfile -t targets_of < <(realpath -m -- "${links[@]}")
    for i in "${!links[@]}"; do
      [ -z "${owner[${links[$i]}]:-}" ] || continue
      package=$(hidden_owner "${targets_of[$i]}") || continue
      owner[${links[$i]}]="$package (a link to ${targets_of[$i]})"
      whiteouts+=("${links[$i]}")
    done
  done
  mapfile -t whiteouts < <(printf '%s\n' "${whiteouts[@]}" | sort -u)
}

# hidden_owner PATH (canonical): prints the package of a hidden file, or "folder of carried
# packages" for a hidden folder or what is inside one; fails for anything else.
hidden_owner() {
  local path=$1
  if [ -n "${owner[$path]:-}" ]; then echo "${owner[$path]}"; return 0; fi
  while [ -n "$path" ]; do
    if [ -n "${whole[$path]:-}" ]; then echo "a folder of carried packages: $path"; return 0; fi
    path=${path%/*}
  done
  return 1
}

# hidden_among: reads absolute paths (one a line), prints "path (package)" for each that is hidden.
hidden_among() {
  local -a paths=() canonical=()
  local i package
  mapfile -t paths < <(sort -u)
  [ ${#paths[@]} -gt 0 ] || return 0
  mapfile -t canonical < <(realpath -m -- "${paths[@]}")
  for i in "${!paths[@]}"; do
    if package=$(hidden_owner "${canonical[$i]}"); then echo "  ${paths[$i]} ($package)"; fi
  done
}

if [ $list_hidden = yes ]; then
  compute_hidden
  for path in "${whiteouts[@]}"; do
    if [ -n "${whole[$path]:-}" ]; then echo "(folder) $path"; else echo "${owner[$path]} $path"; fi
  done
  echo "# ${#whiteouts[@]} entries hide ${#owner[@]} files and links of ${#lmkit_deps_packages[@]} packages" \
       "(not installed here: ${not_installed[*]:-none})" >&2
  exit 0
fi

build_dir=$(realpath -m "$1"); shift
[ "$(id -u)" = 0 ] || { echo "check_prefix_build.sh: needs root for a private mount namespace" >&2; exit 1; }
if [ "${LMKIT_IN_PRIVATE_NAMESPACE:-}" != 1 ]; then
  LMKIT_IN_PRIVATE_NAMESPACE=1 exec unshare --mount --propagation private "$0" "${original_args[@]}"
fi

# --- hide them ----------------------------------------------------------------------------------
cd "$lmkit_root"
# The prefix's libraries on LD_LIBRARY_PATH and its programs on PATH before the machine's copies go.
# shellcheck source=carried_deps.sh
source "$lmkit_root/scripts/gpu/carried_deps.sh"
# The prefix as configure.sh names it, and with its links resolved: paths may come in either form.
prefix=$LMKIT_DEPS_PREFIX real_prefix=$(realpath "$LMKIT_DEPS_PREFIX")
compute_hidden
[ ${#whiteouts[@]} -gt 0 ] || { echo "check_prefix_build.sh: none of the carried packages is installed here" >&2; exit 1; }
declare -A tops=()   # the top folders concerned (/usr)
for path in "${whiteouts[@]}"; do top=${path#/}; tops[/${top%%/*}]=1; done
for top in "${!tops[@]}"; do
  # The overlay is read-only: the checkout and the build must not be below it.
  for dir in "$lmkit_root" "$build_dir"; do
    [[ $dir/ != "$top"/* ]] ||
      { echo "check_prefix_build.sh: $dir is below $top, which is hidden read-only: use another folder" >&2; exit 1; }
  done
done
# The layer of whiteouts: a tmpfs mounted in this namespace only, on an empty folder of the build's.
layers=$build_dir/.hidden-layers
mkdir -p "$layers"
mount -t tmpfs lmkit-hidden "$layers"
for path in "${whiteouts[@]}"; do
  mkdir -p "$layers${path%/*}"
  mknod "$layers$path" c 0 0   # an overlayfs whiteout: the entry below is absent
done
for top in "${!tops[@]}"; do
  [ -z "$(findmnt -rn -o TARGET -R "$top" | tail -n +2)" ] ||
    echo "check_prefix_build.sh: warning: mounts below $top are covered by the overlay" >&2
  mount -t overlay lmkit-hidden -o "lowerdir=$layers$top:$top" "$top" ||
    { echo "check_prefix_build.sh: cannot mount an overlay on $top (overlayfs needed)" >&2; exit 1; }
done
still_there=()
for path in "${whiteouts[@]}"; do
  if [ -e "$path" ] || [ -L "$path" ]; then still_there+=("$path"); fi
done
[ ${#still_there[@]} -eq 0 ] ||
  { echo "check_prefix_build.sh: still visible after hiding:"; printf '  %s\n' "${still_there[@]}"; exit 1; } >&2
echo "== hidden: ${#whiteouts[@]} entries (${#owner[@]} files and links of the carried packages;" \
     "not installed here: ${not_installed[*]:-none}); --list-hidden lists them"

# --- build --------------------------------------------------------------------------------------
"$lmkit_root/scripts/gpu/configure.sh" "$build_dir" -DLMKIT_CUDA=OFF -DLMKIT_CUDA_COMPILE_CHECK=OFF
if [ ${#targets[@]} -gt 0 ]; then
  echo "== building only: ${targets[*]}"
  cmake --build "$build_dir" -j "${JOBS:-2}" --target "${targets[@]}"
else
  cmake --build "$build_dir" -j "${JOBS:-2}"
fi

# --- where the dependencies came from -----------------------------------------------------------
echo "== where the dependencies came from"
grep -E '^(LUA_INCLUDE_DIR|LUA_LIBRARY|LUA_INTERPRETER|CMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES|fmt_DIR|nlohmann_json_DIR|CLI11_DIR|Boost_DIR|boost_headers_DIR|GTest_DIR|READLINE_INCLUDE_DIR|READLINE_LIBRARY|LAPACKE_INCLUDE_DIR|LAPACKE_LIBRARY|GLPK_INCLUDE_DIR|GLPK_LIBRARY|XXHASH_INCLUDE_DIR|XXHASH_LIBRARY|ZLIB_INCLUDE_DIR|ZLIB_LIBRARY|BLAS_openblas_LIBRARY|Torch_DIR):' \
  "$build_dir/CMakeCache.txt" | tee "$build_dir/dependency_paths.txt"
failed=0
outside=$(grep -v '^Torch_DIR' "$build_dir/dependency_paths.txt" | grep -v -e "=$prefix/" -e "=$real_prefix/" || true)
[ -z "$outside" ] || { echo "check_prefix_build.sh: found outside the prefix:"$'\n'"$outside" >&2; failed=1; }
# Any path in the cache that is a carried package's file or folder on this machine.
cached=$({ grep -vE '^(//|#)' "$build_dir/CMakeCache.txt" | cut -d= -f2- | grep -oE '/[^;: "=]+' |
  grep -E '^/(usr|lib|lib64|bin|sbin|etc)/' || true; } | hidden_among)
[ -z "$cached" ] || { echo "check_prefix_build.sh: the CMake cache names the machine's copies:"$'\n'"$cached" >&2; failed=1; }

# Headers the compiler read (ninja's dependency log): none may be a carried package's file.
deps_log=$(ninja -C "$build_dir" -t deps)
read_headers=$({ grep -E '^ +/' <<<"$deps_log" || true; } | sed 's/^ *//' | sort -u)
from_machine=$({ grep -vF -e "$prefix/" -e "$real_prefix/" -e "$build_dir/" -e "$lmkit_root/" <<<"$read_headers" || true; } | hidden_among)
if [ -n "$from_machine" ]; then
  echo "check_prefix_build.sh: headers of carried packages read from the machine, not the prefix:"$'\n'"$from_machine" >&2
  failed=1
else
  echo "headers: $(grep -c . <<<"$read_headers") read, $(grep -cF -e "$prefix/" -e "$real_prefix/" <<<"$read_headers")" \
       "of them from the prefix, none a carried package's from the machine"
  grep -F -e "$prefix/include/$LMKIT_DEPS_MULTIARCH/" -e "$real_prefix/include/$LMKIT_DEPS_MULTIARCH/" <<<"$read_headers" |
    sed 's/^/  from the multiarch folder: /' || true
fi

# Libraries: each one a carried package provides must load from the prefix.
declare -A carried_names=()
for path in "${!owner[@]}"; do carried_names[${path##*/}]=1; done
for binary in "$build_dir/lmkit" "$build_dir/tests/lmkit_tests"; do
  [ -x "$binary" ] || continue
  from_prefix=()
  while read -r name _ path _; do
    if [ "$path" = not ]; then
      echo "check_prefix_build.sh: ${binary#"$build_dir"/} needs $name: not found" >&2; failed=1
    elif [ -n "${carried_names[$name]:-}" ]; then
      case $path in
        "$prefix"/*|"$real_prefix"/*) from_prefix+=("$name") ;;
        *) echo "check_prefix_build.sh: ${binary#"$build_dir"/} loads $name from $path, outside the prefix" >&2; failed=1 ;;
      esac
    fi
  done < <(ldd "$binary" | grep '=>')
  echo "libraries: ${binary#"$build_dir"/} loads ${#from_prefix[@]} of the carried packages' from the prefix: ${from_prefix[*]}"
done
[ $failed = 0 ] || exit 1

if [ ${#targets[@]} -gt 0 ] || [ "${1:-}" = none ]; then exit 0; fi
echo "== ctest $*"
ctest --test-dir "$build_dir" --output-on-failure "$@"

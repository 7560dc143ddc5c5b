#!/usr/bin/env bash
# Compiles, for syntax and types only, every lmkit source that uses Torch's CUDA API (the code under
# LMKIT_OPS_CUDA: CUDA graphs, the kernels' dispatch, device memory, the GPU tests) against a CUDA
# Torch's headers — here, on a machine with neither a GPU nor a CUDA Torch. A GPU node builds lmkit
# from scratch; a compile error there costs the whole visit, and the CPU build never compiles this
# code (ops/cuda/*.cu have their own check: LMKIT_CUDA_COMPILE_CHECK).
#
#   bash scripts/gpu/check_cuda_sources.sh            # Debian's libtorch-cuda-dev, fetched once
#   bash scripts/gpu/check_cuda_sources.sh --headers DIR   # a CUDA Torch's include folder
#
# The headers: Debian's libtorch-cuda-dev (contrib; Torch 2.6 in trixie), fetched from the apt
# mirror this machine uses, unpacked under .gpu-deps/torch-cuda-headers/ (ignored by git). The GPU
# node's Torch is newer (2.11 at the last visit): Torch's CUDA API below CUDAGraph and the caching
# allocator changes between versions, so passing here narrows the risk, it does not remove it.
# The CUDA runtime's headers come from $CUDA_HOME or /usr/local/cuda (nvcc's toolkit). The C++
# standard is the one the Torch headers require (their "#error C++NN or later" line), at least 17.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
script=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
root=$(cd "$(dirname "$script")/../.." && pwd)

headers="" suite=trixie
while [ $# -gt 0 ]; do
  case $1 in
    --headers) headers=${2:?--headers needs a folder}; shift 2
               [ -d "$headers" ] || { echo "check_cuda_sources.sh: --headers $headers: no such folder" >&2; exit 2; }
               headers=$(cd "$headers" && pwd) ;;
    --suite) suite=${2:?--suite needs a Debian suite}; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$script"; exit 0 ;;
    *) echo "check_cuda_sources.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
cd "$root"

cuda_include=""
for candidate in "${CUDA_HOME:-}/include" /usr/local/cuda/include; do
  [ -f "$candidate/cuda_runtime_api.h" ] && { cuda_include=$candidate; break; }
done
[ -n "$cuda_include" ] || { echo "check_cuda_sources.sh: no CUDA toolkit headers (set CUDA_HOME, or install nvcc's toolkit at /usr/local/cuda)" >&2; exit 1; }

if [ -z "$headers" ]; then
  cache=$root/.gpu-deps/torch-cuda-headers
  # The mirror apt uses (Debian 12's deb822 file, or sources.list's first "deb" line).
  mirror=""
  if [ -r /etc/apt/sources.list.d/debian.sources ]; then
    mirror=$(awk '/^URIs:/ && !found {print $2; found = 1}' /etc/apt/sources.list.d/debian.sources)
  elif [ -r /etc/apt/sources.list ]; then
    # "deb [options] URL suite ...": the options may hold spaces.
    mirror=$(sed -nE 's/^deb +(\[[^]]*\] +)?([^ ]+).*/\2/p' /etc/apt/sources.list | grep -v security | head -1 || true)
  fi
  mirror=${mirror:-http://deb.debian.org/debian}
  if [ ! -f "$cache/$suite/usr/include/ATen/cuda/CUDAGraph.h" ]; then
    for tool in curl xz dpkg-deb; do
      command -v "$tool" >/dev/null || { echo "check_cuda_sources.sh: needs '$tool'" >&2; exit 1; }
    done
    echo "check_cuda_sources.sh: fetching libtorch-cuda-dev ($suite, contrib) from $mirror"
    index=$(curl -fsS --max-time 120 "$mirror/dists/$suite/contrib/binary-amd64/Packages.xz" | xz -d) ||
      { echo "check_cuda_sources.sh: no package index at $mirror/dists/$suite/contrib (a Debian suite: trixie, sid)" >&2; exit 1; }
    file=$(awk '/^Package: /{p = ($2 == "libtorch-cuda-dev")} p && /^Filename: / && !found {print $2; found = 1}' <<<"$index")
    [ -n "$file" ] || { echo "check_cuda_sources.sh: $suite's contrib has no libtorch-cuda-dev (try --suite sid)" >&2; exit 1; }
    rm -rf "${cache:?}/$suite" && mkdir -p "$cache/$suite"
    curl -fsS --max-time 600 -o "$cache/$suite.deb" "$mirror/$file"
    dpkg-deb -x "$cache/$suite.deb" "$cache/$suite"
    rm -f "$cache/$suite.deb"
    echo "${file##*/}" >"$cache/$suite/package.txt"
  fi
  headers=$cache/$suite/usr/include
  echo "check_cuda_sources.sh: Torch headers of $(cat "$cache/$suite/package.txt" 2>/dev/null || echo "$suite")"
fi
[ -f "$headers/ATen/cuda/CUDAGraph.h" ] || { echo "check_cuda_sources.sh: $headers holds no CUDA Torch (no ATen/cuda/CUDAGraph.h)" >&2; exit 1; }
command -v g++ >/dev/null || { echo "check_cuda_sources.sh: needs g++" >&2; exit 1; }
# shellcheck source=torch_headers.sh
source "$root/scripts/gpu/torch_headers.sh"
standard=17
if read -r required _ < <(torch_header_standard "$headers") && [ "$required" -gt "$standard" ]; then
  standard=$required
fi
echo "check_cuda_sources.sh: C++$standard, CUDA headers of $cuda_include"

# Every source of lmkit's own that reaches Torch's CUDA API or lmkit's CUDA-only code.
mapfile -t sources < <(grep -rlE 'LMKIT_OPS_CUDA|<(c10|ATen)/cuda/' --include='*.cpp' ops runtime bindings repl tests | sort)
[ ${#sources[@]} -gt 0 ] || { echo "check_cuda_sources.sh: found no source using Torch's CUDA API" >&2; exit 1; }
failed=0
for source in "${sources[@]}"; do
  if log=$(g++ -std=c++"$standard" -fsyntax-only -Wall -Wextra -Wno-unused-parameter -DLMKIT_OPS_CUDA=1 \
             '-DLMKIT_OPS_CUDA_ARCHITECTURES="90"' -I. -isystem "$headers" \
             -isystem "$headers/torch/csrc/api/include" -isystem "$cuda_include" "$source" 2>&1) &&
     ! grep -q 'warning:' <<<"$log"; then
    echo "ok      $source"
  else
    echo "FAILED  $source"
    grep -m20 -E 'error|warning' <<<"$log" || printf '%s\n' "${log:0:2000}"
    failed=$((failed + 1))
  fi
done
echo "check_cuda_sources.sh: ${#sources[@]} sources, $failed failed"
[ "$failed" -eq 0 ]

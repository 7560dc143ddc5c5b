#!/usr/bin/env bash
# Installs every Debian package lmkit needs (idempotent, non-interactive), then configures and
# builds lmkit in ./build.
#
#   bash scripts/setup.sh               # packages + build
#   bash scripts/setup.sh --no-build    # packages only
#   bash scripts/setup.sh --sanitize    # packages + the ASan/UBSan build in ./build-asan
#   bash scripts/setup.sh --with-slurm  # also Slurm + munge, for the local-cluster test of `lmkit batch`
#   bash scripts/setup.sh --with-bench  # also PyTorch for Python, the yardstick of scripts/bench.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

build=yes
with_slurm=no
with_bench=no
build_dir=$root/build
cmake_extra=()
for option in "$@"; do
  case $option in
    --no-build) build=no ;;
    --sanitize) build_dir=$root/build-asan; cmake_extra+=(-DLMKIT_SANITIZE=ON) ;;
    --with-slurm) with_slurm=yes ;;
    --with-bench) with_bench=yes ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$option' (try --help)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev                      # LibTorch 1.13 (CPU) with its CMake config
  libopenblas-dev liblapacke-dev    # fast BLAS/LAPACK for Torch and our SVDs
  liblua5.4-dev lua5.4              # the scripting language, and the stock interpreter for `require "lmkit"`
  libreadline-dev                   # line editing and history in the REPL
  libfmt-dev nlohmann-json3-dev libcli11-dev
  libboost-math-dev                 # distributions for lmkit.stats
  libxxhash-dev                     # XXH3 content hashes of corpora and token caches
  libglpk-dev                       # GLPK's simplex: the exact argmaxable-word analysis
  libgtest-dev libgmock-dev         # the C++ tests
  gnuplot-nox                       # lmkit.plot
)

# Slurm's daemons and munge, only for the test that runs a private single-node cluster
# (scripts/slurm/single_node.sh); a cluster's users need none of this.
if [ "$with_slurm" = yes ]; then
  packages+=(slurmctld slurmd slurm-client munge)
fi

# Debian's PyTorch 1.13 for /usr/bin/python3, only for scripts/awd_lstm_reference.py (the plain
# PyTorch yardstick that scripts/bench.sh times lmkit against); lmkit itself needs none of it.
if [ "$with_bench" = yes ]; then
  packages+=(python3-torch time)   # GNU time: the peak RSS of each benchmarked program
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup.sh: run as root, or install sudo" >&2; exit 1; }
    sudo=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  # apt-get update takes the lists lock, which DPkg::Lock::Timeout does not cover: retry it.
  for attempt in $(seq 1 30); do
    $sudo apt-get update -qq && break
    echo "setup.sh: apt-get update failed (attempt $attempt), retrying in 10 s" >&2
    sleep 10
  done
  $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup.sh: all packages present"
fi

[ "$build" = yes ] || exit 0
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "${cmake_extra[@]}"
cmake --build "$build_dir"
echo "setup.sh: built $build_dir/lmkit"

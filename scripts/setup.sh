#!/usr/bin/env bash
# Installs every Debian package lmkit needs (idempotent, non-interactive), then configures and
# builds lmkit in ./build.
#
#   bash scripts/setup.sh               # packages + build
#   bash scripts/setup.sh --no-build    # packages only
#   bash scripts/setup.sh --sanitize    # packages + the ASan/UBSan build in ./build-asan
#   bash scripts/setup.sh --with-slurm  # also Slurm + munge, for the local-cluster test of `lmkit batch`
#   bash scripts/setup.sh --with-bench  # also PyTorch for Python, the yardstick of scripts/bench.sh
#   bash scripts/setup.sh --torch PYTHON  # a GPU machine: Torch from the PyTorch (pip or conda) of PYTHON
#
# --torch PYTHON (e.g. python3, or /opt/conda/envs/x/bin/python) installs the same packages except
# Debian's libtorch-dev and builds against the Torch inside PYTHON's PyTorch (its CMake config,
# torch.utils.cmake_prefix_path): with CUDA when that PyTorch has it (nvcc is then needed), for the
# architectures of the GPUs it sees (LMKIT_CUDA_ARCHITECTURES' default, 80;90, when it sees none).
# It stops, before installing anything, when PYTHON is missing or cannot import torch, or when that
# torch is older than 1.13, is Debian's python3-torch, was built with the old libstdc++ ABI, or has
# headers that require C++20; and before configuring when a CUDA torch finds no nvcc. With
# --with-bench, the yardstick runs on PYTHON's torch instead of Debian's python3-torch.
# Then run ./build/lmkit doctor --device cuda (docs/getting-started.md, "On a GPU machine").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

build=yes
with_slurm=no
with_bench=no
torch_python=""
build_dir=$root/build
cmake_extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --no-build) build=no ;;
    --sanitize) build_dir=$root/build-asan; cmake_extra+=(-DLMKIT_SANITIZE=ON) ;;
    --with-slurm) with_slurm=yes ;;
    --with-bench) with_bench=yes ;;
    --torch=?*) torch_python=${1#--torch=} ;;
    --torch|--torch=)
      [ "$1" = --torch ] && [ $# -ge 2 ] && [ -n "$2" ] && [[ $2 != --* ]] ||
        { echo "setup.sh: --torch needs a Python, e.g. --torch python3 (try --help)" >&2; exit 2; }
      torch_python=$2; shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

# --- --torch PYTHON: what that Python's PyTorch is, checked before anything is installed ---------
torch_cmake=()
if [ -n "$torch_python" ]; then
  python_path=$(command -v -- "$torch_python" 2>/dev/null) || {
    echo "setup.sh: --torch: no Python '$torch_python' here (neither a command on PATH nor an executable file)." \
         "Name the Python that has PyTorch, e.g. --torch python3 or --torch \"\$CONDA_PREFIX/bin/python\"." >&2
    exit 1
  }
  torch_probe=$(mktemp)
  trap 'rm -f "$torch_probe"' EXIT
  # One Python run; every fact a line "key=value". Warnings of torch go to stderr, kept for errors.
  torch_facts=$("$python_path" - 2>"$torch_probe" <<'PY'
import sys
print("executable=" + sys.executable)
print("python=" + sys.version.split()[0])
try:
    import torch, torch.utils
except Exception as error:
    print("import_error=" + f"{type(error).__name__}: {error}".replace("\n", " "))
    sys.exit(0)
print("version=" + torch.__version__)
print("file=" + torch.__file__)
print("cuda=" + (torch.version.cuda or ""))
print("abi=" + str(int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))))
print("prefix=" + torch.utils.cmake_prefix_path)
archs, arch_list, gpus = [], [], []
try:
    if torch.version.cuda and torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            major, minor = torch.cuda.get_device_capability(i)
            gpus.append(torch.cuda.get_device_name(i))
            if f"{major}{minor}" not in archs:
                archs.append(f"{major}{minor}")
                arch_list.append(f"{major}.{minor}")
except Exception as error:  # a broken driver: build for the default architectures
    print(f"torch.cuda: {type(error).__name__}: {error}", file=sys.stderr)
    archs, arch_list, gpus = [], [], []
print("archs=" + ";".join(archs))
print("arch_list=" + ";".join(arch_list))
print("gpus=" + ", ".join(gpus))
PY
) || {
    echo "setup.sh: --torch: '$torch_python' ($python_path) failed to describe its torch:" >&2
    tail -5 "$torch_probe" >&2
    exit 1
  }
  declare -A torch_fact=()
  while IFS='=' read -r key value; do
    [ -n "$key" ] && torch_fact[$key]=$value
  done <<<"$torch_facts"
  py_name="'$torch_python' (${torch_fact[executable]:-$python_path}, Python ${torch_fact[python]:-?})"
  if [ -n "${torch_fact[import_error]:-}" ] || [ -z "${torch_fact[version]:-}" ]; then
    echo "setup.sh: --torch: $py_name cannot import torch (${torch_fact[import_error]:-no answer}). Install" \
         "PyTorch for it ('$torch_python -m pip install torch', or 'conda install pytorch' in its conda environment;" \
         "where pip refuses the system's Python: 'python3 -m venv ~/torch-env && ~/torch-env/bin/pip install" \
         "torch', then --torch ~/torch-env/bin/python; pytorch.org names the build for the machine's CUDA" \
         "driver), or name the Python that has it." >&2
    exit 1
  fi
  torch_version=${torch_fact[version]}
  torch_cuda=${torch_fact[cuda]:-}
  case ${torch_fact[file]} in
    /usr/lib/python3/dist-packages/*)
      echo "setup.sh: --torch: $py_name has Debian's python3-torch $torch_version (CPU only); it is Debian's" \
           "Torch, which plain 'bash scripts/setup.sh' (without --torch) already builds against." >&2
      exit 1 ;;
  esac
  if ! "$python_path" -c 'import sys; v = sys.argv[1].split("+")[0].split("."); sys.exit(0 if (int(v[0]), int(v[1])) >= (1, 13) else 1)' \
       "$torch_version" 2>/dev/null; then
    echo "setup.sh: --torch: $py_name has torch $torch_version; lmkit needs 1.13 or newer" \
         "('$torch_python -m pip install --upgrade torch')." >&2
    exit 1
  fi
  if [ "${torch_fact[abi]}" != 1 ]; then
    echo "setup.sh: --torch: $py_name has torch $torch_version built with the old libstdc++ ABI" \
         "(torch._C._GLIBCXX_USE_CXX11_ABI is False). Debian's fmt and GoogleTest are built with the new" \
         "ABI and will not link into lmkit beside it. Install a PyTorch built with the new ABI: pip's wheels" \
         "since 2.7 ('$torch_python -m pip install --upgrade \"torch>=2.7\"') or conda-forge's pytorch; or" \
         "build lmkit by hand against LibTorch's cxx11-ABI download from pytorch.org" \
         "(cmake -DTorch_DIR=.../libtorch/share/cmake/Torch; docs/development.md, Build)." >&2
    exit 1
  fi
  # The newest PyTorch releases' headers refuse C++17 (an #error in ATen.h); lmkit compiles as C++17.
  torch_include=$(dirname "${torch_fact[file]}")/include
  if grep -qsE 'C\+\+2[0-9] or later compatible compiler is required' "$torch_include/ATen/ATen.h" \
       "$torch_include/torch/csrc/api/include/torch/all.h" "$torch_include/c10/macros/Macros.h"; then
    torch_minor=$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$torch_version")
    echo "setup.sh: --torch: $py_name has torch $torch_version, whose C++ headers require C++20; lmkit compiles" \
         "as C++17 (CMAKE_CXX_STANDARD in CMakeLists.txt), so the build would stop at their #error. Install an" \
         "earlier PyTorch ('$torch_python -m pip install \"torch<$torch_minor\"') until lmkit moves to C++20." >&2
    exit 1
  fi
  torch_dir=${torch_fact[prefix]}/Torch
  [ -f "$torch_dir/TorchConfig.cmake" ] || {
    echo "setup.sh: --torch: $py_name has torch $torch_version but no CMake config at $torch_dir/TorchConfig.cmake" \
         "(its torch.utils.cmake_prefix_path); reinstall PyTorch from pip or conda." >&2
    exit 1
  }
  echo "setup.sh: Torch from $py_name: torch $torch_version (${torch_fact[file]%/__init__.py})," \
       "CUDA ${torch_cuda:-none}${torch_fact[gpus]:+, GPUs: ${torch_fact[gpus]}}"
  torch_cmake=(-DCMAKE_PREFIX_PATH="${torch_fact[prefix]}" -DTorch_DIR="$torch_dir"
               -DPython3_EXECUTABLE="${torch_fact[executable]:-$python_path}")
  if [ -n "${torch_fact[archs]}" ]; then
    torch_cmake+=(-DLMKIT_CUDA_ARCHITECTURES="${torch_fact[archs]}")
    # Spares Torch's CMake config its own detection of the architectures (it compiles a probe).
    export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-${torch_fact[arch_list]}}
  elif [ -n "$torch_cuda" ]; then
    echo "setup.sh: this torch has CUDA $torch_cuda but sees no GPU (torch.cuda.is_available() is False):" \
         "the CUDA kernels are built for LMKIT_CUDA_ARCHITECTURES' default (80;90); rerun on a GPU node," \
         "or pass the architecture by hand (cmake -B build -DLMKIT_CUDA_ARCHITECTURES=86)."
  fi
fi

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev                      # LibTorch 1.13 (CPU) with its CMake config; not with --torch
  libopenblas-dev liblapacke-dev    # fast BLAS/LAPACK for Torch and our SVDs
  liblua5.4-dev lua5.4              # the scripting language, and the stock interpreter for `require "lmkit"`
  libreadline-dev                   # line editing and history in the REPL
  libfmt-dev nlohmann-json3-dev libcli11-dev
  libboost-math-dev                 # distributions for lmkit.stats
  libxxhash-dev                     # XXH3 content hashes of corpora and token caches
  libglpk-dev                       # GLPK's simplex: the exact argmaxable-word analysis
  zlib1g-dev                        # deflated .npz members (np.savez_compressed) in lmkit.read_tensors
  libgtest-dev libgmock-dev         # the C++ tests
  gnuplot-nox                       # lmkit.plot
  libprotobuf-dev protobuf-compiler # TensorBoard event files (log_tensorboard)
)
if [ -n "$torch_python" ]; then
  kept=()
  for p in "${packages[@]}"; do [ "$p" = libtorch-dev ] || kept+=("$p"); done
  packages=("${kept[@]}")
fi

# Slurm's daemons and munge, only for the test that runs a private single-node cluster
# (scripts/slurm/single_node.sh); a cluster's users need none of this.
if [ "$with_slurm" = yes ]; then
  packages+=(slurmctld slurmd slurm-client munge)
fi

# Debian's PyTorch 1.13 for /usr/bin/python3, only for scripts/awd_lstm_reference.py (the plain
# PyTorch yardstick that scripts/bench.sh times lmkit against); lmkit itself needs none of it.
# With --torch, the yardstick runs on that Python's PyTorch instead.
if [ "$with_bench" = yes ]; then
  packages+=(time)   # GNU time: the peak RSS of each benchmarked program
  if [ -n "$torch_python" ]; then
    echo "setup.sh: the yardstick of scripts/bench.sh: PYTHON=${torch_fact[executable]:-$python_path} bash scripts/bench.sh ..."
  else
    packages+=(python3-torch)
  fi
fi

command -v dpkg-query >/dev/null && command -v apt-get >/dev/null || {
  echo "setup.sh: no dpkg/apt here: this script installs Debian 12's packages. On a GPU node without apt," \
       "see docs/getting-started.md (On a GPU machine) and scripts/gpu/README.md." >&2
  exit 1
}
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
fresh=()
if [ -n "$torch_python" ]; then
  # A CUDA PyTorch's CMake config needs the CUDA toolkit to configure at all ("Your installed Caffe2
  # version uses CUDA but I cannot find the CUDA libraries"); nvcc also builds lmkit's kernels.
  if [ -n "$torch_cuda" ]; then
    nvcc=$(command -v nvcc || true)
    for dir in ${CUDA_HOME:+"$CUDA_HOME/bin"} /usr/local/cuda/bin; do
      [ -n "$nvcc" ] || [ ! -x "$dir/nvcc" ] || { nvcc=$dir/nvcc; export PATH=$PATH:$dir; }
    done
    if [ -z "$nvcc" ]; then
      echo "setup.sh: this torch $torch_version was built with CUDA $torch_cuda, and its CMake config needs the" \
           "CUDA toolkit to build against it, but no nvcc is in PATH, \$CUDA_HOME/bin or /usr/local/cuda/bin." \
           "Install the CUDA $torch_cuda toolkit (NVIDIA's installer, or 'conda install -c nvidia" \
           "cuda-toolkit=$torch_cuda' in a conda environment) and put its bin/ on PATH or set CUDA_HOME;" \
           "or use a CPU-only PyTorch." >&2
      exit 1
    fi
    nvcc_version=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
    if [ "${nvcc_version%%.*}" != "${torch_cuda%%.*}" ]; then
      echo "setup.sh: warning: nvcc ($nvcc) is CUDA $nvcc_version but this torch was built with CUDA" \
           "$torch_cuda: the major versions differ; if the build or 'lmkit doctor' fails, install the CUDA" \
           "$torch_cuda toolkit." >&2
    fi
  fi
  # A build folder configured against another Torch keeps that Torch's cached paths (Caffe2_DIR and
  # the rest): configure it afresh.
  cached=$(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
  if [ -n "$cached" ] && [ "$(realpath -m "$cached")" != "$(realpath -m "$torch_dir")" ]; then
    echo "setup.sh: $build_dir was configured against another Torch ($cached); configuring it afresh"
    fresh=(--fresh)
  fi
else
  cached=$(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
  case $cached in
    ""|/usr/*) ;;
    *) echo "setup.sh: $build_dir stays configured against the Torch it was set up with ($cached);" \
            "remove $build_dir to build against Debian's instead" ;;
  esac
fi
cmake "${fresh[@]}" -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${torch_cmake[@]}" "${cmake_extra[@]}"
# What the quickstart needs: the lmkit program and the Lua module. scripts/test.sh builds the rest
# (the test program) when it first runs.
cmake --build "$build_dir" --target lmkit lmkit_lua_module
echo "setup.sh: built $build_dir/lmkit and the Lua module $build_dir/lua/lmkit.so"
if [ -n "$torch_python" ] && [ -n "$torch_cuda" ]; then
  echo "setup.sh: next, on the GPU: $build_dir/lmkit doctor --device cuda"
fi

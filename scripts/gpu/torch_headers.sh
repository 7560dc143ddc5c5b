# shellcheck shell=bash
# Sourced: what a Torch's headers require of the compiler (scripts/gpu/configure.sh on the node,
# scripts/gpu/check_cuda_sources.sh on the connected machine).

# torch_header_standard INCLUDE: the highest C++ standard that a header of the Torch whose include
# folder is INCLUDE requires — its "#error C++NN or later compatible compiler is required" line —
# and that header's path, as "NN PATH"; nothing when none of them says.
torch_header_standard() {
  local include=$1 header required best="" where=""
  for header in ATen/ATen.h torch/csrc/api/include/torch/all.h c10/macros/Macros.h; do
    [ -f "$include/$header" ] || continue
    # (|| true: a header that cannot be read names no standard; under set -e and pipefail it would
    # otherwise end the caller without a word.)
    required=$(sed -nE 's/^ *# *error *C\+\+([0-9]+) or later compatible compiler is required.*/\1/p' "$include/$header" |
      sort -n | tail -1 || true)
    if [ -n "$required" ] && { [ -z "$best" ] || [ "$required" -gt "$best" ]; }; then
      best=$required where=$include/$header
    fi
  done
  [ -z "$best" ] || echo "$best $where"
}

#!/usr/bin/env bash
# lmkit.write_tensors' files read by the programs they are for: NumPy (np.load of .npy/.npz),
# PyTorch (torch.load of .pt) and safetensors' layout checked by a reader written from its
# specification. Skipped (exit 77) where Debian's python3-numpy and python3-torch are not installed
# (scripts/setup.sh --with-bench installs python3-torch, which brings NumPy).
#   tests/cli/tensor_files_python.sh LMKIT
set -euo pipefail
lmkit=$1
python=/usr/bin/python3
"$python" -c "import numpy, torch" 2>/dev/null || { echo "skipped: no python3-numpy/python3-torch"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/write.lua" <<LUA
local t = {w = lmkit.arange(12, {dtype = "float32"}):view(3, 4), ids = lmkit.arange(5), mask = lmkit.tensor({true, false}),
           half = lmkit.tensor({0.5, 1.5}, {dtype = "float16"})}
lmkit.write_tensors("$dir/t.npz", t)
lmkit.write_tensors("$dir/t.pt", t)
lmkit.write_tensors("$dir/t.safetensors", t)
lmkit.write_tensors("$dir/w.npy", {w = t.w})
LUA
"$lmkit" run "$dir/write.lua"
"$python" - "$dir" <<'PY'
import json, struct, sys
import numpy as np, torch
d = sys.argv[1]
want = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "ids": np.arange(5), "mask": np.array([True, False]),
        "half": np.array([0.5, 1.5], dtype=np.float16)}
def same(name, got):
    w = want[name]
    assert got.dtype == w.dtype and got.shape == w.shape and (got == w).all(), (name, got, w)
z = np.load(d + "/t.npz")
for name in want: same(name, z[name])
same("w", np.load(d + "/w.npy"))
state = torch.load(d + "/t.pt")
for name in want: same(name, state[name].numpy())
raw = open(d + "/t.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
codes = {"F32": np.float32, "I64": np.int64, "BOOL": np.bool_, "F16": np.float16}
for name, e in header.items():
    if name == "__metadata__": continue
    b, end = e["data_offsets"]
    same(name, np.frombuffer(raw[8 + n + b:8 + n + end], dtype=codes[e["dtype"]]).reshape(e["shape"]))
print("tensor files ok")
PY

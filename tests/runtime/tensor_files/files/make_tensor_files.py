#!/usr/bin/python3
"""Writes the tensor-file fixtures of tests/runtime/tensor_files/tensor_file_test.cpp with the writers
people use: NumPy (np.save, np.savez, np.savez_compressed) and PyTorch (torch.save, zip and legacy),
and safetensors laid out by hand from its specification (the `safetensors` package is not in
Debian 12; its format is an 8-byte header length, a JSON header and the bytes).

Every array is arange(n) in the stored dtype, reshaped, so the test knows the values without
reading anything else: value at C-order index i is i (booleans: i % 2 == 1).

    /usr/bin/python3 tests/runtime/tensor_files/files/make_tensor_files.py   # Debian 12: python3-numpy, python3-torch
"""
import json
import os
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def arange(n, dtype):
    if dtype == np.bool_:
        return np.arange(n) % 2 == 1
    return np.arange(n).astype(dtype)


def path(name):
    return os.path.join(HERE, name)


# NumPy: one dtype per array, C and Fortran order, 0-d and empty arrays.
arrays = {
    "f64": arange(6, np.float64).reshape(2, 3),
    "f32": arange(24, np.float32).reshape(2, 3, 4),
    "f16": arange(5, np.float16),
    "i64": arange(6, np.int64).reshape(3, 2),
    "i32": arange(4, np.int32),
    "i16": arange(4, np.int16),
    "i8": arange(4, np.int8),
    "u8": arange(4, np.uint8),
    "b": arange(4, np.bool_),
    "scalar": np.array(7.0, dtype=np.float32),
    "empty": np.zeros((0, 3), dtype=np.float32),
}
np.save(path("f32_c.npy"), arrays["f32"])
np.save(path("f64_fortran.npy"), np.asfortranarray(arrays["f32"].astype(np.float64)))
np.save(path("f32_bigendian.npy"), arrays["f32"].astype(">f4"))
np.savez(path("all.npz"), **arrays)
np.savez_compressed(path("all_compressed.npz"), **arrays)

# PyTorch: a state_dict-like dict with bfloat16 and a nested dict; and the legacy format.
state = {
    "weight": torch.arange(6, dtype=torch.float32).reshape(2, 3),
    "bias": torch.arange(2, dtype=torch.bfloat16),
    "ids": torch.arange(3, dtype=torch.int64),
    "block": {"scale": torch.arange(4, dtype=torch.float16)},
}
torch.save(state, path("state.pt"))
torch.save(state, path("state_legacy.pt"), _use_new_zipfile_serialization=False)
# A whole module, as the reference AWD-LSTM/MoS code saves its model: its parameters and buffers are
# read under their state_dict names ("0.weight", "1.running_mean"), nothing else of it.
torch.manual_seed(0)
module = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
with torch.no_grad():
    module[0].weight.copy_(torch.arange(6, dtype=torch.float32).reshape(2, 3))
    module[0].bias.copy_(torch.arange(2, dtype=torch.float32))
module.eval()
module.extra = torch.ones(1)  # an attribute, not a parameter: left out
torch.save(module, path("whole_module.pt"))

# safetensors, by its specification: entries' data in header order, header padded to 8 bytes.
codes = {np.float64: "F64", np.float32: "F32", np.float16: "F16", np.int64: "I64", np.int32: "I32",
         np.int16: "I16", np.int8: "I8", np.uint8: "U8", np.bool_: "BOOL"}
header, data = {"__metadata__": {"format": "np"}}, b""
for name in ["f64", "f32", "f16", "i64", "i32", "i16", "i8", "u8", "b", "scalar", "empty"]:
    a = arrays[name].copy(order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
    header[name] = {"dtype": codes[a.dtype.type], "shape": list(a.shape), "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
# bfloat16: the upper halves of float32 values 0, 1, 2 (exact in bfloat16).
bf16 = b"".join(struct.pack("<f", float(v))[2:] for v in range(3))
header["bf16"] = {"dtype": "BF16", "shape": [3], "data_offsets": [len(data), len(data) + len(bf16)]}
data += bf16
text = json.dumps(header).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(path("all.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + data)
# An output layer whose last word no h can make the top-1 (it lies inside the others' hull), with
# its vocabulary, for recipes/output_layer.lua.
decoder = np.array([[1, 0], [-1, 0], [0, 1], [0, -1], [0.1, 0.1]], dtype=np.float32).tobytes()
text = json.dumps({"lm_head.weight": {"dtype": "F32", "shape": [5, 2], "data_offsets": [0, len(decoder)]}}).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(path("tiny_decoder.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + decoder)
with open(path("tiny_vocab.txt"), "w") as f:
    f.write("right\nleft\nup\ndown\ninside\n")
# Log-probabilities of a softmax layer with d = 4 and a bias over 100 contexts and 30 words: rank
# d + 2 = 6, for recipes/hidden_size.lua --set logits=.
rng = np.random.default_rng(4)
logits = rng.standard_normal((100, 4)) @ rng.standard_normal((4, 30)) + rng.standard_normal(30)
logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
np.save(path("softmax_logp.npy"), logp.astype(np.float32))
# The same layer computed in float32 and stored as float64: float32's rounding noise under a float64
# dtype (hidden_size counts its Press rank with float32's eps and says so).
logits32 = logits.astype(np.float32)
logp32 = logits32 - np.log(np.exp(logits32).sum(axis=1, keepdims=True))
np.save(path("softmax_logp_float32_in_float64.npy"), logp32.astype(np.float64))
print("wrote", sorted(n for n in os.listdir(HERE) if not n.endswith(".py")))

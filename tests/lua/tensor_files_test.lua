-- lmkit.read_tensors / list_tensors / write_tensors from a script: other programs' files in, tables
-- name → Tensor out, and back.
local T = require "lmkit.testing"

local files = (os.getenv("LMKIT_SOURCE_DIR") or "..") .. "/tests/runtime/tensor_files/files/"
local out = os.tmpname()
os.remove(out)
lmkit.fs.mkdir(out)

T.test("a state_dict saved by torch.save reads as a table of tensors", function()
  local state = lmkit.read_tensors(files .. "state.pt")
  T.eq(state.weight:size(), {2, 3})
  T.eq(state.weight:totable(), {{0, 1, 2}, {3, 4, 5}})
  T.eq(state.bias:dtype(), "bfloat16")
  T.eq(state["block.scale"]:dtype(), "float16")
  local as_float = lmkit.read_tensors(files .. "state.pt", {names = {"bias"}, dtype = "float32"})
  T.eq(as_float.bias:dtype(), "float32")
  T.eq(as_float.weight, nil)
end)

T.test("list_tensors reads headers only", function()
  local entries = lmkit.list_tensors(files .. "all.safetensors")
  T.eq(#entries, 12)
  T.eq(entries[1].name, "f64")
  T.eq(entries[1].shape, {2, 3})
  T.eq(entries[1].bytes, 48)
end)

T.test("written files read back; bad names and files are errors naming them", function()
  local t = {w = lmkit.randn(4, 3), ids = lmkit.arange(5)}
  for _, name in ipairs({"x.safetensors", "x.npz", "x.pt"}) do
    lmkit.write_tensors(out .. "/" .. name, t)
    local back = lmkit.read_tensors(out .. "/" .. name)
    T.truthy(back.w == t.w, name)
    T.truthy(back.ids == t.ids, name)
  end
  T.raises(function() lmkit.read_tensors(files .. "all.safetensors", {names = {"bf1"}}) end, "did you mean 'bf16'")
  T.raises(function() lmkit.read_tensors(out .. "/missing.npz") end, "missing.npz")
  T.raises(function() lmkit.write_tensors(out .. "/x.npy", t) end, "a .npy file holds one array")
  T.raises(function() lmkit.write_tensors(out .. "/y.safetensors", {w = 3}) end, "bad argument #2 to 'lmkit.write_tensors'")
  -- Names with a NUL reach the writer whole (Lua strings hold any byte) and are refused, not cut to "w".
  for _, name in ipairs({"n.safetensors", "n.npz", "n.pt"}) do
    T.raises(function() lmkit.write_tensors(out .. "/" .. name, {["w\0a"] = t.w, ["w\0b"] = t.w}) end, "holds a NUL byte")
    T.eq(io.open(out .. "/" .. name), nil, name .. " was not written")
  end
  for _, name in ipairs({"x.safetensors", "x.npz", "x.pt"}) do os.remove(out .. "/" .. name) end
end)

T.test("a reference AWD-LSTM, MoS or thesis-code state_dict imports as a model, and a model exports as one", function()
  local models = (os.getenv("LMKIT_SOURCE_DIR") or "..") .. "/tests/runtime/models/files/"
  local expected = lmkit.read_tensors(models .. "reference_outputs.pt")
  local m = lmkit.import_checkpoint(models .. "mos_reference.pt", {format = "mos"})
  T.eq(m:is_training(), false)
  T.truthy((m:log_probs(expected.ids) - expected.mos_log_probs):abs():max():item() <= 1e-5)
  local path = out .. "/exported.pt"
  m:export(path, {format = "mos"})
  local back = lmkit.import_checkpoint(path, {format = "mos", dropoutl = 0.1})
  T.truthy(back:log_probs(expected.ids) == m:log_probs(expected.ids))
  T.eq(lmkit.json_decode(back:config()).head.dropoutl, 0.1)
  os.remove(path)
  T.raises(function() lmkit.import_checkpoint(models .. "mos_reference.pt") end, "option 'format' is required")
  T.raises(function() lmkit.import_checkpoint(models .. "mos_reference.pt", {format = "moss"}) end, "format")
  T.raises(function() lmkit.import_checkpoint(models .. "mos_reference.pt", {format = "mos", dropot = 0.1}) end,
           "did you mean 'dropout'")
  T.raises(function() lmkit.import_checkpoint(models .. "mos_reference.pt", {format = "awd-lstm"}) end,
           "use format = \"mos\"")
  T.raises(function() m:export(out .. "/x.pt", {format = "awd-lstm"}) end, "this model's head is mos")
  -- The MoS code's floor, and the thesis's code with the settings its file does not hold.
  local floored = lmkit.import_checkpoint(models .. "mos_floor_reference.pt", {format = "mos", floor = 1e-8})
  T.truthy((floored:log_probs(expected.ids) - expected.mos_floor_log_probs):abs():max():item() <= 1e-4)
  T.eq(lmkit.json_decode(floored:config()).head.floor, 1e-8)
  local thesis = lmkit.read_tensors(models .. "thesis_outputs.pt")
  local gss = lmkit.import_checkpoint(models .. "thesis_smax.pt", {format = "thesis", top_model = "gs_smax", gs_smax_c = 0.5,
                                                                   gs_smax_k = 2.5})
  T.truthy((gss:log_probs(thesis.ids) - thesis.gs_smax_log_probs):abs():max():item() <= 1e-5)
  T.raises(function() lmkit.import_checkpoint(models .. "thesis_mos.pt", {format = "thesis", top_model = "mox"}) end,
           "top_model")
  T.raises(function() lmkit.import_checkpoint(models .. "thesis_mos.pt", {format = "thesis", floor = -1}) end, "floor")
  -- export's option is file_format (write_tensors' is format): its message names its own.
  T.raises(function() m:export(out .. "/x.h5", {format = "mos"}) end,
           "has no extension that names a file format (.pt, .safetensors, .npz): give one, or the option file_format")
  os.remove(out)
end)

T.run()

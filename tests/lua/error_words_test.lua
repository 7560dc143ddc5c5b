-- Errors from Torch and from the file system reach Lua in lmkit's words (bindings/torch_error_text.h):
-- 1-based dimensions and list entries, the memory an allocation asked for and who asked, autograd
-- misuse with its way out, a folder where a file should be. Registered with ASan's
-- allocator_may_return_null=1: it asks for allocations no machine has, which must fail, not abort.
local T = require "lmkit.testing"

T.test("Torch's errors reach Lua in lmkit's words: 1-based shapes, memory asked, autograd misuse", function()
  T.raises(function() return lmkit.ones(2, 3):matmul(lmkit.ones(2, 3)) end,
           "sizes [2, 3] and [2, 3] cannot be multiplied: the first's size 3 (its dimension 2) must equal the second's size 2")
  T.raises(function() return lmkit.ones(2, 3) + lmkit.ones(4, 5) end, "at non-singleton dimension 2 (dimensions and entries counted from 1)")
  T.raises(function() return lmkit.cat({lmkit.ones(2, 3), lmkit.ones(4, 5)}, 1) end, "for tensor 2 of the list")
  T.raises(function() return lmkit.stack({lmkit.ones(2, 3), lmkit.ones(4, 5)}) end, "at entry 1 and [4, 5] at entry 2")
  T.raises(function() local t = lmkit.ones(2, 3); t[{{1, 2}, {}}] = lmkit.ones(3, 3) end, "dimension 1.")
  T.raises(function() return lmkit.zeros(1e6, 1e6) end,
           "lmkit.zeros: out of memory: it asked for 3725.3 GiB (4000000000000 bytes) at once, and this machine has ")
  T.raises(function() return lmkit.model{vocab_size = 100, emb = 8, nhid = 16, nhidlast = 8, head = lmkit.heads.mos{K = 1e9}} end,
           'lmkit.model: making the head {"K":1000000000,"dropoutl":0.29,"floor":0.0,"kind":"mos"}: out of memory: it asked for')
  T.raises(function() lmkit.ones(2):sum():backward() end, "Tensor:backward: nothing to differentiate")
  T.raises(function()
    local a = lmkit.ones(2, {requires_grad = true})
    local loss = (a * a):sum()
    loss:backward()
    loss:backward()
  end, "compute it again (a fresh forward pass) before each backward")
  local m = lmkit.model{vocab_size = 20, emb = 8, nhid = 16, nhidlast = 8}
  for _, p in ipairs(m:parameters()) do p:requires_grad_(false) end
  local ids = lmkit.ones(3, 2, {dtype = "int64"})
  T.raises(function() m:loss(ids, ids):backward() end, "not all frozen")
end)

T.test("a dtype an analysis cannot take says which it takes", function()
  T.raises(function() return lmkit.analysis.svdvals(lmkit.ones(4, 3, {dtype = "float16"})) end,
           "does not take float16 tensors here")
  T.raises(function() return lmkit.analysis.svdvals(lmkit.ones(4, 3, {dtype = "int64"})) end,
           "svdvals needs a floating-point matrix, got int64")
end)

T.test("a folder where a file is expected is named as a folder", function()
  local folder = os.tmpname()
  os.remove(folder)
  lmkit.fs.mkdir(folder)
  T.raises(function() lmkit.load(folder) end, "lmkit.load: cannot open checkpoint '" .. folder .. "': it is a folder, not a file")
  os.remove(folder)
end)

T.run()

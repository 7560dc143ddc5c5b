-- Tensor memory the Lua collector sees (docs/lua-api.md, "Memory"): a tensor loop and a Lua head
-- keep their memory bounded with no collectgarbage anywhere in them. Each bound is checked while
-- the loop runs, so code that leaks stops at the bound instead of taking the machine's memory.
local T = require "lmkit.testing"

local MB = 1024 * 1024
lmkit.set_threads(2)  -- the BLAS's per-thread buffers: as many on any machine

-- The process's resident memory grows by at most `bound` bytes over `base` (glibc keeps freed
-- blocks in the process, so resident memory is about the peak of what was live; the sanitizers'
-- quarantine is capped for this test in tests/CMakeLists.txt).
local function check_resident(base, bound, where)
  local now = lmkit.tensor_memory().resident
  if base > 0 and now - base > bound then
    error(("%s: resident memory grew by %.0f MB (bound %.0f MB)"):format(where, (now - base) / MB, bound / MB), 2)
  end
end

T.test("a tensor loop without collectgarbage stays within 3x one iteration's tensors", function()
  lmkit.seed(1)
  local w = lmkit.randn(500, 500, {requires_grad = true})
  local iteration = 3 * 2000 * 500 * 4   -- x, x·w and tanh(x·w): 12 MB (the sum holds the graph behind them)
  local _ = lmkit.randn(2000, 500):matmul(w):tanh():sum():item()  -- the BLAS's buffers exist before memory is read
  local start = lmkit.tensor_memory()
  lmkit.reset_peak_tensor_memory()
  for i = 1, 250 do
    local x = lmkit.randn(2000, 500)
    local y = x:matmul(w):tanh():sum()
    local m = lmkit.tensor_memory()
    if m.peak_host - start.host > 3 * iteration then
      error(("iteration %d: host tensors grew by %.1f MB, more than 3x one iteration's %.0f MB"):format(
        i, (m.peak_host - start.host) / MB, iteration / MB))
    end
    check_resident(start.resident, 150 * MB, ("iteration %d"):format(i))
    T.truthy(y:item() == y:item())
  end
  T.truthy(lmkit.tensor_memory().collections > start.collections, "the loop's garbage was collected because tensors grew")
end)

T.test("what a Lua head's function made and did not return is released when it returns", function()
  lmkit.seed(2)
  local made = setmetatable({}, {__mode = "v"})   -- weak: holds the function's intermediates only while Lua does
  local head = lmkit.heads.custom{name = "softmax in Lua", forward = function(h, weight, bias)
    local logits = h:matmul(weight:transpose(1, 2)) + bias
    made[#made + 1] = logits
    return logits:log_softmax()
  end}
  local model = lmkit.model{vocab_size = 50, emb = 8, nhid = 16, nhidlast = 8, nlayers = 1, head = head}
  local ids = lmkit.arange(0, 40):view(10, 4)
  local loss = model:loss(ids, ids)
  T.eq(next(made), nil, "the logits of the call were collected as it returned")
  loss:backward()
  T.truthy(loss:item() > 0)
end)

T.test("an allocation that fails first collects the garbage, even with the collector stopped", function()
  local held = setmetatable({}, {__mode = "v"})
  local inside
  collectgarbage("stop")   -- the script's choice: lmkit's paced collections respect it, the last resort does not
  do
    held[1] = lmkit.zeros(1000)   -- garbage at the end of this block
    -- A finalizer of the script's, run by that collection, may not compute with lmkit (Torch is in
    -- the middle of the failing allocation): it gets an error saying so.
    setmetatable({}, {__gc = function() inside = select(2, pcall(lmkit.zeros, 3)) end})
  end
  local ok, message = pcall(lmkit.zeros, 1000000, 1000000)   -- 4 TB: no machine gives it
  collectgarbage("restart")
  T.truthy(not ok, "a 4 TB tensor was allocated")
  T.truthy(tostring(message):find("out of memory: it asked for 3725.3 GiB (4000000000000 bytes)", 1, true), tostring(message))
  T.eq(held[1], nil, "the tensor left for the collector was collected before the allocation failed")
  T.truthy(tostring(inside):find("called from a finalizer while lmkit collects garbage", 1, true), tostring(inside))
end)

T.test("collectgarbage('stop') stops lmkit's paced collections too", function()
  local before = lmkit.tensor_memory().collections
  collectgarbage("stop")
  for _ = 1, 20 do local x = lmkit.zeros(1000, 1000) end   -- 80 MB made and dropped: due many times over
  local during = lmkit.tensor_memory().collections
  collectgarbage("restart")
  collectgarbage()
  T.eq(during, before)
  local after_restart = lmkit.tensor_memory().collections
  for _ = 1, 20 do local x = lmkit.zeros(1000, 1000) end
  T.truthy(lmkit.tensor_memory().collections > after_restart, "paced again once restarted")
end)

-- Trains the same model with `head` on a synthetic language for `epochs` epochs of about 100 steps;
-- returns the peak of host tensor bytes over the training (above what was held before) and the
-- resident memory's growth, checked at every step against `bound`.
local function train_peak(head, bound)
  local language = lmkit.data.synthetic{vocab = 2000, states = 8, dim = 4, seed = 3}
  local corpus = language:corpus{train = 20000, valid = 1000, test = 1000}
  lmkit.seed(3)
  local model = lmkit.model{vocab_size = 2000, emb = 16, nhid = 32, nhidlast = 16, nlayers = 2, head = head}
  local dir = os.tmpname()
  os.remove(dir)
  -- The earlier tests' garbage collected first: tensors freed during the training would otherwise
  -- hide its growth under the level it started from (the peak never passing the start).
  collectgarbage()
  local start = lmkit.tensor_memory()
  lmkit.reset_peak_tensor_memory()
  local steps = 0
  lmkit.train{model = model, corpus = corpus, run_dir = dir, epochs = 3, lr = 5, batch_size = 10, bptt = 20,
              switch = "none", test = false, log_interval = 1000000,
              on_step = function()
                steps = steps + 1
                local m = lmkit.tensor_memory()
                if bound and m.peak_host - start.host > bound then
                  error(("step %d: host tensors grew by %.1f MB (bound %.1f MB)"):format(steps, (m.peak_host - start.host) / MB, bound / MB))
                end
                check_resident(start.resident, 200 * MB, ("step %d"):format(steps))
              end}
  os.execute("rm -rf '" .. dir .. "'")
  T.truthy(steps >= 250, "a few hundred steps, got " .. steps)
  return lmkit.tensor_memory().peak_host - start.host
end

local builtin_peak
local function builtin_softmax_peak()
  builtin_peak = builtin_peak or train_peak(lmkit.heads.softmax())
  return builtin_peak
end

T.test("a Lua head computing Softmax trains in the memory of the built-in Softmax", function()
  local builtin = builtin_softmax_peak()
  local lua_head = lmkit.heads.custom{name = "softmax in Lua", forward = function(h, weight, bias)
    return (h:matmul(weight:transpose(1, 2)) + bias):log_softmax()
  end}
  -- One step's logits, log-probabilities and their gradients are ~1.6 MB each: a head that kept a
  -- step's graph would pass the bound within a few steps.
  local peak = train_peak(lua_head, 1.3 * builtin + 4 * MB)
  T.truthy(peak <= 1.3 * builtin + 4 * MB, ("Lua head's peak %.1f MB, built-in's %.1f MB"):format(peak / MB, builtin / MB))
end)

T.test("a pointwise head trains in bounded memory", function()
  local builtin = builtin_softmax_peak()
  train_peak(lmkit.heads.pointwise(function(l) return l * 2 - l:softplus() end), 1.5 * builtin + 8 * MB)
end)

T.run()

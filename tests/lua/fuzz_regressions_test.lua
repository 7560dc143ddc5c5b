-- One test per bug the binding fuzzer (tests/fuzz/binding_fuzz.lua) found: each call here crashed,
-- hung, overflowed (UBSan) or freed memory still in use (ASan) before its fix. Each test ends with
-- a full garbage collection and a fresh allocation, where a corrupted state would show.
local T = require "lmkit.testing"

local function state_is_healthy()
  collectgarbage()
  collectgarbage()
  T.eq(lmkit.zeros(2, 3):size(), {2, 3})
end

local function tiny_model(head)
  return lmkit.model{vocab_size = 6, emb = 3, nhid = 4, nhidlast = 3, nlayers = 2, head = head}
end

local ids = lmkit.tensor({{0, 1}, {2, 3}, {4, 5}})

T.test("set_threads checks the count before narrowing it to int", function()
  local before = lmkit.get_threads()
  -- 2^32 + 1 was 1 thread, -1e18 was 1,486,618,624 threads (OpenMP then hung or aborted).
  T.raises(function() lmkit.set_threads((1 << 32) + 1) end, "thread count must be in 1..1024, got 4294967297")
  T.raises(function() lmkit.set_threads(-1e18) end, "lmkit.set_threads: thread count must be in 1..1024")
  T.raises(function() lmkit.set_threads(0) end, "got 0")
  T.raises(function() lmkit.set_threads(1025) end, "got 1025")
  T.eq(lmkit.get_threads(), before)
  lmkit.set_threads(1)
  T.eq(lmkit.get_threads(), 1)
  -- n cores go to OpenBLAS (when Torch's BLAS is OpenBLAS, as Debian's: then get_threads' second
  -- value is its count, else 0); Torch's pool keeps 1 unless torch= says otherwise
  lmkit.set_threads(2)
  local torch_threads, blas_threads = lmkit.get_threads()
  T.eq(torch_threads, 1)
  T.truthy(blas_threads == 2 or blas_threads == 0, "OpenBLAS threads: " .. tostring(blas_threads))
  lmkit.set_threads(2, {torch = 2, blas = 1})
  torch_threads, blas_threads = lmkit.get_threads()
  T.eq(torch_threads, 2)
  T.truthy(blas_threads == 1 or blas_threads == 0, "OpenBLAS threads: " .. tostring(blas_threads))
  T.raises(function() lmkit.set_threads(1, {blas = -1}) end, "option 'blas' must be in [0, 1024], got -1")
  T.raises(function() lmkit.set_threads(1, {torch = 2000}) end, "option 'torch' must be in [0, 1024], got 2000")
  T.raises(function() lmkit.set_threads(1, {blsa = 2}) end, "option 'blsa' is unknown")
  lmkit.set_threads(before)
  T.eq(lmkit.matmul(lmkit.ones(20, 20), lmkit.ones(20, 20))[1][1]:item(), 20.0)
end)

T.test("narrow with a length near 2^63 is an argument error (start + length overflowed)", function()
  local t = lmkit.ones(3)
  T.raises(function() t:narrow(1, 2, math.maxinteger) end, "run past the end of dimension 1")
  T.raises(function() t:narrow(1, 3, math.maxinteger - 1) end, "run past the end")
  T.eq(t:narrow(1, 2, 2):size(), {2})
  state_is_healthy()
end)

T.test("model sizes are checked before anything is allocated", function()
  -- 4·nhid overflowed int64 (UBSan); a huge nlayers built layers for 45 s until memory ran out.
  T.raises(function() lmkit.model{vocab_size = 6, nhid = 1 << 62} end, "more than this machine's memory")
  T.raises(function() lmkit.model{vocab_size = 6, emb = 3, nhid = 1, nhidlast = 3, nlayers = 1 << 31} end,
           "nlayers 2147483648) need")
  T.raises(function() lmkit.model{vocab_size = math.maxinteger, emb = 3} end, "over 2^63 bytes")
  T.eq(tiny_model():parameter_count().total > 0, true)
  state_is_healthy()
end)

T.test("a NaN dropout rate is refused like any rate outside [0, 1)", function()
  T.raises(function() lmkit.model{vocab_size = 6, dropout = 0 / 0} end, "AWD-LSTM option 'dropout' must be in [0, 1), got NaN")
  T.raises(function() lmkit.model{vocab_size = 6, wdrop = 0 / 0} end, "AWD-LSTM option 'wdrop' must be in [0, 1), got NaN")
end)

T.test("a NaN for an option without a range names what it must be", function()
  T.raises(function() lmkit.model{vocab_size = 6, alpha = 0 / 0} end, "option 'alpha' must be a finite number, got NaN")
  T.raises(function() lmkit.heads.gss{c = 0 / 0} end, "option 'c' must be a finite number, got NaN")
end)

-- A head written in Lua that closes its own model (or another argument) in the middle of the call:
-- the model, tokens and vocabulary must stay alive until the call returns.
local function closing_head(victims)
  return lmkit.heads.pointwise(function(logits)
    for _, v in ipairs(victims) do getmetatable(v).__close(v) end
    collectgarbage()
    return logits
  end)
end

T.test("a Lua head that closes its model during a call does not free the running model", function()
  local tokens = lmkit.tensor({0, 1, 2, 3, 4, 5, 0, 1})
  for name, call in pairs{
    log_probs = function(m) return m:log_probs(ids) end,
    loss = function(m) return m:loss(ids, ids) end,
    top_k = function(m) return m:top_k(ids, 2) end,
    evaluate = function(m) return lmkit.evaluate(m, tokens, {batch_size = 2, bptt = 2}) end,
    logp_matrix = function(m) return lmkit.analysis.logp_matrix(m, tokens, {bptt = 2}) end,
    logp_svdvals = function(m) return lmkit.analysis.logp_svdvals(m, tokens, {bptt = 2}) end,
    dynamic_evaluate = function(m)
      return lmkit.dynamic_evaluate(m, tokens, tokens, {bptt = 2, batch_size = 1, stats_batch_size = 1})
    end,
  } do
    local victims = {}
    local model = tiny_model(closing_head(victims))
    victims[1] = model
    -- The call finishes on the model it started with (or fails with a message), never on freed memory.
    local ok, err = pcall(call, model)
    T.truthy(ok or type(err) == "string", name)
    T.raises(function() model:forward(ids) end, "Model was already closed")
    state_is_healthy()
  end
end)

T.test("a Lua head that closes the vocabulary during top_k_contexts does not free it under the call", function()
  local function only_vocab()  -- the Vocab userdata as the vocabulary's last owner
    local corpus = lmkit.data.synthetic{vocab = 6, states = 3, dim = 2}:corpus{train = 10, valid = 10, test = 10}
    return corpus.vocab
  end
  local vocab = only_vocab()
  collectgarbage()
  local model = tiny_model(closing_head({vocab}))
  local ok, result = pcall(lmkit.analysis.top_k_contexts, model, vocab, {"w0 w1", "w2"}, {k = 2})
  T.eq(ok, true, tostring(result))
  T.eq(#result, 2)
  T.eq(result[1].top[1].word:match("^w%d$") ~= nil, true)
  T.raises(function() vocab:size() end, "Vocab was already closed")
  state_is_healthy()
end)

T.test("totable of an empty tensor with huge leading sizes is refused, not built table by table", function()
  T.raises(function() lmkit.zeros(1 << 40, 0):totable() end, "has no elements but would become 1099511627777 nested empty tables")
  T.eq(lmkit.zeros(3, 0):totable(), {{}, {}, {}})
  T.eq(lmkit.zeros(2, 0, 4):totable(), {{}, {}})
  state_is_healthy()
end)

T.test("a tensor of 100,000 dimensions prints and converts without overflowing the C stack", function()
  local sizes = {}
  for i = 1, 100000 do sizes[i] = 1 end
  local t = lmkit.zeros(sizes)
  T.eq(t:dim(), 100000)
  T.truthy(tostring(t):find("100000 dimensions: too many to print", 1, true))
  T.raises(function() t:totable() end, "a tensor of 100000 dimensions does not become nested tables (at most 64 levels")
  local deepest = lmkit.zeros(table.move(sizes, 1, 64, 1, {}))
  T.eq(select(2, pcall(deepest.totable, deepest)) ~= nil, true)
  state_is_healthy()
end)

T.test("where takes two numbers, or a tensor and a number of another type, with Torch's promotion", function()
  -- Two numbers failed Torch 1.13's internal assertion (needs_dynamic_casting) in the kernel.
  local mask = lmkit.tensor({true, false, true})
  T.eq(lmkit.where(mask, 3, 2):totable(), {3, 2, 3})
  T.eq(lmkit.where(mask, -1.5, 3):totable(), {-1.5, 3, -1.5})
  T.eq(lmkit.where(mask, -1.5, 3):dtype(), "float32")
  T.eq(lmkit.where(mask, lmkit.tensor({1, 2, 3}), 0.5):totable(), {1, 0.5, 3})
  T.eq(lmkit.where(mask, lmkit.tensor({1.5, 2, 3}, {dtype = "float64"}), 7):dtype(), "float64")
  T.eq(lmkit.where(mask, lmkit.ones(3), lmkit.zeros(3)):totable(), {1, 0, 1})
end)

T.test("press_rank takes any matrix size without overflow; negative sizes are errors", function()
  local sv = lmkit.tensor({3.0, 1.0, 1e-9}, {dtype = "float64"})
  -- rows + cols + 1 overflowed int64 (UBSan) for rows near 2^63; negative sizes gave sqrt(-n) = nan.
  T.eq(lmkit.analysis.press_rank(sv, math.maxinteger, 1), 0)  -- a tolerance of ~543
  T.eq(lmkit.analysis.press_rank(sv, 3, 3), 2)
  T.raises(function() lmkit.analysis.press_rank(sv, -5, 3) end, "rows and cols must be non-negative, got -5 and 3")
  T.raises(function() lmkit.analysis.press_rank(sv, 3, math.mininteger) end, "must be non-negative")
end)

T.test("the BPTT sampler and evaluation batches take window lengths near 2^63 without overflow", function()
  local data = lmkit.data.batchify(lmkit.arange(0, 20), 2)  -- [10, 2]
  -- bptt + max_delta overflowed in the sampler's constructor (UBSan; reached from lmkit.train too).
  T.raises(function() lmkit.data.bptt_sampler{data = data, bptt = math.maxinteger - 1} end,
           "bptt + max_delta must fit in 64 bits, got bptt 9223372036854775806 and max_delta 40")
  T.raises(function() lmkit.data.bptt_sampler{data = data, sd = 1 / 0} end, "option 'sd' must be finite, got inf")
  -- A window drawn near 2^63 long covers the rest of the data and ends the epoch.
  local sampler = lmkit.data.bptt_sampler{data = data, bptt = math.maxinteger - 100, max_delta = 0, sd = 0}
  local input = sampler:next()
  T.eq(input:size(), {9, 2})
  T.eq(sampler:next(), nil)
  T.eq(sampler:epoch(), 1)
  -- EvalBatches:size() added bptt to the row count: ⌈9 / 2^63⌉ is 1.
  local _, batches = lmkit.data.eval_batches(data, math.maxinteger)
  T.eq(batches:size(), 1)
  T.eq(#batches, 1)
  local _, by_three = lmkit.data.eval_batches(data, 3)
  T.eq(by_three:size(), 3)
end)

T.test("pairwise_kl with an absurd number of pairs fails in Torch's allocator, saying how much", function()
  local q = lmkit.tensor({{0.3, 0.7}, {0.7, 0.3}}, {dtype = "float64"}):log()
  -- 2^46 pairs of indices (2^49 bytes, beyond any address space) went to std::vector: std::bad_alloc
  -- without a size, and an abort under ASan.
  T.raises(function() lmkit.analysis.pairwise_kl(q, {pairs = 1 << 46}) end, "out of memory: it asked for 524288.0 GiB (562949953421312 bytes) at once")
  T.raises(function() lmkit.analysis.pairwise_kl(q, {pairs = math.maxinteger}) end, "overflow")
  local kl = lmkit.analysis.pairwise_kl(q, {pairs = 5000, seed = 1})
  T.eq(kl.pairs, 5000)
  T.near(kl.mean, 0.4 * math.log(0.7 / 0.3), 1e-12)
end)

T.test("option tables are read raw: their metamethods never run inside a binding", function()
  -- A raising __index on an option lmkit.model or lmkit.configure looked up (head, settings)
  -- longjmp'ed over the binding's live C++ objects (the model's configuration, the settings).
  local touched = {}
  local function watched(t)
    return setmetatable(t, {__index = function(_, key)
      touched[#touched + 1] = key
      error("__index ran for " .. tostring(key))
    end})
  end
  local model = lmkit.model(watched{vocab_size = 6, emb = 3, nhid = 4, nhidlast = 3, nlayers = 1})
  T.eq(model:parameter_count().total > 0, true)
  T.eq(lmkit.configure({a = 1}, watched{}).a, 1)
  T.eq(touched, {})
  T.raises(function() lmkit.doc() end, "bad argument #1 to 'lmkit.doc' (value expected)")
  state_is_healthy()
end)

T.test("SVDs with singular vectors refuse infinities instead of iterating forever in LAPACK", function()
  -- A row of inf (left in a pool matrix by an in-place fill) made OpenBLAS's gesdd loop in sbdsqr
  -- for the rest of the run: the fuzzer's 10-minute run was killed there.
  local m = lmkit.randn(8, 5)
  m[1] = 1 / 0
  T.raises(function() lmkit.analysis.refactorization_robustness(m, {keep = 2, iterations = 1}) end,
           "refactorization_robustness: the matrix contains nan or inf")
  T.raises(function() lmkit.analysis.noise_robustness(m, {0.1}) end, "noise_robustness: the matrix contains nan or inf")
  T.raises(function() lmkit.analysis.projection_2d(m) end, "projection_2d: the matrix contains nan or inf")
  m[1] = -1 / 0
  T.raises(function() lmkit.analysis.projection_2d(m) end, "contains nan or inf")
  m[1] = 0.5
  T.eq(#lmkit.analysis.refactorization_robustness(m, {keep = 2, iterations = 2}), 2)
  T.eq(lmkit.analysis.projection_2d(m):size(), {8, 2})
end)

T.test("fill_ of an integer tensor from a value that requires grad leaves it without autograd history", function()
  -- Torch recorded FillBackward into the int64 tensor, which then required grad: t:square() and
  -- every later op failed an internal assertion (isDifferentiableType).
  local value = lmkit.tensor({1.5, 1.0}, {requires_grad = true}):sum()  -- 2.5: fits every dtype below
  for _, dtype in ipairs{"int64", "int32", "bool", "uint8"} do
    local t = lmkit.zeros(2, 3, {dtype = dtype})
    t:fill_(value)
    T.eq(t.requires_grad, false, dtype)
    T.eq(t:clone():size(), {2, 3}, dtype)  -- any op on it asserted
  end
  local f = lmkit.zeros(2, 3)
  f:fill_(value)
  T.eq(f.requires_grad, true)
  f:sum():backward()
  T.eq(value.requires_grad, true)
end)

T.test("projecting heads check K · latent_dim before building their latent layer", function()
  -- lmkit.model builds the head before the encoder, so its size check came too late: 2 · 2^62
  -- overflowed in MosHeadImpl (UBSan). Every kind that projects (the registry says which) is tried.
  local tried = 0
  for _, kind in ipairs(lmkit.heads.kinds()) do
    if lmkit.heads.info(kind).projects then
      tried = tried + 1
      T.raises(function() lmkit.model{vocab_size = 6, emb = 1 << 62, nhidlast = 4, head = lmkit.heads[kind]{K = 2}} end,
               "K · latent_dim = 2 · 4611686018427387904 does not fit in 64 bits")
      T.raises(function() lmkit.model{vocab_size = 6, emb = 4, nhidlast = 4, head = lmkit.heads[kind]{K = 1 << 62}} end,
               "does not fit in 64 bits")
      local model = lmkit.model{vocab_size = 6, emb = 3, nhid = 4, nhidlast = 4, nlayers = 1, head = lmkit.heads[kind]{K = 2}}
      T.eq(model:log_probs(ids):size(), {6, 6})
    end
  end
  T.truthy(tried > 0, "no projecting head kind is registered")
end)

T.test("help() of a table whose __pairs never ends returns (binding fuzzer seeds 1687414240, 1680682151)", function()
  local endless = setmetatable({x = 1}, {__pairs = function() return function() return "k", 1 end end,
                                         __index = function() error("no fields") end})
  local write = io.write
  io.write = function() end  -- help prints; the test only needs it to return
  debug.sethook(function() error("help() looped") end, "", 100000000)
  local ok, err = pcall(lmkit.help, endless)
  debug.sethook()
  io.write = write
  T.truthy(ok, tostring(err))
end)

T.run()

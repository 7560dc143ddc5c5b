-- The binding fuzzer: calls every documented function, method and metamethod of lmkit's Lua API
-- with random arguments of every Lua type, for a bounded time. The only acceptable outcomes of a
-- call are a normal return or a Lua error with a string message; a crash, a sanitizer report, a
-- non-string error raised by lmkit itself, or a call that runs past `call_seconds` is a failure.
--
--   lmkit run tests/fuzz/binding_fuzz.lua --set seconds=60 --set seed=12345 [--set verbose=true]
--   lua5.4 tests/fuzz/binding_fuzz.lua seconds=60 seed=12345        (through require "lmkit")
--
-- Run it through tests/fuzz/run_binding_fuzz.sh, which gives it a fresh temporary working folder
-- (every path it passes lies inside it), a memory limit and a wall-clock limit. docs/development.md
-- ("The binding fuzzer") says what it covers, what it leaves out and how to reproduce a failure.
--
-- Settings (--set key=value, or key=value script arguments; LMKIT_FUZZ_SECONDS and LMKIT_FUZZ_SEED
-- set the defaults of the first two):
--   seconds=20        time budget
--   seed=0            0: a fresh seed from the clock (printed first, for reproduction)
--   calls=0           stop after this many top-level calls (0: no limit)
--   verbose=false     print each call to stderr before making it
--   trace=""          append each call to this file before making it (flushed: a crash names it)
--   call_seconds=10   a call that takes longer is a hang
--   refresh=200       top-level calls between rebuilds of the object pool
--   only=""           fuzz only the functions whose names match this Lua pattern
--   repl_lines=200    lines of hostile values fed to one `lmkit repl` at the end (0: none)
local lmkit = require "lmkit"

-- ---- settings ------------------------------------------------------------------------------

local defaults = {
  seconds = tonumber(os.getenv("LMKIT_FUZZ_SECONDS") or "") or 20,
  seed = math.tointeger(tonumber(os.getenv("LMKIT_FUZZ_SEED") or "")) or 0,
  calls = 0,
  verbose = false,
  trace = "",
  call_seconds = 10,
  refresh = 200,
  only = "",
  repl_lines = 200,
}
defaults.seconds = defaults.seconds + 0.0  -- a float setting accepts both 20 and 0.5
local script_settings = {}
for _, a in ipairs(arg or {}) do script_settings[#script_settings + 1] = a end
local cfg = #script_settings > 0 and lmkit.configure(defaults, {settings = script_settings})
            or lmkit.configure(defaults)

local clock = lmkit.clock
local seed = cfg.seed
if seed == 0 then seed = math.floor(clock() * 1000003) % 2147483647 + os.time() % 1000 + 1 end

local stderr = io.stderr
local function say(...)
  stderr:write(...)
  stderr:write("\n")
  stderr:flush()
end

-- ---- a private random generator (lmkit.seed reseeds math.random; the fuzzer must not follow) ---

local rng_state = (seed * 0x9E3779B97F4A7C15) ~ 0x2545F4914F6CDD1D
if rng_state == 0 then rng_state = 1 end
local function next_random()
  rng_state = rng_state ~ (rng_state << 13)
  rng_state = rng_state ~ (rng_state >> 7)
  rng_state = rng_state ~ (rng_state << 17)
  return rng_state >> 1  -- non-negative
end
local function rand(n) return next_random() % n + 1 end        -- 1..n
local function chance(p) return next_random() % 1000000 < p * 1000000 end
local function pick(list) if #list > 0 then return list[rand(#list)] end end

-- ---- labels: how values appear in the trace ------------------------------------------------

local labels = setmetatable({}, {__mode = "k"})
local function label(value, name)
  labels[value] = name
  return value
end

local function describe(value, depth)
  depth = depth or 0
  local kind = type(value)
  if (kind == "table" or kind == "userdata" or kind == "function" or kind == "thread") and labels[value] then
    return labels[value]
  end
  if kind == "string" then
    local shown = #value > 40 and value:sub(1, 30) or value
    shown = ("%q"):format(shown):gsub("\\\n", "\\n")
    return #value > 40 and ("string#%d(%s...)"):format(#value, shown) or shown
  elseif kind == "number" then
    if math.type(value) == "integer" then return tostring(value) end
    return ("%.17g"):format(value)
  elseif kind == "table" then
    if depth >= 2 then return "{...}" end
    -- The array part in order, then the other keys sorted (pairs order varies between processes).
    local parts, n = {}, rawlen(value)
    for i = 1, math.min(n, 6) do parts[#parts + 1] = describe(rawget(value, i), depth + 1) end
    local named = {}
    -- Long arrays: continue after the last index (a border, so present) instead of walking them.
    for k, v in next, value, (n > 100 and n or nil) do
      if not (math.type(k) == "integer" and k >= 1 and k <= n) then
        named[#named + 1] = "[" .. describe(k, depth + 1) .. "]=" .. describe(v, depth + 1)
      end
      if #named > 1000 then break end
    end
    table.sort(named)
    for i = 1, math.min(#named, 6) do parts[#parts + 1] = named[i] end
    if n > 6 or #named > 6 then parts[#parts + 1] = "..." end
    local meta = getmetatable(value)
    return "{" .. table.concat(parts, ", ") .. "}" .. (meta ~= nil and "+meta" or "")
  elseif kind == "userdata" then
    local meta = getmetatable(value)
    local name = type(meta) == "table" and rawget(meta, "__name")
    return "userdata:" .. (type(name) == "string" and name or "?")
  end
  return kind
end

local function describe_call(name, args, n)
  local shown = {}
  for i = 1, n do shown[i] = describe(args[i]) end
  return name .. "(" .. table.concat(shown, ", ") .. ")"
end

-- The trace file keeps the last 50,000 to 100,000 lines: past 50,000 it becomes <trace>.old and a
-- new one starts (an hour's run would otherwise write gigabytes).
local TRACE_LINES = 50000
local trace_file = cfg.trace ~= "" and assert(io.open(cfg.trace, "w")) or nil
local trace_lines = 0
local calls_made = 0
local function trace(depth, text)
  if not (cfg.verbose or trace_file) then return end
  local line = ("#%d %s%s"):format(calls_made, string.rep("  ", depth), text)
  if cfg.verbose then say(line) end
  if trace_file then
    if trace_lines >= TRACE_LINES then
      trace_file:close()
      os.rename(cfg.trace, cfg.trace .. ".old")
      trace_file = assert(io.open(cfg.trace, "w"))
      trace_lines = 0
    end
    trace_file:write(line, "\n")
    trace_file:flush()
    trace_lines = trace_lines + 1
  end
end

-- ---- the API: every function the documentation registry knows ------------------------------

local registry = debug.getregistry()
local by_name = registry["lmkit.docs_by_name"]
assert(type(by_name) == "table", "no documentation registry (lmkit.docs_by_name)")

-- What the fuzzer leaves out, and why (docs/development.md repeats this list; GUARDS below holds
-- the functions it calls only with some of their arguments changed).
local EXCLUDED = {
  ["lmkit.process.run_pool"] = "starts child processes",
  ["lmkit.process.run_batch"] = "writes a batch folder and starts child processes (or sbatch)",
  ["lmkit.process.batch_report"] = "starts a child lmkit",
}
local PLOT_COMPUTATIONS = {["lmkit.plot.fit_line"] = true, ["lmkit.plot.pca2"] = true}
local function exclusion(name)
  if EXCLUDED[name] then return EXCLUDED[name] end
  if name:match("^lmkit%.plot%.") and not PLOT_COMPUTATIONS[name] then
    return "draws through gnuplot (io.popen: a child process per call; Lua code over bindings fuzzed directly)"
  end
  return nil
end

-- The option names a doc string's signature shows ({key=, key2=...}), for option tables that get
-- past the unknown-key check.
local function option_keys(name)
  local _, doc = lmkit.doc(by_name[name])
  local keys, seen = {}, {}
  for key in ((doc or ""):match("^[^\n]*") or ""):gmatch("([%a_][%w_]*)%s*=") do
    if not seen[key] then
      seen[key] = true
      keys[#keys + 1] = key
    end
  end
  return keys
end

local targets, excluded = {}, {}
do
  local names = {}
  for name, value in next, by_name do
    if type(name) == "string" and type(value) == "function" then names[#names + 1] = name end
  end
  table.sort(names)  -- pairs order varies between runs; the sequence of calls must not
  local seen = {}
  for _, name in ipairs(names) do
    local fn = by_name[name]
    if not seen[fn] then
      seen[fn] = true
      local reason = exclusion(name)
      if reason then
        excluded[#excluded + 1] = name .. ": " .. reason
      elseif cfg.only == "" or name:match(cfg.only) then
        local class, method = name:match("^([%w_]+):([%w_]+)$")
        local meta_class, metamethod = name:match("^([%w_]+)%.(__[%w_]+)$")
        targets[#targets + 1] = {
          name = name, fn = fn, keys = option_keys(name),
          class = class or meta_class, method = method, metamethod = metamethod,
          called = 0, returned = 0,
        }
      end
    end
  end
end
assert(#targets > 0, "no function to fuzz (only=" .. cfg.only .. ")")
local methods_of = {}  -- class → its method names, as keys for __index
for _, t in ipairs(targets) do
  if t.method then
    methods_of[t.class] = methods_of[t.class] or {}
    table.insert(methods_of[t.class], t.method)
  end
end

-- ---- the object pool: small live objects of every class ------------------------------------

local tmp_counter = 0
local function fresh_path(stem)
  tmp_counter = tmp_counter + 1
  return ("%s-%d"):format(stem, tmp_counter)
end

local function close(value)
  local meta = getmetatable(value)
  if type(meta) == "table" and type(rawget(meta, "__close")) == "function" then
    pcall(rawget(meta, "__close"), value)
  end
end

local pool          -- the current pool (rebuilt every cfg.refresh calls)
local recent = {}   -- small values that calls returned, reused as arguments
local dead_control  -- a TrainControl whose run has ended
local base_run_dir  -- a finished run, for open_run and resume
local checkpoint    -- a saved model
local callback_kinds  -- what user functions handed to lmkit may do (below)
local live_control    -- the TrainControl of the training run whose callback is running

local function logits_head(hidden, weight, bias)
  local logits = hidden:matmul(weight:t())
  if bias then logits = logits + bias end
  return logits:log_softmax(2)
end
local function agreeing_nll(hidden, targets, weight, bias)
  local logits = hidden:matmul(weight:t())
  if bias then logits = logits + bias end
  return logits:logsumexp(2) - (logits * lmkit.eye(logits:size(2))[targets + 1]):sum(2)
end
local function zero_nll(hidden) return lmkit.zeros(hidden:size(1)) end
label(logits_head, "logits-head")
label(agreeing_nll, "agreeing-nll")
label(zero_nll, "zero-nll")

-- The heads a pool model may have; Lua heads get well-behaved functions here (hostile ones come
-- through the generated arguments).
local function head_specs()
  local h = lmkit.heads
  return {
    label(h.softmax(), "heads.softmax()"), label(h.mos{K = 2}, "heads.mos{K=2}"),
    label(h.gss{c = 0.5, k = 1.5}, "heads.gss{}"), label(h.plif{K = 4, T = 2}, "heads.plif{K=4}"),
    label(h.sigsoftmax(), "heads.sigsoftmax()"), label(h.relu(), "heads.relu()"),
    label(h.sigmoid(), "heads.sigmoid()"), label(h.moss{K = 2}, "heads.moss{K=2}"),
    label(h.moc{K = 2}, "heads.moc{K=2}"), label(h.advsoft{eps = 0.1}, "heads.advsoft{}"),
    label(h.pointwise(function(l) return l * 2 end), "heads.pointwise(l*2)"),
    label(h.custom{forward = function(hidden, weight, bias)
      local logits = hidden:matmul(weight:t())
      if bias then logits = logits + bias end
      return logits:log_softmax(2)
    end, name = "fuzz"}, "heads.custom{}"),
    -- Lua heads with an nll beside forward: one that agrees (checked on its first batch), one that
    -- does not (refused there), and the same with check = false (trusted).
    label(h.custom{forward = logits_head, nll = agreeing_nll, name = "agrees"}, "heads.custom{nll agrees}"),
    label(h.custom{forward = logits_head, nll = zero_nll, name = "zeros"}, "heads.custom{nll zeros}"),
    label(h.custom{forward = logits_head, nll = zero_nll, check = false, name = "trusted"}, "heads.custom{check=false}"),
  }
end

local VOCAB = 6
local function tiny_model(head)
  return lmkit.model{vocab_size = VOCAB, emb = 3, nhid = 4, nhidlast = 3, nlayers = 2, head = head,
                     dropout = 0.1, dropouth = 0.1, dropouti = 0.1, dropoute = 0.1, wdrop = 0.1}
end

local function tiny_train_options(model, corpus, run_dir)
  return {model = model, corpus = corpus, run_dir = run_dir, epochs = 1, batch_size = 2, bptt = 5,
          eval_batch_size = 2, test_batch_size = 2, log_interval = 2}
end

local function build_pool()
  local P = {by_class = {}, all = {}, named = {}}
  local function add(class, name, value)
    label(value, "pool:" .. name)
    P.by_class[class] = P.by_class[class] or {}
    table.insert(P.by_class[class], value)
    table.insert(P.all, value)
    P.named[name] = value
    return value
  end
  lmkit.seed(seed)
  local T = "Tensor"
  add(T, "float[2,3]", lmkit.randn(2, 3))
  add(T, "double[3]", lmkit.tensor({1.5, -2, 3}, {dtype = "float64"}))
  add(T, "int64[5]", lmkit.tensor({0, 1, 2, 3, 4}))
  add(T, "ids[4,2]", lmkit.tensor({{0, 1}, {2, 3}, {4, 5}, {1, 0}}))
  add(T, "targets[4,2]", lmkit.tensor({{1, 2}, {3, 4}, {5, 0}, {2, 1}}))
  add(T, "bool[2,3]", lmkit.tensor({{true, false, true}, {false, false, true}}))
  add(T, "scalar", lmkit.tensor(2.5))
  add(T, "empty[0]", lmkit.zeros(0))
  add(T, "empty[0,3]", lmkit.zeros(0, 3))
  add(T, "half[2]", lmkit.ones(2, {dtype = "float16"}))
  add(T, "int32[3]", lmkit.tensor({1, 2, 3}, {dtype = "int32"}))
  add(T, "uint8[2]", lmkit.tensor({1, 255}, {dtype = "uint8"}))
  add(T, "nan-inf[4]", lmkit.tensor({0 / 0, 1 / 0, -1 / 0, 1}))
  local leaf = add(T, "leaf[2,3]", lmkit.randn(2, 3, {requires_grad = true}))
  add(T, "non-leaf[2,3]", leaf * 2)
  add(T, "loss", (leaf * leaf):sum())
  add(T, "transposed[3,2]", lmkit.randn(2, 3):t())
  add(T, "expanded[4,3]", lmkit.randn(1, 3):expand(4, 3))
  add(T, "matrix[8,5]", lmkit.randn(8, 5))
  add(T, "logp[6,6]", lmkit.randn(6, VOCAB):log_softmax(2))
  add(T, "4-D[1,2,1,2]", lmkit.randn(1, 2, 1, 2))
  local closed = lmkit.ones(2)
  close(closed)
  add(T, "closed", closed)

  local lang = add("SyntheticLanguage", "language", lmkit.data.synthetic{vocab = VOCAB, states = 3, dim = 2, seed = 3})
  add("SyntheticLanguage", "hmm", lmkit.data.synthetic{vocab = VOCAB, states = 3, dim = 2, kind = "hmm", seed = 4})
  local corpus = add("Corpus", "corpus", lang:corpus{train = 60, valid = 24, test = 24})
  P.corpus = corpus
  add(T, "tokens", corpus.test)
  add(T, "train-tokens", corpus.train)
  add("Vocab", "vocab", corpus.vocab)
  local batched = add(T, "batchified[12,2]", lmkit.data.batchify(corpus.valid, 2))
  add("EvalBatches", "eval_batches", select(2, lmkit.data.eval_batches(batched, 5)))
  add("BpttSampler", "sampler", lmkit.data.bptt_sampler{data = lmkit.data.batchify(corpus.train, 2), bptt = 5, seed = 1})

  local heads = head_specs()
  for i, spec in ipairs(heads) do
    add("HeadSpec", labels[spec], spec)
    if i <= 4 or labels[spec]:find("pointwise", 1, true) or labels[spec]:find("custom", 1, true) then
      add("Model", "model(" .. labels[spec] .. ")", tiny_model(spec))
    end
  end
  -- Heads written in Lua whose functions do what any callback may: close the call's arguments
  -- (the model itself), collect garbage, yield, raise, call lmkit again, return the wrong thing.
  local hostile = function(...) return pick(callback_kinds)(...) end
  label(hostile, "hostile-callback")
  add("Model", "model(hostile pointwise)", tiny_model(label(lmkit.heads.pointwise(hostile), "heads.pointwise(hostile)")))
  add("Model", "model(hostile custom)", tiny_model(label(lmkit.heads.custom{forward = hostile, nll = hostile, name = "hostile"},
                                                         "heads.custom{hostile}")))
  local closed_model = tiny_model()
  close(closed_model)
  add("Model", "closed-model", closed_model)

  add("Run", "run", lmkit.open_run(base_run_dir))
  add("TrainControl", "ended-control", dead_control)
  return P
end

-- The first pool needs one finished run (and a control that outlived it) and one checkpoint.
local function prepare_files()
  local model = tiny_model()
  checkpoint = "model.ckpt"
  model:save(checkpoint)
  local lang = lmkit.data.synthetic{vocab = VOCAB, states = 3, dim = 2, seed = 5}
  local options = tiny_train_options(model, lang:corpus{train = 60, valid = 24, test = 24}, "runs/base")
  options.on_step = function(_, control) dead_control = control end
  base_run_dir = "runs/base"
  lmkit.train(options)
  -- Tiny word-similarity benchmarks over the synthetic words w0..w5, for word_similarity{dir=}.
  os.execute("mkdir -p ws")
  for i, b in ipairs(lmkit.analysis.similarity_benchmarks()) do
    local f = assert(io.open("ws/" .. b.file, "w"))
    f:write(("w0 w1 %d\nw2 w3 4.5\nw1 w4 2\nW5 w0 1\nw9 w0 3\n"):format(i))
    f:close()
  end
end

-- A run stopped after its first step: what lmkit.resume continues.
local function stopped_run()
  local dir = fresh_path("runs/stopped")
  local options = tiny_train_options(pick(pool.by_class.Model), pool.corpus, dir)
  options.on_step = function(_, control) control:stop("fuzz") end
  pcall(lmkit.train, options)
  return dir
end

-- ---- random values -------------------------------------------------------------------------

local current_args       -- the arguments of the call in progress (callbacks may close them)
local nesting = 0        -- depth of calls made from callbacks
local heavy_budget = 0   -- training runs still allowed inside the current top-level call
local callback_raised = false  -- a callback of ours raised a non-string error during this call
local random_value       -- forward declaration
local fuzz_nested        -- forward declaration

local function deep_list(depth)
  local outer = {}
  local inner = outer
  for _ = 1, depth do
    inner[1] = {}
    inner = inner[1]
  end
  return outer
end

local function deep_fields(depth)
  local outer = {}
  local inner = outer
  for _ = 1, depth do
    inner.x = {}
    inner = inner.x
  end
  return outer
end

-- Values built once: expensive or special.
local fixed = {}
do
  fixed.deep_list = label(deep_list(10000), "deep-list-10000")
  fixed.deep_fields = label(deep_fields(10000), "deep-fields-10000")
  local cycle = {}
  cycle[1] = cycle
  cycle.self = cycle
  fixed.cycle = label(cycle, "cycle")
  local long = {}
  for i = 1, 100000 do long[i] = 1 end
  fixed.long_list = label(long, "ones-list-100000")
  fixed.long_string = label(string.rep("abc ", 50000), "long-string-200000")
  fixed.file = label(io.tmpfile(), "FILE*")
  fixed.dead_thread = coroutine.create(function() end)
  coroutine.resume(fixed.dead_thread)
  label(fixed.dead_thread, "dead-coroutine")
  fixed.main_thread = label((coroutine.running()), "main-thread")
  -- A light userdata: the upvalue that names a bound function's C++ descriptor.
  local _, light = debug.getupvalue(lmkit.zeros, 1)
  if type(light) == "userdata" then fixed.light = label(light, "light-userdata") end
end

local INTEGERS = {0, 1, -1, 2, 3, 4, 5, 6, 7, 10, 100, -2, -100, math.maxinteger, math.mininteger,
                  math.maxinteger - 1, math.mininteger + 1, 1 << 31, (1 << 31) - 1, -(1 << 31), 1 << 32,
                  (1 << 32) + 1, 1 << 53, -(1 << 53), 1 << 62, 1 << 40}
local FLOATS = {0.0, -0.0, 0.5, 1.5, -1.5, 2.0, 0 / 0, -(0 / 0), 1 / 0, -1 / 0, 1e300, -1e300, 2.0 ^ 53,
                2.0 ^ 63, -(2.0 ^ 63), 2.0 ^ 64, 1e-320, 1e-9, 3.0, 1e18, -1e18, 0.999999999}
local STRINGS = {"", "a", "x", "nan", "inf", "-inf", "-1", "0", "1e400", "0x10", "float32", "float64", "int64",
                 "bool", "float16", "bfloat16", "uint8", "cpu", "cuda", "cuda:99", "cuda:-1", "mps",
                 "softmax", "mos", "pointwise", "custom", "hmm", "step", "epoch", "auto", "exact", "lower",
                 "fold", "WS-353", "SimLex-999", "<unk>", "<eos>", "w0", "w1 w2 w0", "w0 zzz", "synthetic",
                 "ptb", "wt2", "mini", "full", "encoder.", "encoder.lstm0_", "decoder", "a\0b", "\0",
                 "%s%n%d", "\255\254", "é", "key=value", "lr=0.5", "=", "a.b=1", "[", "{\"a\":[1,2]}",
                 "[[[[", "null", "true", "\n", "\t\t", "runs/base", "model.ckpt", "missing.ckpt", "sub/dir/f",
                 ".", "./", "runs", "contexts.txt", "w0 w1\tw2"}

-- Strings that may be used as paths: all relative, inside the fuzzer's working folder.
local function path_string()
  local r = rand(8)
  if r == 1 then return fresh_path("out") end
  if r == 2 then return fresh_path("dir") .. "/nested/" .. fresh_path("file") end
  if r == 3 then return base_run_dir end
  if r == 4 then return checkpoint end
  if r == 5 then return fresh_path("f") .. pick({".json", ".ckpt", ".txt", ".md", ".csv", ".tex", ".png"}) end
  return pick(STRINGS)
end

local function string_value()
  local r = rand(20)
  if r == 1 then return fixed.long_string end
  if r == 2 then
    -- Any bytes but '/': this may become a path, and must stay inside the working folder.
    local bytes = {}
    for i = 1, rand(12) do
      local byte = rand(256) - 1
      bytes[i] = string.char(byte == 47 and 95 or byte)
    end
    return table.concat(bytes)
  end
  if r <= 5 then return path_string() end
  return pick(STRINGS)
end

local function number_value()
  if chance(0.6) then return pick(INTEGERS) end
  return pick(FLOATS)
end

local function pool_object(class)
  if class == "TrainControl" and live_control and chance(0.9) then return live_control end
  if class and pool.by_class[class] and chance(0.9) then return pick(pool.by_class[class]) end
  if #recent > 0 and chance(0.2) then return pick(recent) end
  return pick(pool.all)
end

-- Callbacks: what user functions handed to lmkit may do.
local ERROR_OBJECT = label(setmetatable({}, {__tostring = function() return "fuzz error object" end}), "error-object")
callback_kinds = {
  function() end,
  function() return random_value(1) end,
  function(...) return ... end,
  function(x) return x end,
  function() error("fuzz callback error") end,
  function() callback_raised = true; error(ERROR_OBJECT) end,
  function() callback_raised = true; error(nil) end,
  function() return coroutine.yield(random_value(1)) end,
  function() collectgarbage("collect") end,
  function()  -- closes the arguments of the call that runs it
    if current_args then for _, v in pairs(current_args) do close(v) end end
  end,
  function() fuzz_nested() end,
  function() fuzz_nested(); return pool_object("Tensor") end,
  function() return pool_object("Tensor"), pool_object("Tensor"), 1, 2, 3 end,
  function(x) if lmkit.is_tensor(x) then return x * 2 end end,
  function(x) if lmkit.is_tensor(x) then return x:sum() end end,
  function(info, control)  -- a training callback that works its control (through the fuzzer)
    local meta = getmetatable(control)
    if type(meta) == "table" and rawget(meta, "__name") == "TrainControl" then
      local saved = live_control
      live_control = control
      for _ = 1, 2 do fuzz_nested("TrainControl") end
      live_control = saved
    end
    return info
  end,
}
for i, fn in ipairs(callback_kinds) do label(fn, "callback#" .. i) end

local finalizers_run = 0

-- Tables with hostile metatables: raising from every metamethod a binding might trigger.
local function hostile_table(depth)
  local t = {}
  for i = 1, rand(3) - 1 do t[i] = random_value(depth + 1) end
  local meta = {}
  local hooks = {"__index", "__newindex", "__len", "__eq", "__lt", "__le", "__call", "__concat",
                 "__tostring", "__pairs", "__close", "__unm", "__add"}
  for _, h in ipairs(hooks) do
    if chance(0.5) then
      meta[h] = pick({
        function() error("fuzz metamethod error") end,
        function() return random_value(depth + 1) end,
        function() return coroutine.yield() end,
        function() collectgarbage("collect") end,
      })
    end
  end
  if chance(0.3) then meta.__name = pick({"Tensor", "lmkit.Tensor", "Model", 42}) end
  if chance(0.2) then meta.__metatable = pick({false, "locked", 0}) end
  if chance(0.3) then
    -- A finalizer that runs at some later allocation, maybe inside a binding. It draws from its own
    -- counter: finalizers run when the collector decides, and must not shift the fuzzer's sequence.
    meta.__gc = function()
      finalizers_run = finalizers_run + 1
      if pool and finalizers_run % 2 == 0 then close(pool.all[finalizers_run % #pool.all + 1]) end
      if finalizers_run % 3 == 0 then error("fuzz finalizer error") end
    end
  end
  return label(setmetatable(t, meta), "hostile-table")
end

-- An options table for `target`: its documented keys (and sometimes a stray one) with values.
local function options_table(target, depth)
  local t = {}
  local keys = target and target.keys or {}
  for _ = 1, rand(4) do
    local key
    if #keys > 0 and chance(0.85) then
      key = pick(keys)
    else
      key = pick({"zzz", "kind", "dtype", "K", 1, 2.5, true})
    end
    t[key] = random_value(depth + 1)
  end
  return t
end

local function table_value(depth, target)
  if depth >= 3 then return {} end
  local r = rand(24)
  if r == 1 then return fixed.deep_list end
  if r == 2 then return fixed.deep_fields end
  if r == 3 then return fixed.cycle end
  if r == 4 then return fixed.long_list end
  if r == 5 then return hostile_table(depth) end
  if r <= 8 then return options_table(target, depth) end
  if r == 9 then return {{1, 2}, {3, 4}} end
  if r == 10 then return {{1}, {2, 3}} end
  if r == 11 then return {1, nil, 3} end
  if r == 12 then return {[1] = 1, [3] = 3, x = 2} end
  if r == 13 then return {[math.maxinteger] = 1, [1.5] = 2, [-1] = 3} end
  if r == 14 then return {pool_object("Tensor"), pool_object("Tensor")} end
  if r == 15 then return {{pool_object("Tensor"), pool_object("Tensor")}} end
  if r == 16 then return {"w0 w1", {text = "w2 w3", next = "w1"}, {text = random_value(depth + 1)}} end
  if r == 17 then return {random_value(depth + 1), random_value(depth + 1)} end
  if r == 18 then return {{name = "WS-353", spearman = 0.5}, {name = "WS-353", spearman = random_value(depth + 1)}} end
  if r == 19 then return {} end
  local list = {}
  for i = 1, rand(4) - 1 do list[i] = number_value() end
  return list
end

random_value = function(depth, target)
  depth = depth or 0
  local r = rand(100)
  if r <= 24 then return pool_object() end
  if r <= 40 then return pick(INTEGERS) end
  if r <= 48 then return pick(FLOATS) end
  if r <= 58 then return string_value() end
  if r <= 61 then return nil end
  if r <= 64 then return chance(0.5) end
  if r <= 82 then return table_value(depth, target) end
  if r <= 91 then return pick(callback_kinds) end
  if r <= 94 then
    return pick({fixed.dead_thread, fixed.main_thread, coroutine.create(pick(callback_kinds))})
  end
  if r <= 96 then return fixed.light or fixed.file end
  if r <= 98 then return fixed.file end
  return pick(recent) or fixed.file
end

-- ---- templates: argument lists that get past the first checks ------------------------------
-- A template returns a list of arguments close to a valid call; the fuzzer then mutates some.

local function tensor(name) return pool.named[name] end
local function a_model() return pick(pool.by_class.Model) end
local function a_head()
  local spec = chance(0.8) and pick(pool.by_class.HeadSpec) or pick(recent)
  return spec or pick(pool.by_class.HeadSpec)
end
local function small() return rand(4) end
-- The tensor an analysis expects, or (40%) any tensor of the pool: another dtype (int, bool,
-- float16), NaN and infinities, empty, 0-D, transposed, expanded, closed, requiring grad.
local function analysis_input(name)
  if chance(0.6) then return tensor(name) end
  return pick(pool.by_class.Tensor)
end

local TEMPLATES = {
  ["lmkit.tensor"] = function() return {pick({{1, 2}, {{1, 2}, {3, 4}}, {true, false}, 3, {{{1.5}}}}), {dtype = pick(STRINGS)}} end,
  ["lmkit.zeros"] = function() return {small(), small()} end,
  ["lmkit.full"] = function() return {small(), small(), number_value()} end,
  ["lmkit.arange"] = function() return {small(), small() + 3, 1} end,
  ["lmkit.linspace"] = function() return {0, 1, small()} end,
  ["lmkit.eye"] = function() return {small(), small()} end,
  ["lmkit.cat"] = function() return {{tensor("float[2,3]"), tensor("float[2,3]")}, small()} end,
  ["lmkit.stack"] = function() return {{tensor("float[2,3]"), tensor("non-leaf[2,3]")}, small()} end,
  ["lmkit.where"] = function() return {tensor("bool[2,3]"), tensor("float[2,3]"), number_value()} end,
  ["lmkit.no_grad"] = function() return {pick(callback_kinds), pool_object()} end,
  ["lmkit.model"] = function()
    return {{vocab_size = VOCAB, emb = small(), nhid = small(), nhidlast = small(), nlayers = small(), head = a_head()}}
  end,
  ["lmkit.load"] = function() return {checkpoint} end,
  ["lmkit.evaluate"] = function() return {a_model(), tensor("tokens"), {batch_size = small(), bptt = small()}} end,
  ["lmkit.dynamic_evaluate"] = function()
    return {a_model(), tensor("train-tokens"), tensor("tokens"),
            {bptt = small(), batch_size = 1, stats_batch_size = small(), max_stats_windows = small()}}
  end,
  ["lmkit.matmul"] = function() return {tensor("float[2,3]"), tensor("transposed[3,2]")} end,
  ["lmkit.heads.custom"] = function()
    -- Parameters that are leaves requiring grad, and ones that are not (refused by name).
    local parameter = pick({"leaf[2,3]", "leaf[2,3]", "non-leaf[2,3]", "float[2,3]", "int64[5]", "closed"})
    return {{forward = pick({logits_head, pick(callback_kinds)}), nll = pick({agreeing_nll, zero_nll, pick(callback_kinds)}),
             parameters = {tensor(parameter)}, name = pick(STRINGS), check = chance(0.75) and pick({true, false, "no"}) or nil}}
  end,
  ["lmkit.stats.pearsonr"] = function() return {{1, 2, 3, 4}, {2, 1, 4, number_value()}} end,
  ["lmkit.stats.spearmanr"] = function() return {{1, 2, 3, 4}, tensor("nan-inf[4]")} end,
  ["lmkit.train"] = function()
    local options = tiny_train_options(a_model(), pool.corpus, fresh_path("runs/train"))
    for _, name in ipairs({"on_step", "on_epoch_end", "on_eval", "on_switch"}) do
      if chance(0.5) then options[name] = pick(callback_kinds) end
    end
    return {options}
  end,
  ["lmkit.resume"] = function()
    return {stopped_run(), {epochs = small(), on_step = pick(callback_kinds), model = chance(0.3) and a_model() or nil}}
  end,
  ["lmkit.open_run"] = function() return {base_run_dir} end,
  ["lmkit.configure"] = function() return {{a = 1, b = {c = "x"}}, {settings = {"a=2", "b.c=" .. pick(STRINGS)}}} end,
  ["lmkit.data.corpus"] = function()
    return {{name = "synthetic", vocab = small() + 1, states = small(), dim = small(), train = 20, valid = 10, test = 10}}
  end,
  ["lmkit.data.synthetic"] = function() return {{vocab = small() + 1, states = small(), dim = small(), kind = pick({"softmax", "hmm"})}} end,
  ["lmkit.data.batchify"] = function() return {tensor("tokens"), small()} end,
  ["lmkit.data.eval_batches"] = function() return {tensor("batchified[12,2]"), small()} end,
  ["lmkit.data.bptt_sampler"] = function() return {{data = tensor("batchified[12,2]"), bptt = small(), seed = small()}} end,
  ["lmkit.analysis.logp_matrix"] = function() return {a_model(), tensor("tokens"), {bptt = small(), max_contexts = small()}} end,
  ["lmkit.analysis.logp_svdvals"] = function() return {a_model(), tensor("tokens"), {bptt = small(), block_rows = small()}} end,
  ["lmkit.analysis.press_rank"] = function() return {analysis_input("double[3]"), small(), small()} end,
  ["lmkit.analysis.effective_rank"] = function() return {analysis_input("double[3]"), pick(FLOATS)} end,
  ["lmkit.analysis.pairwise_kl"] = function() return {analysis_input("logp[6,6]"), {pairs = small(), seed = small()}} end,
  ["lmkit.analysis.refactorization_robustness"] = function() return {analysis_input("matrix[8,5]"), {keep = small(), iterations = small()}} end,
  ["lmkit.analysis.noise_robustness"] = function() return {analysis_input("matrix[8,5]"), {0.1, number_value()}, {keep = small()}} end,
  ["lmkit.analysis.svdvals"] = function() return {analysis_input("matrix[8,5]"), {float64 = chance(0.5)}} end,
  ["lmkit.analysis.rank_report"] = function() return {analysis_input("matrix[8,5]"), pick({"float32", "float64", "x"})} end,
  ["lmkit.analysis.hidden_size"] = function() return {analysis_input("double[3]"), {bias = chance(0.5), min_gap = number_value()}} end,
  ["lmkit.analysis.normalized_spectrum"] = function() return {analysis_input("double[3]")} end,
  ["lmkit.analysis.cumulative_share"] = function() return {analysis_input("double[3]")} end,
  ["lmkit.analysis.normalized_cdf"] = function() return {analysis_input("double[3]")} end,
  ["lmkit.analysis.projection_2d"] = function() return {analysis_input("matrix[8,5]")} end,
  ["lmkit.analysis.argmaxable"] = function()
    return {analysis_input("matrix[8,5]"), chance(0.5) and analysis_input("double[3]") or nil, {region = pick({"box", "free", "x"})}}
  end,
  ["lmkit.analysis.word_similarity"] = function()
    return {chance(0.7) and a_model() or tensor("logp[6,6]"), pool.named.vocab,
            {dir = chance(0.8) and "ws" or path_string(), case = pick({"lower", "exact", "fold"}), benchmarks = chance(0.5) and "WS-353" or nil}}
  end,
  ["lmkit.analysis.top_k_contexts"] = function()
    return {a_model(), pool.named.vocab, {"w0 w1", {text = "w2", next = "w3"}}, {k = small()}}
  end,
  ["lmkit.analysis.read_contexts"] = function() return {path_string()} end,
  ["lmkit.stats.mannwhitneyu"] = function() return {{1, 2, 3}, {2, 3, 4, 5}, {method = pick({"exact", "auto", "asymptotic"})}} end,
  ["lmkit.stats.ttest_ind"] = function() return {{1, 2, 3}, tensor("double[3]"), {equal_var = chance(0.5)}} end,
  ["lmkit.report.table"] = function()
    return {{columns = {"a", {key = "b", format = pick(callback_kinds), digits = small()}}, rows = {{a = 1, b = 2.5}, {a = "x"}}}}
  end,
  ["lmkit.plot.pca2"] = function() return {tensor("matrix[8,5]")} end,
  ["lmkit.plot.fit_line"] = function() return {{1, 2, 3}, {2, 4, number_value()}} end,
  ["Model:forward"] = function() return {tensor("ids[4,2]")} end,
  ["Model:log_probs"] = function() return {tensor("ids[4,2]")} end,
  ["Model:loss"] = function() return {tensor("ids[4,2]"), tensor("targets[4,2]")} end,
  ["Model:top_k"] = function() return {tensor("ids[4,2]"), small()} end,
  ["Model:init_hidden"] = function() return {small()} end,
  ["Model:save"] = function() return {path_string()} end,
  ["Model:to"] = function() return {pick({"cpu", "cuda", "cuda:99", "mps"})} end,
  ["Vocab:encode"] = function() return {pick({"w0 w1", "w0 zzz", ""}), {eos = chance(0.5), unk = pick({"w0", "<unk>"})}} end,
  ["Vocab:decode"] = function() return {pick({tensor("int64[5]"), {0, 1, 5}, {6, -1}})} end,
  ["SyntheticLanguage:generate"] = function() return {small(), small()} end,
  ["SyntheticLanguage:log_probs"] = function() return {tensor("int64[5]")} end,
  ["SyntheticLanguage:nll"] = function() return {tensor("int64[5]")} end,
  ["SyntheticLanguage:entropy_rate"] = function() return {small()} end,
  ["SyntheticLanguage:corpus"] = function() return {{train = small() * 5, valid = small() * 5, test = small() * 5}} end,
  ["BpttSampler:set_state"] = function()
    local ok, state = pcall(function() return pool.named.sampler:state() end)
    return {ok and state or "x"}
  end,
  ["Tensor:backward"] = function() return {chance(0.5) and tensor("scalar") or nil} end,
  ["Tensor:dot"] = function() return {tensor("double[3]")} end,
  ["Tensor:matmul"] = function() return {tensor("transposed[3,2]")} end,
  ["Tensor:index_select"] = function() return {small(), lmkit.tensor({1, 2})} end,
  ["Tensor:narrow"] = function() return {small(), small(), small()} end,
  ["Tensor:transpose"] = function() return {small(), small()} end,
  ["Tensor:select"] = function() return {small(), small()} end,
  ["TrainControl:freeze"] = function() return {pick({"encoder.", "encoder.lstm0_", "decoder", "head", "x"})} end,
  ["TrainControl:unfreeze"] = function() return {pick({"encoder.", "encoder.lstm1_", "decoder", "head", "x"})} end,
  ["TrainControl:set_lr"] = function() return {number_value()} end,
  ["Tensor.__index"] = function() return {pick({1, -1, {1, {1, 2}}, {{}, 2}, "grad", tensor("bool[2,3]"), tensor("int64[5]")})} end,
  ["Tensor.__newindex"] = function() return {pick({1, {1, 2}, "grad", "requires_grad"}), number_value()} end,
}

-- The object a method template is made for (else self is any pool object of the class).
local SELF_TEMPLATES = {
  ["Tensor:backward"] = function() return pick({tensor("loss"), tensor("non-leaf[2,3]")}) end,
  ["Tensor:dot"] = function() return tensor("double[3]") end,
  ["Tensor:matmul"] = function() return tensor("float[2,3]") end,
  ["Tensor:index_select"] = function() return pick({tensor("float[2,3]"), tensor("matrix[8,5]")}) end,
  ["Tensor:narrow"] = function() return tensor("matrix[8,5]") end,
  ["Tensor:select"] = function() return tensor("matrix[8,5]") end,
  ["Tensor:transpose"] = function() return tensor("4-D[1,2,1,2]") end,
}

-- Fields and methods the classes answer to, for __index.
local FIELDS = {"train", "valid", "test", "vocab", "name", "protocol", "source", "from_cache", "cache_status",
                "cache_file", "grad", "requires_grad", "is_leaf", "grad_fn", "size", "next", "summary", "dir",
                "stop", "lr", "nonexistent", ""}

-- Values the fuzzer must not pass, because the call would legitimately take long or change the
-- machine: the guard returns a replacement argument list (or nil to skip the call).
local GUARDS = {
  ["lmkit.process.sleep"] = function(args, n)
    if type(args[1]) == "number" and args[1] > 0.01 then args[1] = 0.001 end
    return args, n
  end,
  -- n threads for Torch's CPU kernels: a valid large n is a legitimate (and heavy) setting.
  ["lmkit.set_threads"] = function(args, n)
    if type(args[1]) == "number" and args[1] > 4 and args[1] <= 1024 then args[1] = 2 end
    return args, n
  end,
}

-- Training for real: at most one run per top-level call, for at most 2 epochs (options are the
-- first argument of lmkit.train, the second of lmkit.resume).
local function training_guard(options_at)
  return function(args, n)
    if heavy_budget <= 0 then return nil end
    heavy_budget = heavy_budget - 1
    local options = args[options_at]
    if type(options) == "table" and getmetatable(options) == nil then
      for _, key in ipairs({"epochs", "finetune_epochs"}) do
        local v = rawget(options, key)
        if type(v) == "number" and v > 2 then rawset(options, key, 2) end
      end
      if options_at == 1 and type(rawget(options, "run_dir")) ~= "string" and chance(0.8) then
        rawset(options, "run_dir", fresh_path("runs/train"))
      end
    end
    return args, n
  end
end
GUARDS["lmkit.train"] = training_guard(1)
GUARDS["lmkit.resume"] = training_guard(2)
-- Counts of work (iterations, context pairs, tokens to draw, values of a ladder): legal at any size
-- and costing time in proportion, so the fuzzer caps them at WORK_CAP. Where the count is also
-- allocated up front (`allocates`), counts from 2^31 on pass unchanged: no machine has the memory,
-- so the allocation must fail, cleanly. A count that only allocates (a tensor size) is never capped.
--   name = {arguments = {positions}, options = {position, keys...}, lists = {positions}, allocates=}
local WORK_CAP = 1000
local WORK_COUNTS = {
  ["SyntheticLanguage:entropy_rate"] = {arguments = {2}, allocates = true},
  ["SyntheticLanguage:best_perplexity"] = {arguments = {2}, allocates = true},
  ["lmkit.analysis.refactorization_robustness"] = {options = {2, "iterations"}},
  ["lmkit.analysis.noise_robustness"] = {lists = {2}},
  ["lmkit.analysis.pairwise_kl"] = {options = {2, "pairs"}, allocates = true},
}

local function cap(value, allocates)
  if type(value) ~= "number" or not (value > WORK_CAP) then return value end
  if allocates and value >= 2 ^ 31 then return value end
  return math.type(value) == "integer" and WORK_CAP or WORK_CAP + 0.0
end

local function cap_work(target, args)
  local spec = WORK_COUNTS[target.name]
  if not spec then return end
  for _, i in ipairs(spec.arguments or {}) do args[i] = cap(args[i], spec.allocates) end
  local options = spec.options and args[spec.options[1]]
  if type(options) == "table" and getmetatable(options) == nil then
    for k = 2, #spec.options do
      local key = spec.options[k]
      rawset(options, key, cap(rawget(options, key), spec.allocates))
    end
  end
  for _, i in ipairs(spec.lists or {}) do
    if type(args[i]) == "table" and getmetatable(args[i]) == nil and rawlen(args[i]) > WORK_CAP then
      args[i] = {0.1, 1}
    end
  end
end

-- ---- one call --------------------------------------------------------------------------------

local failures = {}
local slowest = {}
local watchdog = {started = 0, fired = false, armed = false}

local function hook()
  if watchdog.armed and clock() - watchdog.started > cfg.call_seconds then
    watchdog.fired = true
    error("binding fuzz watchdog: call ran past call_seconds", 2)
  end
end
debug.sethook(hook, "", 100000)

local function make_args(target, depth)
  local args, n = {}, 0
  local template = TEMPLATES[target.name]
  local start = 1
  local use_template = template and chance(0.6)
  if target.class and target.class ~= "" and (target.method or target.metamethod) then
    if use_template and SELF_TEMPLATES[target.name] then
      args[1] = SELF_TEMPLATES[target.name]()
    elseif chance(0.9) then
      args[1] = pool_object(target.class)
    else
      args[1] = random_value(depth, target)
    end
    start = 2
  end
  -- A template touching a pool object that a callback closed fails: the call is then random.
  local ok, base = false, nil
  if use_template then ok, base = pcall(template) end
  if not ok then base = nil end
  if not base and target.metamethod == "__index" and chance(0.6) then
    base = {chance(0.5) and pick(methods_of[target.class] or FIELDS) or pick(FIELDS)}
  end
  if base then
    local count = #base
    if chance(0.1) then count = count + 1 elseif chance(0.1) and count > 0 then count = count - 1 end
    for i = 1, count do
      local v = base[i]
      if chance(0.15) or i > #base then
        v = random_value(depth, target)
      elseif type(v) == "table" and getmetatable(v) == nil and chance(0.3) then
        -- one option of the template's table replaced by a random value
        local copy = {}
        for k, x in pairs(v) do copy[k] = x end
        copy[#target.keys > 0 and pick(target.keys) or "zzz"] = random_value(depth + 1, target)
        v = copy
      end
      args[start + i - 1] = v
    end
    n = start - 1 + count
  else
    n = start - 1 + rand(5) - 1
    for i = start, n do
      if chance(0.25) then
        args[i] = options_table(target, depth)
      else
        args[i] = random_value(depth, target)
      end
    end
  end
  cap_work(target, args)
  return args, n
end

local function record_failure(kind, text)
  failures[#failures + 1] = ("%s: %s (seed %d, call #%d)"):format(kind, text, seed, calls_made)
  say("FAILURE ", failures[#failures])
end

-- Runs fn(args) in a fresh coroutine, resuming it (with random values) while it yields.
local function call_in_coroutine(fn, args, n)
  local co = coroutine.create(function() return fn(table.unpack(args, 1, n)) end)
  debug.sethook(co, hook, "", 100000)
  local result = table.pack(coroutine.resume(co))
  local resumes = 0
  while result[1] and coroutine.status(co) == "suspended" and resumes < 3 do
    resumes = resumes + 1
    result = table.pack(coroutine.resume(co, random_value(1)))
  end
  if coroutine.status(co) == "suspended" then coroutine.close(co) end
  return table.unpack(result, 1, result.n)
end

local unclear = {}  -- error messages that leak C++ internals instead of naming the argument
local UNCLEAR_PATTERNS = {"std::", "basic_string", "vector::", "bad_alloc", "json%.exception", "unknown C%+%+ exception",
                          "INTERNAL ASSERT", "_M_", "stoi", "stod", "out_of_range",
                          -- Torch's own texts that bindings/torch_error_text.cpp translates
                          "enforce fail", "mat1 and mat2", "does not have a grad_fn", "retain_graph",
                          "not implemented for '", "basic_filebuf", "tensor number %d+ in the list"}

local outcomes = {returned = 0, raised = 0, closed = 0}

local function check_outcome(target, description, ok, err, ...)
  if ok then
    outcomes.returned = outcomes.returned + 1
    target.returned = target.returned + 1
    for i = 1, math.min(select("#", ...), 3) do
      local v = select(i, ...)
      if type(v) == "userdata" then
        pcall(tostring, v)
        local meta = getmetatable(v)
        local small_enough = true
        if lmkit.is_tensor(v) then
          local sized, numel = pcall(function() return v:numel() end)
          small_enough = sized and numel <= 4096
        end
        if small_enough and type(meta) == "table" and rawget(meta, "__name") then
          if #recent < 64 then recent[#recent + 1] = v else recent[rand(64)] = v end
        end
      end
    end
    return
  end
  outcomes.raised = outcomes.raised + 1
  if type(err) == "string" and err:find("already closed", 1, true) then outcomes.closed = outcomes.closed + 1 end
  if watchdog.fired then return end
  if type(err) ~= "string" then
    if not callback_raised then
      record_failure("non-string error", describe(err) .. " from " .. description)
    end
    return
  end
  if err == "" then record_failure("empty error message", description) end
  for _, p in ipairs(UNCLEAR_PATTERNS) do
    if err:find(p) then
      local key = target.name .. ": " .. err:gsub("\n.*", ""):sub(1, 160)
      if not unclear[key] then unclear[key] = description end
      break
    end
  end
end

local function call_target(target, depth)
  local args, n = make_args(target, depth)
  local guard = GUARDS[target.name]
  if guard then
    args, n = guard(args, n)
    if not args then return end
  end
  local description = describe_call(target.name, args, n)
  trace(depth, description)
  target.called = target.called + 1
  local saved_args = current_args
  current_args = args
  local in_coroutine = chance(0.15)
  if in_coroutine then trace(depth, "  (in a coroutine)") end
  if in_coroutine then
    check_outcome(target, description, call_in_coroutine(target.fn, args, n))
  else
    check_outcome(target, description, pcall(target.fn, table.unpack(args, 1, n)))
  end
  current_args = saved_args
end

local nested_targets = {}
for _, t in ipairs(targets) do
  if t.name ~= "lmkit.train" and t.name ~= "lmkit.resume" then nested_targets[#nested_targets + 1] = t end
end

local control_targets = {}
for _, t in ipairs(targets) do
  if t.class == "TrainControl" then control_targets[#control_targets + 1] = t end
end

-- A call made from inside a callback (of the class's methods only, when `class` is given).
fuzz_nested = function(class)
  if nesting >= 2 then return end
  local target = pick(class == "TrainControl" and control_targets or nested_targets)
  if not target then return end
  nesting = nesting + 1
  local ok, err = pcall(call_target, target, nesting)
  nesting = nesting - 1
  if not ok then error(err, 0) end
end

local function fuzz_one(target)
  calls_made = calls_made + 1
  heavy_budget = 1
  callback_raised = false
  watchdog.fired = false
  watchdog.started = clock()
  watchdog.armed = true
  local ok, err = pcall(call_target, target, 0)
  watchdog.armed = false
  local elapsed = clock() - watchdog.started
  if watchdog.fired then
    record_failure("hang", ("%s ran past %gs (interrupted in Lua code)"):format(target.name, cfg.call_seconds))
  elseif elapsed > cfg.call_seconds then
    record_failure("hang", ("%s took %.1fs (> call_seconds)"):format(target.name, elapsed))
  end
  if not ok then
    -- The fuzzer's own code failed (or a callback's yield escaped it): a bug of the fuzzer.
    record_failure("fuzzer error", tostring(err) .. " while calling " .. target.name)
  end
  if #slowest < 5 or elapsed > slowest[#slowest].seconds then
    slowest[#slowest + 1] = {name = target.name, seconds = elapsed, call = calls_made}
    table.sort(slowest, function(a, b) return a.seconds > b.seconds end)
    slowest[6] = nil
  end
end

-- ---- main loop -------------------------------------------------------------------------------

say(("binding fuzz: seed %d, %g s, %d functions and methods (%d left out)"):format(seed, cfg.seconds, #targets, #excluded))
-- How to replay this run: the same seed through the same runner (the lmkit executable, or the
-- interpreter that loaded lmkit.so).
local runner = lmkit.process.executable()
local module_file = package.searchpath("lmkit", package.cpath)
if not runner:match("lmkit$") and module_file then
  runner = "--module " .. module_file:match("^(.*)/[^/]*$") .. " " .. runner
end
say(("  replay: tests/fuzz/run_binding_fuzz.sh %s %g seed=%d verbose=true (calls=N stops at call N)")
    :format(runner, cfg.seconds, seed))
lmkit.set_threads(1)
local threads = lmkit.get_threads()
local started = clock()
prepare_files()
pool = build_pool()
-- Every class with methods needs objects in the pool: a class added to lmkit without a pool entry
-- here would otherwise be fuzzed only with wrong objects.
for _, t in ipairs(targets) do
  if t.method and not pool.by_class[t.class] then
    error(("the fuzzer has no %s objects for %s: add one to build_pool()"):format(t.class, t.name))
  end
end
local setup_seconds = clock() - started

local deadline = started + cfg.seconds
local order = {}
for i = 1, #targets do order[i] = targets[i] end
local done = false
while not done do
  -- One round: every target once, in a fresh random order.
  for i = #order, 2, -1 do
    local j = rand(i)
    order[i], order[j] = order[j], order[i]
  end
  for _, target in ipairs(order) do
    if clock() >= deadline or (cfg.calls > 0 and calls_made >= cfg.calls) or #failures >= 20 then
      done = true
      break
    end
    fuzz_one(target)
    if calls_made % cfg.refresh == 0 then
      for _, v in ipairs(pool.all) do if chance(0.5) then close(v) end end
      recent = {}
      collectgarbage("collect")
      pool = build_pool()
      lmkit.set_threads(threads)
    elseif calls_made % 25 == 0 then
      collectgarbage("step")
    end
  end
end
debug.sethook()
pool, recent = nil, nil
collectgarbage("collect")
collectgarbage("collect")

-- ---- the REPL's echo -------------------------------------------------------------------------
-- Lines of values whose metamethods raise, yield, return nonsense or hide their metatable, echoed,
-- printed, raised as errors and handed to help() in one `lmkit repl` reading them from a pipe: no
-- value may abort it (it used to PANIC, exit 134). Only when the runner is the lmkit executable.

local HOOK_SOURCES = {
  "function() error('hook raised') end", "function() error({}) end",
  "function() error(setmetatable({}, {__tostring = function() error('nested') end})) end",
  "function() return {} end", "function() return nil end", "function() return 42 end",
  "function() return coroutine.yield() end", "function(...) return ... end", "function() collectgarbage() end",
}
local HOOKS = {"__tostring", "__index", "__len", "__pairs", "__eq", "__lt", "__concat", "__call", "__name",
               "__metatable", "__gc"}

local function value_source(depth)
  local r = rand(5)
  if depth >= 3 or r == 1 then
    return pick({"1", "'s'", "nil", "true", "0/0", "lmkit.ones(2)", "print", "coroutine.create(print)", "io.stdout",
                 "'\\255\\0'", "lmkit.heads.softmax()"})
  end
  if r == 2 then return "{" .. value_source(depth + 1) .. ", k = " .. value_source(depth + 1) .. "}" end
  local hooks = {}
  for _, h in ipairs(HOOKS) do
    if chance(0.4) then
      local v
      if h == "__name" then
        v = pick({"'Tensor'", "42", "{}"})
      elseif h == "__metatable" then
        v = pick({"false", "'locked'", "5"})
      else
        v = pick(HOOK_SOURCES)
      end
      hooks[#hooks + 1] = h .. " = " .. v
    end
  end
  return ("setmetatable({%s}, {%s})"):format(value_source(depth + 1), table.concat(hooks, ", "))
end

local function repl_line()
  local v = value_source(0)
  local r = rand(7)
  if r == 1 then return "error(" .. v .. ")" end
  if r == 2 then return "help(" .. v .. ")" end
  if r == 3 then return "print(" .. v .. ")" end
  if r == 4 then return "lmkit.show(" .. v .. ")" end
  if r == 5 then return v .. ", " .. value_source(0) end
  return v
end

local function fuzz_repl_echo(lines)
  local executable = lmkit.process.executable()
  if not executable:match("lmkit$") then return 0 end
  local input = assert(io.open("repl-input.lua", "w"))
  for i = 1, lines do
    local line = repl_line()
    trace(0, "repl " .. i .. ": " .. line)
    input:write(line, "\n")
  end
  input:write("print('repl echo fuzz: ' .. 'alive')\n")
  input:close()
  local quoted = "'" .. executable:gsub("'", "'\\''") .. "'"
  local _, how, code = os.execute(quoted .. " repl < repl-input.lua > repl-output.txt 2>&1")
  local output = ""
  local f = io.open("repl-output.txt", "r")
  if f then
    output = f:read("a")
    f:close()
  end
  -- A piped REPL exits 1 when any line raised (most of these do): a clean exit either way.
  local clean = how == "exit" and (code == 0 or code == 1)
  if not clean or not output:find("repl echo fuzz: alive", 1, true) then
    record_failure("repl echo", ("lmkit repl %s %s on repl-input.lua (%d lines); its output ends: %s")
                   :format(tostring(how), tostring(code), lines, output:sub(-600)))
  end
  return lines
end

local repl_lines = fuzz_repl_echo(cfg.repl_lines)

-- ---- report ----------------------------------------------------------------------------------

local elapsed = clock() - started
local never_called, never_returned = {}, {}
for _, t in ipairs(targets) do
  if t.called == 0 then never_called[#never_called + 1] = t.name end
  if t.returned == 0 then never_returned[#never_returned + 1] = t.name end
end
say(("%d calls in %.1f s (%.0f calls/s; setup %.1f s), %d functions and methods, %d left out:")
    :format(calls_made, elapsed, calls_made / math.max(elapsed - setup_seconds, 1e-9), setup_seconds, #targets, #excluded))
for _, e in ipairs(excluded) do say("  left out: ", e) end
say(("calls and nested calls: %d returned, %d raised an error (%d of them on a closed object)")
    :format(outcomes.returned, outcomes.raised, outcomes.closed))
if #never_returned > 0 then
  say(("never returned normally (%d): %s"):format(#never_returned, table.concat(never_returned, ", ")))
end
say("slowest calls:")
for _, s in ipairs(slowest) do say(("  %.2f s  #%d %s"):format(s.seconds, s.call, s.name)) end
local unclear_keys = {}
for k in pairs(unclear) do unclear_keys[#unclear_keys + 1] = k end
table.sort(unclear_keys)
if #unclear_keys > 0 then
  say(("error messages that leak C++ internals (%d):"):format(#unclear_keys))
  for _, k in ipairs(unclear_keys) do say("  ", k, "\n    from ", unclear[k]) end
end
-- A short run may not reach every target; a full round must have happened to demand it.
if calls_made >= #targets and #never_called > 0 then
  record_failure("coverage", "never called: " .. table.concat(never_called, ", "))
end
if #failures > 0 then
  say(("binding fuzz FAILED: %d failure(s), seed %d"):format(#failures, seed))
  for _, f in ipairs(failures) do say("  ", f) end
  os.exit(1)
end
say(("binding fuzz ok: seed %d, %d calls, %d REPL lines"):format(seed, calls_made, repl_lines))

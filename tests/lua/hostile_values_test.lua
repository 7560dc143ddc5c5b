-- Deep, cyclic and crafted values at the Lua ↔ C++ conversions (JSON, settings, tensors, run
-- files): each is a Lua error that names the value, or works; never a crash, a hang or a corrupted
-- Lua state (each test ends with a full garbage collection and a fresh allocation).
local T = require "lmkit.testing"

local function nest_list(depth)
  local outer = {}
  local inner = outer
  for _ = 1, depth do
    inner[1] = {}
    inner = inner[1]
  end
  return outer
end

local function nest_fields(depth, leaf)
  local outer = {}
  local inner = outer
  for _ = 1, depth - 1 do
    inner.x = {}
    inner = inner.x
  end
  inner.y = leaf
  return outer
end

local function state_is_healthy()
  collectgarbage()
  collectgarbage()
  T.eq(lmkit.json_decode(lmkit.json_encode({a = {1, 2}})), {a = {1, 2}})
  T.eq(lmkit.zeros(2, 3):size(), {2, 3})
end

T.test("a table inside itself is named as a cycle by json_encode", function()
  local a = {}
  a[1] = a
  T.raises(function() lmkit.json_encode(a) end, "'value[1]' contains itself (a cycle)")
  local b = {}
  b.self = b
  T.raises(function() lmkit.json_encode(b) end, "'value.self' contains itself (a cycle)")
  local c = {inner = {}}
  c.inner.back = c
  T.raises(function() lmkit.json_encode(c) end, "'value.inner.back' contains itself")
  state_is_healthy()
end)

T.test("a table shared by two fields is not a cycle", function()
  local shared = {1, 2}
  T.eq(lmkit.json_decode(lmkit.json_encode({a = shared, b = {shared, shared}})), {a = {1, 2}, b = {{1, 2}, {1, 2}}})
end)

T.test("JSON text nested up to 200 levels decodes; deeper is an error", function()
  for _, depth in ipairs{80, 100, 150, 200} do
    local value = lmkit.json_decode(string.rep("[", depth) .. string.rep("]", depth))
    local levels = 0
    while type(value) == "table" do
      levels = levels + 1
      value = value[1]
    end
    T.eq(levels, depth)
    state_is_healthy()
  end
  T.raises(function() lmkit.json_decode(string.rep("[", 201) .. string.rep("]", 201)) end,
           "nested deeper than 200 levels")
  T.raises(function() lmkit.json_decode(string.rep('{"a":', 100000)) end, "nested deeper than 200 levels")
  state_is_healthy()
end)

T.test("Lua tables nested up to 200 levels encode; deeper is an error naming the place", function()
  T.eq(#lmkit.json_encode(nest_list(199)), 400)
  T.raises(function() lmkit.json_encode(nest_list(250)) end, "[1][1]' is nested deeper than 200 levels")
  T.raises(function() lmkit.json_encode(nest_fields(10000, 1)) end, "x.x.x' is nested deeper than 200 levels")
  state_is_healthy()
end)

T.test("configure takes deep defaults and names too deep ones", function()
  local cfg = lmkit.configure(nest_fields(120, 7))
  local inner = cfg
  for _ = 1, 119 do inner = inner.x end
  T.eq(inner.y, 7)
  T.raises(function() lmkit.configure(nest_fields(300, 7)) end, "is nested deeper than 200 levels")
  local cyclic = {lr = 1}
  cyclic.model = {parent = cyclic}
  T.raises(function() lmkit.configure(cyclic) end, "'model.parent' contains itself")
  state_is_healthy()
end)

T.test("tensor data nested beyond Torch's dimensions is an error, and the state survives", function()
  T.raises(function() lmkit.tensor(nest_list(10000)) end, "nested tables deeper than 64 levels")
  state_is_healthy()
  local a = {}
  a[1] = a
  T.raises(function() lmkit.tensor(a) end, "deeper than 64 levels (a cycle?)")
  state_is_healthy()
end)

T.test("a run directory's files are untrusted: deep JSON works to the bound, beyond it names the file", function()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  local function write(name, text)
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
  end
  write("config.json", "{}")
  write("summary.json", '{"status": "finished", "deep": ' .. string.rep("[", 150) .. string.rep("]", 150) .. "}")
  local summary = lmkit.open_run(dir):summary()
  T.eq(summary.status, "finished")
  state_is_healthy()
  write("summary.json", '{"deep": ' .. string.rep("[", 300) .. string.rep("]", 300) .. "}")
  T.raises(function() lmkit.open_run(dir):summary() end, dir .. "/summary.json' is not valid JSON: nested deeper")
  -- Valid JSON of the wrong shape is named too, not read as a summary without a status.
  write("summary.json", '[{"status": "finished"}]')
  T.raises(function() lmkit.open_run(dir):summary() end, dir .. "/summary.json' must hold a JSON object, got array")
  T.eq(tostring(lmkit.open_run(dir)):find("Run ", 1, true), 1)
  write("metrics.jsonl", string.rep("[", 500) .. "\n")
  T.raises(function() lmkit.open_run(dir):metrics() end, "metrics.jsonl' line 1 is not JSON: nested deeper")
  state_is_healthy()
  os.execute("rm -rf '" .. dir .. "'")
end)

T.test("text that is not UTF-8 is named where JSON needs UTF-8; JSON syntax errors read plainly", function()
  T.raises(function() lmkit.json_encode({name = "caf\xe9"}) end, "'value.name' is not UTF-8 text")
  T.raises(function() lmkit.json_encode({["\xff"] = 1}) end, "has a key that is not UTF-8 text")
  T.eq(lmkit.json_decode(lmkit.json_encode({s = "café ∑ 𝔘"})), {s = "café ∑ 𝔘"})
  local message = T.raises(function() lmkit.json_decode("{") end, "not valid JSON: parse error at line 1, column 2")
  T.eq(message:find("[json.exception", 1, true), nil)
  -- A run directory whose name is not UTF-8 trains; its files replace the bad byte.
  local dir = os.tmpname() .. "-\xff"
  local corpus = lmkit.data.corpus{name = "synthetic", vocab = 5, states = 2, dim = 2, train = 300, valid = 60, test = 60}
  local run = lmkit.train{model = lmkit.model{vocab_size = 5, emb = 4, nhid = 4, nhidlast = 4, nlayers = 1},
                          corpus = corpus, run_dir = dir, epochs = 1, batch_size = 2, bptt = 5, log_interval = 100}
  T.eq(run:summary().status, "finished")
  os.execute("rm -rf '" .. dir .. "'")
end)

T.test("head specs are read raw, and a NaN rate is refused", function()
  local hostile = setmetatable({}, {__index = function() error("x") end})
  T.raises(function() lmkit.model{vocab_size = 5, head = hostile} end, "option 'head' must be a head from lmkit.heads")
  T.raises(function() lmkit.heads.mos{dropoutl = 0 / 0} end, "option 'dropoutl' must be in [0, 1)")
  -- A NaN given for an integer is "NaN" whatever its sign bit (the C library prints "-nan").
  T.raises(function() lmkit.heads.mos{K = 0 / 0} end, "option 'K' must be an integer, got NaN)")
  T.raises(function() lmkit.heads.mos{K = -(0 / 0)} end, "option 'K' must be an integer, got NaN)")
  T.raises(function() lmkit.heads.mos{K = 2.5} end, "option 'K' must be an integer, got 2.5)")
  state_is_healthy()
end)


T.test("integers reach tensors exactly; a value outside the dtype is refused, never wrapped", function()
  T.eq(lmkit.tensor(math.maxinteger):item(), math.maxinteger)
  T.eq(lmkit.tensor({math.mininteger, (1 << 53) + 1}):totable(), {math.mininteger, 9007199254740993})
  T.raises(function() lmkit.tensor({1, 300}, {dtype = "uint8"}) end, "the value 300 (element 2 in reading order) does not fit dtype uint8 (0 to 255)")
  T.raises(function() lmkit.tensor({-1}, {dtype = "uint8"}) end, "does not fit")
  T.raises(function() lmkit.tensor({1e300}, {dtype = "int32"}) end, "does not fit")
  T.raises(function() lmkit.tensor({0/0}, {dtype = "int64"}) end, "does not fit")
  T.eq(lmkit.arange(math.maxinteger - 2, math.maxinteger):totable(), {math.maxinteger - 2, math.maxinteger - 1})
  state_is_healthy()
end)

T.test("svdvals of a matrix with NaN or Inf names the entry instead of letting LAPACK complain", function()
  T.raises(function() lmkit.tensor({{1, 2}, {3, 1/0}}):svdvals() end, "the matrix holds inf at [2, 2]")
  T.raises(function() lmkit.tensor({{0/0, 2}, {3, 4}}):svdvals() end, "at [1, 1]")
  T.raises(function() lmkit.tensor({1, 2}):svdvals() end, "needs a matrix")
  T.eq(lmkit.tensor({{3.0, 0}, {0, 4}}):svdvals():totable(), {4, 3})
  T.raises(function() lmkit.tensor({{3, 0}, {0, 4}}):svdvals() end, "floating-point matrix, got int64")
end)

T.run()

-- help() and lmkit.doc: documentation reaches the REPL user.
local T = require "lmkit.testing"

local function captured(fn)
  local chunks = {}
  local real = io.write
  io.write = function(...) for _, s in ipairs({...}) do chunks[#chunks + 1] = tostring(s) end end
  local ok, err = pcall(fn)
  io.write = real
  assert(ok, err)
  return table.concat(chunks)
end

T.test("functions have signatures", function()
  local name, doc = lmkit.doc(lmkit.zeros)
  T.eq(name, "lmkit.zeros")
  T.truthy(doc:find("^lmkit%.zeros%(sizes%.%.%.%[, {dtype=nil, device=nil, requires_grad=nil}%]%) %-> Tensor"))
  T.truthy(captured(function() help(lmkit.zeros) end):find("lmkit.zeros\n  lmkit.zeros(sizes", 1, true))
end)

T.test("help by name, for tensors and for everything", function()
  T.truthy(captured(function() help("log_softmax") end):find("Tensor:log_softmax", 1, true))
  local tensor_help = captured(function() help(lmkit.ones(1)) end)
  T.truthy(tensor_help:find("1-based", 1, true))
  T.truthy(tensor_help:find("backward", 1, true))
  T.truthy(captured(function() help() end):find("zeros", 1, true))
  T.truthy(captured(function() help("no_such_thing") end):find("no documentation for 'no_such_thing'", 1, true))
end)

T.test("help on an object of an lmkit class shows its class and methods", function()
  local language = lmkit.data.synthetic{vocab = 20, states = 6, dim = 3, seed = 5}
  local corpus = language:corpus{train = 300, valid = 100, test = 100}
  local language_help = captured(function() help(language) end)
  T.truthy(language_help:find("lmkit.data.SyntheticLanguage", 1, true), language_help)
  T.truthy(language_help:find("Methods (x:name(...)):", 1, true), language_help)
  T.truthy(captured(function() help(corpus) end):find("lmkit.data.Corpus", 1, true))
  T.truthy(captured(function() help(corpus.vocab) end):find("lmkit.data.Vocab", 1, true))
  T.eq(captured(function() help(corpus) end):find("no documentation", 1, true), nil)
end)

T.test("your own functions can be documented", function()
  local function my_head(logits) return logits:log_softmax() end
  lmkit.document(my_head, "my_head", "my_head(logits) -> Tensor\nA plain softmax head.")
  T.truthy(captured(function() help(my_head) end):find("A plain softmax head.", 1, true))
end)

T.test("show describes nested values to a depth, within bounds", function()
  T.eq(lmkit.show({1, 2, x = {3}}), "{1, 2, x = {3}}")
  -- A run's result as the REPL echoes it: its nested numbers, not {...} at the first level.
  T.eq(lmkit.show({rank = {press = 12, eps = {0.1, 0.2}}, ppl = 80}), "{ppl = 80, rank = {eps = {0.1, 0.2}, press = 12}}")
  T.eq(lmkit.show({a = {b = {c = {d = 1}}}}), "{a = {b = {c = {...}}}}")
  T.eq(lmkit.show({a = {b = {c = {d = 1}}}}, 30, 4), "{a = {b = {c = {d = 1}}}}")
  T.eq(lmkit.show({a = {}}), "{a = {}}")
  local cycle = {name = "me"}
  cycle.self = cycle
  T.eq(lmkit.show(cycle), "{name = \"me\", self = {<cycle>}}")
  T.eq(lmkit.show({1, 2, 3, 4}, 2), "{1, 2, ... (2 more)}")
  -- However wide and deep: bounded.
  local wide = {}
  for i = 1, 30 do wide[i] = {} for j = 1, 30 do wide[i][j] = ("word%d"):format(j) end end
  T.truthy(#lmkit.show(wide) < 2600, #lmkit.show(wide))
  T.truthy(lmkit.show(wide):find("more%)}$"), lmkit.show(wide):sub(-40))
  T.eq(lmkit.show("a\nb"), '"a\\nb"')
  T.eq(lmkit.show(lmkit.zeros), "function: lmkit.zeros")
  T.eq(lmkit.show({lmkit.zeros(2, 3)}), "{Tensor(float32, size 2x3)}")
end)

T.run()

-- lmkit.data from Lua: corpora, vocabularies (0-based ids = tensor values), batching, the sampler's
-- saved state, synthetic languages. Real-corpus tests run when LMKIT_TEST_DATA holds ptb/.
local T = require "lmkit.testing"
local data = lmkit.data

local function temp_dir()
  local name = os.tmpname()
  os.remove(name)
  return name .. "-lmkit-cache"
end

T.test("a synthetic corpus has three splits and w-named words", function()
  local c = data.corpus{name = "synthetic", vocab = 50, states = 8, dim = 4, train = 1000, valid = 100, test = 200, seed = 3}
  T.eq(c.train:size(), {1000})
  T.eq(c.test:size(), {200})
  T.eq(c.train:dtype(), "int64")
  T.eq(c.vocab:size(), 50)
  T.eq(#c.vocab, 50)
  T.eq(c.protocol, "synthetic")
  T.truthy(tostring(c):find("vocab 50", 1, true))
end)

T.test("vocabulary ids are the 0-based values in token tensors", function()
  local c = data.corpus{name = "synthetic", vocab = 20, train = 100, valid = 10, test = 10}
  local first = c.train[1]:item()
  T.eq(c.vocab:word(first), "w" .. first)
  T.eq(c.vocab:id("w0"), 0)
  T.eq(c.vocab:id("w19"), 19)
  T.eq(c.vocab:id("nope"), nil)
  T.eq(c.vocab:encode("w3 w1  w2"):totable(), {3, 1, 2})
  T.eq(c.vocab:decode(c.vocab:encode("w3 w1")), "w3 w1")
  T.eq(c.vocab:decode({0, 19}), "w0 w19")
  T.raises(function() c.vocab:word(20) end, "outside the vocabulary [0, 20)")
  T.raises(function() c.vocab:encode("w1 zebra") end, "'zebra' is not in the vocabulary")
  T.eq(c.vocab:encode("zebra", {unk = "w5"}):totable(), {5})
  -- no words: an empty tensor (and, under the sanitizers, nothing leaked)
  T.eq(c.vocab:encode(""):totable(), {})
  T.eq(c.vocab:encode(" \n "):totable(), {})
end)

T.test("batchify and evaluation windows", function()
  local b = data.batchify(lmkit.arange(26), 4)
  T.eq(b:size(), {6, 4})
  T.eq(b[{1, 2}]:item(), 6)
  local lengths = {}
  local source = data.batchify(lmkit.arange(200), 2)  -- 100 rows
  for input, target in data.eval_batches(source, 30) do
    lengths[#lengths + 1] = input:size(1)
    T.eq(input + 1, target)
  end
  T.eq(lengths, {30, 30, 30, 9})
  T.raises(function() data.batchify(lmkit.arange(3), 4) end, "do not fill one row")
end)

T.test("the sampler scales the learning rate and resumes from its state", function()
  local source = data.batchify(lmkit.arange(3000), 3)
  local s = data.bptt_sampler{data = source, bptt = 12, seed = 5}
  for _ = 1, 10 do
    local input, target, scale, len = s:next()
    T.eq(input:size(1), len)
    T.truthy(scale * 12 >= len - 1e-9)
    T.eq(input + 1, target)
  end
  local saved = s:state()
  local rest = {}
  for input, _, scale in s:batches() do rest[#rest + 1] = input[{1, 1}]:item() .. ":" .. scale end
  T.eq(s:epoch(), 1)
  local again = data.bptt_sampler{data = source, bptt = 12, seed = 99}
  again:set_state(saved)
  local replay = {}
  for input, _, scale in again:batches() do replay[#replay + 1] = input[{1, 1}]:item() .. ":" .. scale end
  T.eq(replay, rest)
  T.raises(function() again:set_state("junk") end, "not a sampler state")
  T.raises(function() data.bptt_sampler{data = source, bpt = 3} end, "option 'bpt' is unknown")
end)

T.test("synthetic languages: normalized true log-probs and the rank asked for", function()
  local lang = data.synthetic{vocab = 120, states = 30, dim = 5, kind = "softmax", seed = 2}
  local tokens = lang:generate(800)
  local q = lang:log_probs(tokens)
  T.eq(q:size(), {800, 120})
  T.near(q:exp():sum(2), lmkit.ones(800):double(), 1e-6)
  T.eq(lang:expected_rank(), 7)
  T.eq(tokens, data.synthetic{vocab = 120, states = 30, dim = 5, kind = "softmax", seed = 2}:generate(800))
  local nll = lang:nll(tokens)
  for i = 1, 800, 97 do T.near(nll[i]:item(), -q[{i, tokens[i]:item() + 1}]:item(), 1e-9) end
  T.truthy(lang:best_perplexity(20000) > 1)
  T.eq(data.synthetic{kind = "hmm", vocab = 30, states = 4}:expected_rank(), nil)
  T.raises(function() data.synthetic{kind = "lstm"} end, "option 'kind' must be one of \"softmax\", \"hmm\", got \"lstm\"")
end)

T.test("a missing corpus names the folders tried and the download command", function()
  local err = T.raises(function() data.corpus{name = "wikitext-103", path = "/no/such/folder"} end, "/no/such/folder")
  T.truthy(err:find("scripts/get_data.sh wikitext-103", 1, true), err)
  T.raises(function() data.corpus{name = "ptb", states = 3} end, "for name=\"synthetic\" only")
  local other = T.raises(function() data.corpus{name = "my-corpus", path = "/no/such/folder"} end, "/no/such/folder")
  T.eq(other:find("get_data", 1, true), nil, "only the corpora get_data.sh knows are offered for download")
end)

T.test("a path without a name is a real corpus named after its folder", function()
  local dir = temp_dir() .. "/tiny-words"
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  for split, text in pairs{train = "a b c\nb c a\n", valid = "a c\n", test = "c b\n"} do
    local f = assert(io.open(dir .. "/" .. split .. ".txt", "w"))
    f:write(text)
    f:close()
  end
  for _, path in ipairs{dir, dir .. "/", dir .. "/."} do
    local c = data.corpus{path = path, cache = false}
    T.eq(c.name, "tiny-words", path)
    T.eq(c.train:size(), {8})  -- 6 words and 2 <eos>
    T.eq(c.vocab:size(), 4)
  end
  T.raises(function() data.corpus{name = "synthetic", path = dir} end, "option 'path' is for real corpora")
  os.execute("rm -rf '" .. dir .. "'")
end)

local root = os.getenv("LMKIT_TEST_DATA")
local have_ptb = root and io.open(root .. "/ptb/test.txt") ~= nil
if have_ptb then
  T.test("PTB under the mini protocol matches the reference reader, and reloads from its cache", function()
    local cache = temp_dir()
    local c = data.corpus{name = "ptb", path = root .. "/ptb", protocol = "mini", cache_dir = cache}
    T.eq(c.test:size(1), 82430)
    T.eq(c.train:size(1) + c.valid:size(1), 73760)
    T.eq(c.vocab:size(), 7596)
    T.eq(c.test[{{1, 7}}]:totable(), {235, 340, 313, 402, 866, 18, 13})
    T.eq(c.vocab:decode(c.test[{{1, 7}}]), "no it was n't black monday <eos>")
    T.eq(c.vocab:id("<eos>"), 13)
    T.eq(c.from_cache, false)
    local again = data.corpus{name = "ptb", path = root .. "/ptb", protocol = "mini", cache_dir = cache}
    T.eq(again.from_cache, true, again.cache_status)
    T.eq(again.test, c.test)
    os.remove(again.cache_file)
    os.remove(cache)
  end)
else
  io.write("[ SKIP ] PTB tests: LMKIT_TEST_DATA has no ptb/\n")
end

T.run()

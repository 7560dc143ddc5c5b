-- lmkit.analysis' language-model analyses from Lua: word similarity on a handmade vocabulary and
-- embedding (exact cosines and ρ), the wins matrix, top-k next words on a tiny model, bad input.
local T = require "lmkit.testing"
local analysis = lmkit.analysis

local function temp_dir()
  local name = os.tmpname()
  os.remove(name)
  name = name .. "-lmkit-wordsim"
  assert(os.execute("mkdir -p '" .. name .. "'"))
  return name
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- A corpus whose vocabulary is (0-based ids): <unk> 0, cat 1, dog 2, car 3, Paris 4, Apple 5,
-- apple 6, Bank 7, <eos> 8.
local dir = temp_dir()
write(dir .. "/train.txt", "<unk> cat dog car Paris Apple apple Bank\n")
write(dir .. "/valid.txt", "cat dog\n")
write(dir .. "/test.txt", "dog car\n")
local corpus = lmkit.data.corpus{name = "fake", path = dir, cache = false}
local vocab = corpus.vocab

-- cos(cat, dog) = cos(dog, car) = 1/√2, cos(cat, car) = 0, cos(cat, Paris) = −1; <unk> and <eos> are 0.
local embedding = lmkit.tensor({{0, 0}, {1, 0}, {1, 1}, {0, 1}, {-2, 0}, {0, 3}, {3, 0}, {1, 2}, {0, 0}}, {dtype = "float32"})

local bench = dir .. "/bench"
assert(os.execute("mkdir -p '" .. bench .. "'"))
write(bench .. "/EN-MC-30.txt", "cat\tdog\t8\r\ncat car 2\r\ncat zebra 5\r\n\r\ndog car 7\nunicorn dog 3\ncat Paris 0\n")
write(bench .. "/EN-RG-65.txt", "CAT dog 1\nApple apple 2\ncar dog 3\n")

T.test("word similarity: exact ρ and skipped pairs on a handmade embedding", function()
  T.eq(vocab:id("Paris"), 4)
  -- Default case rule "lower": "Paris" becomes "paris", which is not in the vocabulary.
  local r = analysis.word_similarity(embedding, vocab, {benchmarks = {"MC-30", "RG-65"}, dir = bench})
  T.eq(#r, 2)
  T.eq(r[1].name, "MC-30")
  T.eq({r[1].pairs, r[1].kept, r[1].skipped}, {6, 3, 3})
  T.near(r[1].spearman, math.sqrt(3) / 2, 1e-12)  -- ranks (2.5, 1, 2.5) vs (3, 1, 2)
  T.truthy(r[1].file:find("EN-MC-30.txt", 1, true))
  local rho, p = lmkit.stats.spearmanr({1 / math.sqrt(2), 0, 1 / math.sqrt(2)}, {8, 2, 7})
  T.near(r[1].p, p, 1e-12)
  T.near(r[1].spearman, rho, 1e-12)
  -- "CAT" → cat, "Apple" → apple (cos 1 with itself): cosines (1/√2, 1, 1/√2) vs (1, 2, 3).
  T.eq({r[2].name, r[2].kept, r[2].skipped}, {"RG-65", 3, 0})
  -- Exact matching keeps "Paris": ranks (3.5, 2, 3.5, 1) vs (4, 2, 3, 1) → ρ = 3/√10.
  local exact = analysis.word_similarity(embedding, vocab, {benchmarks = "MC-30", dir = bench, case = "exact"})
  T.eq({exact[1].kept, exact[1].skipped}, {4, 2})
  T.near(exact[1].spearman, 3 / math.sqrt(10), 1e-12)
  local exact_rg = analysis.word_similarity(embedding, vocab, {benchmarks = "RG-65", dir = bench, case = "exact"})
  T.eq(exact_rg[1].kept, 2)  -- "CAT" is not a vocabulary word as spelled
  local folded = analysis.word_similarity(embedding, vocab, {benchmarks = "MC-30", dir = bench, case = "fold"})
  T.eq(folded[1].kept, 4)
end)

T.test("word similarity of a model uses its input embedding", function()
  lmkit.seed(1)
  local m = lmkit.model{vocab_size = 9, emb = 4, nhid = 6, nhidlast = 4}
  local weight
  for _, p in ipairs(m:parameters()) do
    if p:dim() == 2 and p:size(1) == 9 and p:size(2) == 4 then weight = p end
  end
  T.truthy(weight, "the embedding parameter")
  local from_model = analysis.word_similarity(m, vocab, {benchmarks = {"MC-30"}, dir = bench, case = "exact"})
  local from_tensor = analysis.word_similarity(weight, vocab, {benchmarks = {"MC-30"}, dir = bench, case = "exact"})
  T.near(from_model[1].spearman, from_tensor[1].spearman, 1e-12)
  T.eq(from_model[1].kept, 4)
end)

T.test("word similarity: bad input is named", function()
  local opts = {benchmarks = {"MC-30"}, dir = bench}
  T.raises(function() analysis.word_similarity(lmkit.ones(3, 2), vocab, opts) end, "3 rows but the vocabulary 9 words")
  T.raises(function() analysis.word_similarity(lmkit.ones(9), vocab, opts) end, "embedding must be a matrix")
  T.raises(function() analysis.word_similarity("E", vocab, opts) end, "Tensor or Model expected")
  T.raises(function() analysis.word_similarity(embedding, {}, opts) end, "Vocab expected")
  T.raises(function() analysis.word_similarity(embedding, vocab, {benchmarks = {"MC-31"}, dir = bench}) end,
           "unknown word-similarity benchmark 'MC-31'")
  T.raises(function() analysis.word_similarity(embedding, vocab, {benchmarks = {}, dir = bench}) end, "empty list")
  T.raises(function() analysis.word_similarity(embedding, vocab, {lowercase = true}) end, "option 'lowercase' is unknown")
  T.raises(function() analysis.word_similarity(embedding, vocab, {case = "upper", dir = bench}) end, "option 'case'")
  T.raises(function() analysis.word_similarity(embedding, vocab, {dir = dir .. "/nowhere"}) end, dir .. "/nowhere")
  -- All 13 benchmarks by default: the fake folder lacks the others, and the error names the file.
  T.raises(function() analysis.word_similarity(embedding, vocab, {dir = bench}) end, "EN-WS-353-ALL.txt")
  local broken = dir .. "/broken"
  assert(os.execute("mkdir -p '" .. broken .. "'"))
  write(broken .. "/EN-MC-30.txt", "cat dog 1\ncat dog\n")
  T.raises(function() analysis.word_similarity(embedding, vocab, {benchmarks = "MC-30", dir = broken}) end,
           "EN-MC-30.txt:2: expected 'word word score', got 2 fields")
end)

T.test("similarity wins and best counts", function()
  local a = {{name = "X", spearman = 0.5}, {name = "Y", spearman = 0.2}, {name = "Z", spearman = 0 / 0}}
  local b = {{name = "X", spearman = 0.4}, {name = "Y", spearman = 0.3}, {name = "Z", spearman = 0.1}}
  local c = {{name = "Y", spearman = 0.1}, {name = "X", spearman = 0.5}}
  local wins, best = analysis.similarity_wins({a, b, c})
  T.eq(wins, {{0, 1, 1}, {1, 0, 1}, {0, 1, 0}})
  T.eq(best, {1, 2, 1})
  -- word_similarity results go in as they are.
  local r1 = analysis.word_similarity(embedding, vocab, {benchmarks = {"MC-30", "RG-65"}, dir = bench})
  local r2 = analysis.word_similarity(embedding, vocab, {benchmarks = {"MC-30", "RG-65"}, dir = bench, case = "exact"})
  local w = analysis.similarity_wins({r1, r2})
  T.eq(w[1][1] + w[2][2], 0)
  T.raises(function() analysis.similarity_wins({a}) end, "at least 2 models")
  T.raises(function() analysis.similarity_wins({a, {{name = "X", spearman = "high"}}}) end,
           "entry 2, entry 1, field 'spearman': number expected, got string")
  T.raises(function() analysis.similarity_wins({a, {{spearman = 1}}}) end, "model 2 names no benchmark")
  T.raises(function() analysis.similarity_wins({a, {{name = "X", rho = 1}}}) end, "unknown field 'rho'")
  T.raises(function() analysis.similarity_wins({a, {a[1], a[1]}}) end, "appears twice")
  T.eq(#analysis.similarity_benchmarks(), 13)
  T.eq(analysis.similarity_benchmarks()[8], {name = "MEN", file = "EN-MEN-TR-3k.txt"})
end)

T.test("top-k contexts agree with log_probs; k and the true word's rank", function()
  lmkit.seed(4)
  local m = lmkit.model{vocab_size = 9, emb = 4, nhid = 6, nhidlast = 4}
  m:train()
  local out = analysis.top_k_contexts(m, vocab, {"cat dog", {text = "cat dog car", next = "Paris"}}, {k = 3})
  T.eq(m:is_training(), true)  -- the mode is restored
  T.eq(#out, 2)
  T.eq(out[1].context, "cat dog")
  T.eq(out[1].next, nil)
  m:eval()
  for i, text in ipairs({"cat dog", "cat dog car"}) do
    local ids = vocab:encode(text):reshape(-1, 1)
    local logp = m:log_probs(ids)
    local last = logp[logp:size(1)]
    local values, indices = last:topk(3)
    T.eq(#out[i].top, 3)
    for j = 1, 3 do
      local id = indices[j]:item() - 1  -- topk's indices are 1-based; token ids are 0-based
      T.eq(out[i].top[j].id, id)
      T.eq(out[i].top[j].word, vocab:word(id))
      T.near(out[i].top[j].prob, math.exp(values[j]:item()), 1e-6)
      if j > 1 then T.truthy(out[i].top[j].prob <= out[i].top[j - 1].prob) end
    end
    if i == 2 then
      local target = vocab:id("Paris")
      local lp = last[target + 1]:item()
      T.near(out[i].next_prob, math.exp(lp), 1e-6)
      T.eq(out[i].next_rank, 1 + (last:gt(lp)):sum():item())
      if out[i].next_rank <= 3 then
        T.eq(out[i].top[out[i].next_position].word, "Paris")
      else
        T.eq(out[i].next_position, nil)
      end
    end
  end
  -- k = N: every word, probabilities summing to 1.
  local all = analysis.top_k_contexts(m, vocab, {{text = "dog", next = "cat"}}, {k = 9})[1]
  local total = 0
  for _, p in ipairs(all.top) do total = total + p.prob end
  T.near(total, 1, 1e-5)
  T.eq(all.top[all.next_position].word, "cat")
  T.eq(all.next_position, all.next_rank)
end)

T.test("top-k contexts read off a stream: the logP matrix's row at their first occurrence", function()
  lmkit.seed(6)
  local m = lmkit.model{vocab_size = 9, emb = 4, nhid = 6, nhidlast = 4}
  -- A stream of 300 tokens without "Paris" (id 4 is never drawn), so a context with it is absent.
  local ids = {}
  for i = 1, 300 do ids[i] = ({1, 2, 3, 5, 6, 7})[(i * 7 + i // 5) % 6 + 1] end
  local stream = lmkit.tensor(ids, {dtype = "int64"})
  T.eq(vocab:id("Paris"), 4)
  -- The words at 1-based stream positions 180..182, and where they first occur.
  local words = {vocab:word(ids[180]), vocab:word(ids[181]), vocab:word(ids[182])}
  local first
  for p = 3, 300 do
    if ids[p - 2] == ids[180] and ids[p - 1] == ids[181] and ids[p] == ids[182] then first = p; break end
  end
  local text = table.concat(words, " ")
  local out = analysis.top_k_contexts(m, vocab, {{text = text, next = "Paris"}, "cat Paris dog"},
                                      {k = 3, stream = stream, bptt = 70})
  T.eq(out[1].state, "stream")
  T.eq(out[1].position, first)
  -- Independent truth: row `first` of Q over the same stream, batch 1, bptt 70, state carried.
  local q = analysis.logp_matrix(m, stream, {batch_size = 1, bptt = 70, dtype = "float64"})
  local row = q[first]
  local values, indices = row:topk(3)
  for j = 1, 3 do
    T.eq(out[1].top[j].id, indices[j]:item() - 1)
    T.near(out[1].top[j].prob, math.exp(values[j]:item()), 1e-6)
  end
  T.near(out[1].next_prob, math.exp(row[4 + 1]:item()), 1e-6)
  -- The state carried from the stream's start matters: a zero state reads the same words otherwise.
  local zero = analysis.top_k_contexts(m, vocab, {{text = text, next = "Paris"}}, {k = 3})[1]
  T.eq(zero.state, "zero")
  T.truthy(math.abs(zero.next_prob - out[1].next_prob) > 1e-6)
  -- Absent from the stream: read from a zero state, and said so.
  T.eq(out[2].state, "zero")
  T.eq(out[2].position, nil)
  local alone = analysis.top_k_contexts(m, vocab, {"cat Paris dog"}, {k = 3})[1]
  T.near(out[2].top[1].prob, alone.top[1].prob, 1e-9)
  T.raises(function() analysis.top_k_contexts(m, vocab, {"cat"}, {stream = {1, 2}}) end,
           "option 'stream' must be a Tensor")
  T.raises(function() analysis.top_k_contexts(m, vocab, {"cat"}, {stream = stream, bptt = 0}) end, "option 'bptt' must be ≥ 1, got 0")
end)

T.test("top-k contexts: unknown words, k and input errors", function()
  local m = lmkit.model{vocab_size = 9, emb = 4, nhid = 6, nhidlast = 4}
  T.raises(function() analysis.top_k_contexts(m, vocab, {"cat zebra"}) end, "context 1: word 'zebra' is not in the vocabulary")
  T.raises(function() analysis.top_k_contexts(m, vocab, {{text = "cat", next = "zebra"}}) end, "word 'zebra'")
  local out = analysis.top_k_contexts(m, vocab, {{text = "cat zebra", next = "lion"}}, {unk = "<unk>", k = 2})
  T.eq(#out[1].top, 2)
  T.eq(out[1].next, "lion")
  T.truthy(out[1].next_rank >= 1 and out[1].next_rank <= 9)
  T.raises(function() analysis.top_k_contexts(m, vocab, {"cat"}, {k = 0}) end, "option 'k' must be ≥ 1, got 0")
  T.raises(function() analysis.top_k_contexts(m, vocab, {"cat"}, {k = 10}) end, "k must be in [1, 9]")
  T.raises(function() analysis.top_k_contexts(m, vocab, {"cat"}, {kk = 1}) end, "option 'kk' is unknown")
  T.raises(function() analysis.top_k_contexts(m, vocab, {42}) end, "entry 1: string or table expected, got number")
  T.raises(function() analysis.top_k_contexts(m, vocab, {""}) end, "context 1: the context has no words")
  T.raises(function() analysis.top_k_contexts(vocab, vocab, {"cat"}) end, "Model expected")
  local small = lmkit.model{vocab_size = 5, emb = 4, nhid = 6, nhidlast = 4}
  T.raises(function() analysis.top_k_contexts(small, vocab, {"cat"}) end, "the vocabulary has 9 words but the model 5")
end)

local source = os.getenv("LMKIT_SOURCE_DIR") or ".."
T.test("the six contexts of Table 5.1", function()
  local contexts = analysis.read_contexts(source .. "/recipes/data/table5_1_contexts.txt")
  T.eq(#contexts, 6)
  local nexts = {}
  for i, c in ipairs(contexts) do nexts[i] = c.next end
  T.eq(nexts, {"tons", "a", "african", "ual", "conspiracy", "subsidies"})
  T.truthy(contexts[3].text:find("<eos> as the days go by the south$"))
  local file = dir .. "/contexts.txt"
  write(file, "# comment\n\nthe cat\tdog\r\njust words\n\tlonely\n")
  T.raises(function() analysis.read_contexts(file) end, "contexts.txt:5: empty context")
  write(file, "the cat\tdog\njust words\n")
  T.eq(analysis.read_contexts(file), {{text = "the cat", next = "dog"}, {text = "just words"}})
  T.raises(function() analysis.read_contexts(dir .. "/none.txt") end, "none.txt")
end)

local root = os.getenv("LMKIT_TEST_DATA")
local have_data = root and io.open(root .. "/ptb/test.txt") and io.open(root .. "/word-similarity/EN-MC-30.txt")
if have_data then
  T.test("PTB (mini) vocabulary: the 13 benchmarks and the Table 5.1 contexts", function()
    local ptb = lmkit.data.corpus{name = "ptb", path = root .. "/ptb", protocol = "mini", cache = false}
    lmkit.seed(2)
    local r = analysis.word_similarity(lmkit.randn(ptb.vocab:size(), 8), ptb.vocab, {dir = root .. "/word-similarity"})
    local pairs = {353, 203, 252, 65, 30, 287, 771, 3000, 130, 144, 2034, 3500, 999}
    local thesis_skipped = {116, 66, 80, 55, 21, 146, 346, 1952, 65, 9, 1889, 1746, 424}
    T.eq(#r, 13)
    for i, b in ipairs(r) do
      T.eq(b.pairs, pairs[i], b.name)
      T.eq(b.kept + b.skipped + b.repeated, b.pairs)
      -- valid+test words are a subset of the thesis's PTB vocabulary: never fewer skipped.
      T.truthy(b.skipped >= thesis_skipped[i], b.name .. " skipped " .. b.skipped)
      T.truthy(math.abs(b.spearman) <= 1, b.name)
    end
    local m = lmkit.model{vocab_size = ptb.vocab:size(), emb = 8, nhid = 8, nhidlast = 8}
    local out = analysis.top_k_contexts(m, ptb.vocab, analysis.read_contexts(source .. "/recipes/data/table5_1_contexts.txt"))
    T.eq(#out, 6)
    for _, o in ipairs(out) do T.eq(#o.top, 5) end
  end)
else
  io.write("[ SKIP ] real-data tests: LMKIT_TEST_DATA has no ptb/ or word-similarity/\n")
end

T.run()

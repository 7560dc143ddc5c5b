-- lmkit.analysis from Lua: the rank of a constructed low-rank matrix.
local T = require "lmkit.testing"

T.test("Press and effective rank of a rank-7 product", function()
  lmkit.seed(3)
  local q = lmkit.randn(200, 7):matmul(lmkit.randn(7, 150))
  local sv = lmkit.analysis.svdvals(q)
  T.eq(sv:dtype(), "float32")
  T.eq(lmkit.analysis.press_rank(sv, 200, 150), 7)
  T.eq(lmkit.analysis.svdvals(q, {float64 = true}):dtype(), "float64")
  local report = lmkit.analysis.rank_report(q)
  T.eq(report.press, 7)
  T.eq(#report.effective, 3)
  T.truthy(report.effective[3].rank <= 7)
  T.truthy(lmkit.analysis.effective_rank(sv, 1e-3) <= 7)
end)

T.test("bad input is named", function()
  T.raises(function() lmkit.analysis.svdvals(lmkit.ones(3)) end, "needs a matrix")
  T.raises(function() lmkit.analysis.press_rank(lmkit.ones(3), 3, 3, "float33") end, "unknown dtype 'float33'")
end)

T.test("logp_matrix and its streamed spectrum from Lua", function()
  lmkit.seed(5)
  local m = lmkit.model{vocab_size = 30, emb = 6, nhid = 12, nhidlast = 6, nlayers = 2}
  local lang = lmkit.data.synthetic{vocab = 30, states = 8, dim = 4}
  local tokens = lang:generate(600)
  local q = lmkit.analysis.logp_matrix(m, tokens, {bptt = 50})
  T.eq(q:size(), {599, 30})
  -- d + 1: the decoder bias starts at zero, so only the normalizer adds to the logits' rank d
  T.eq(lmkit.analysis.press_rank(lmkit.analysis.svdvals(q), 599, 30), 7)
  local f = lmkit.analysis.logp_matrix(m, tokens, {f_logits = true, max_contexts = 100})
  T.eq(f:size(), {100, 30})
  local sv, rows, cols = lmkit.analysis.logp_svdvals(m, tokens, {dtype = "float64", block_rows = 64})
  T.eq({rows, cols}, {599, 30})
  T.near(sv, lmkit.analysis.svdvals(q:to("float64")), 1e-3)
  T.eq(lmkit.analysis.embedding(m):size(), {30, 6})
  T.raises(function() lmkit.analysis.logp_matrix(m, tokens, {batchsize = 2}) end, "batchsize")
  T.raises(function() lmkit.analysis.logp_matrix(m, q) end, "1-D int64")
end)

T.test("spectra, pairwise KL and the robustness experiments from Lua", function()
  local sv = lmkit.tensor({4, 2, 1, 1}, {dtype = "float64"})
  T.near(lmkit.analysis.normalized_spectrum(sv), lmkit.tensor({1, 0.5, 0.25, 0.25}, {dtype = "float64"}), 1e-15)
  T.near(lmkit.analysis.cumulative_share(sv), lmkit.tensor({0.5, 0.75, 0.875, 1}, {dtype = "float64"}), 1e-15)
  -- The MoS paper's Fig. 1 is a CDF of σ/σ₁, not a share of Σσ: half the values are ≤ 0.25 here.
  local values, fractions = lmkit.analysis.normalized_cdf(sv)
  T.eq(values:totable(), {0.25, 0.25, 0.5, 1})
  T.eq(fractions:totable(), {0.25, 0.5, 0.75, 1})
  T.raises(function() lmkit.analysis.normalized_cdf(lmkit.zeros(3)) end, "largest singular value must be > 0")
  local kl = lmkit.analysis.pairwise_kl(lmkit.tensor({{0.3, 0.7}, {0.7, 0.3}}, {dtype = "float64"}):log(), {pairs = 10})
  T.near(kl.mean, (0.3 - 0.7) * math.log(0.3 / 0.7), 1e-12)
  lmkit.seed(2)
  local q = lmkit.randn(30, 20, {dtype = "float64"})
  local steps = lmkit.analysis.refactorization_robustness(q, {keep = 5, iterations = 3, eps_dtype = "float64"})
  T.eq(#steps, 3)
  T.eq(steps[3].press_rank, 5)
  local noisy = lmkit.analysis.noise_robustness(q, {0, 4}, {keep = 5, eps_dtype = "float64"})
  T.eq(noisy[1].press_rank, 5)
  T.eq(noisy[2].press_rank, 20)
  T.eq(lmkit.analysis.projection_2d(q):size(), {30, 2})
end)


T.test("argmaxable words: a word inside the hull, exact for monotone heads, observed for mixtures", function()
  -- Four corners and the centre: the centre is never the top-1 without a bias, and is with one.
  local w = lmkit.tensor{{1, 1}, {1, -1}, {-1, 1}, {-1, -1}, {0, 0}}
  local r = lmkit.analysis.argmaxable(w, nil, {region = "free"})
  T.eq(r.method, "lp")
  T.eq(r.region, "free")
  T.eq(r.unargmaxable, {4})
  T.eq(r.words, 5)
  T.eq(r.argmaxable:size(), {5})
  T.eq(r.witness:size(), {5, 2})
  T.eq(r.by_scan + r.by_lp, 5)
  T.eq(#lmkit.analysis.argmaxable(w, lmkit.tensor{0, 0, 0, 0, 0.5}).unargmaxable, 0)
  T.raises(function() lmkit.analysis.argmaxable(w, nil, {region = "ball"}) end, "option 'region' must be one of \"box\", \"free\", got \"ball\"")
  T.raises(function() lmkit.analysis.argmaxable(w, nil, {rivals = 0}) end, "rivals")
  T.raises(function() lmkit.analysis.argmaxable(w, nil, {regoin = "box"}) end, "regoin")

  lmkit.seed(5)
  local tokens = lmkit.data.synthetic{vocab = 30, states = 8, dim = 4}:generate(400)
  -- GSS ranks words as its logits do: the model's answer is its decoder's, decided by LP.
  local gss = lmkit.model{vocab_size = 30, emb = 3, nhid = 12, nhidlast = 3, nlayers = 2, head = lmkit.heads.gss{}}
  local a = lmkit.analysis.model_argmaxable(gss)
  T.eq(a.method, "lp")
  T.truthy(a.note:find("strictly increasing"))
  local weight, bias = lmkit.analysis.decoder(gss)
  T.eq(weight:size(), {30, 3})
  T.eq(a.unargmaxable, lmkit.analysis.argmaxable(weight, bias).unargmaxable)
  -- MoS has no single logit matrix: without contexts it says what it needs, with them it counts.
  local mos = lmkit.model{vocab_size = 30, emb = 4, nhid = 12, nhidlast = 8, nlayers = 2,
                          head = lmkit.heads.mos{K = 3}}
  T.raises(function() lmkit.analysis.model_argmaxable(mos) end, "pass tokens")
  local s = lmkit.analysis.model_argmaxable(mos, {tokens = tokens, max_contexts = 200})
  T.eq(s.method, "sampled")
  T.eq(s.contexts, 200)
  T.eq(s.top1_counts:sum():item(), 200)
  T.eq(#s.unargmaxable + s.argmaxable:sum():item(), 30)
end)

T.test("every model analysis takes a Transformer, its stream read as a sliding context", function()
  lmkit.seed(5)
  local lang = lmkit.data.synthetic{vocab = 30, states = 8, dim = 4}
  local tokens = lang:generate(300)
  local m = lmkit.model{encoder = "transformer", vocab_size = 30, emb = 8, nlayers = 1, heads = 2, ff = 16, context = 16}
  -- Every parameter moved off its initial value (the decoder bias and LayerNorm shifts start at 0,
  -- which would leave the rank one below its bound).
  lmkit.no_grad(function()
    for _, p in ipairs(m:parameters()) do p:add_(lmkit.randn(table.unpack(p:size())), 0.3) end
  end)
  -- The analyses' default windows (bptt 70) are read in chunks of the context.
  local q = lmkit.analysis.logp_matrix(m, tokens)
  T.eq(q:size(), {299, 30})
  T.near(q:exp():sum(2), lmkit.ones(299), 1e-4)
  local sv, rows, cols = lmkit.analysis.logp_svdvals(m, tokens, {dtype = "float64"})
  T.eq({rows, cols}, {299, 30})
  -- The final LayerNorm centres h: rank ≤ d + 1, and hidden_size, told so by the model, finds d.
  T.eq(m:output_centred(), true)
  T.eq(lmkit.model{vocab_size = 30, emb = 8, nhid = 8, nhidlast = 8, nlayers = 1}:output_centred(), false)
  T.truthy(lmkit.analysis.press_rank(sv, rows, cols) <= 8 + 1, "a softmax over a centred d = 8 has rank ≤ d + 1")
  T.eq({lmkit.analysis.rank_bound(8, true, false, false), lmkit.analysis.rank_bound(8, true, true, false),
        lmkit.analysis.rank_bound(8, false, false, false), lmkit.analysis.rank_bound(8, false, true, true),
        lmkit.analysis.rank_bound(8, true, false, true)}, {10, 9, 9, 8, 9})
  T.raises(function() lmkit.analysis.rank_bound(0, true, false, false) end, "d must be at least 1")
  local e = lmkit.analysis.hidden_size(sv, {centred = m:output_centred()})
  T.eq({e.found, e.hidden_size}, {true, 8})
  T.raises(function() lmkit.analysis.model_argmaxable(m) end, "use region = \"free\"")
  local free = lmkit.analysis.model_argmaxable(m, {region = "free"})
  T.eq(free.method, "lp")
  T.eq(free.words, 30)
  local mos = lmkit.model{encoder = "transformer", vocab_size = 30, emb = 8, nlayers = 1, heads = 2, ff = 16, context = 16,
                          head = lmkit.heads.mos{K = 2}}
  T.eq(lmkit.analysis.model_argmaxable(mos, {tokens = tokens, max_contexts = 100}).contexts, 100)
  T.eq(lmkit.analysis.embedding(m):size(), {30, 8})
end)

T.run()

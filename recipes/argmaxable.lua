-- Unargmaxable words (Demeter et al. 2020, "stolen probability"; Grivas et al. 2022): a softmax
-- layer l = W h + b of low dimension d can hold words that no output state h ever makes the top-1
-- prediction. Which ones, how many, and how much of the text they are, per head and d.
--
--   lmkit run recipes/argmaxable.lua                                   -- tiny scale (minutes on a CPU)
--   lmkit run recipes/argmaxable.lua --set dims=2,3,4,8 --set heads=softmax,mos
--   lmkit run recipes/argmaxable.lua --set scale=small --set dims=50,100,200
--
-- Cells: each head of `heads` at each d of `dims` (emb = nhidlast = d; a mixture's d is its latent
-- dimension, emb, its last LSTM layer keeping its own width). Each cell trains its model
-- (recipes/presets/awd_lstm.lua), then asks lmkit.analysis.model_argmaxable:
--   * heads whose f is strictly increasing (Softmax, SigSoftmax, GSS, LMS-PLIF) rank words as their
--     decoder does, so the answer is exact: linear programs (GLPK) over the decoder's rows, with h in
--     the box [−1, 1]^d the LSTM can produce ("box") and, for comparison, anywhere in ℝ^d ("free");
--   * mixtures (MoS) have no single logit matrix: the words that are the top-1 on the test contexts
--     are counted instead (a lower bound of the argmaxable set; the rest are "never observed").
-- Not in the papers, our choices: the tolerance (a best lead ≤ 1e-6 nats counts as unargmaxable:
-- float32 logits cannot resolve less), the box [−1, 1]^d (the LSTM's output range; dropout is off at
-- evaluation), and the share of test tokens whose word is unargmaxable as the "frequency" column.
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local lineup = require "presets.lineup"
local measure = require "presets.measure"

-- How many of the test tokens are one of `ids` (0-based word ids).
local function token_share(tokens, ids)
  if #ids == 0 then return 0 end
  local wanted = {}
  for _, id in ipairs(ids) do wanted[id] = true end
  local hits, all = 0, tokens:totable()
  for _, id in ipairs(all) do
    if wanted[id] then hits = hits + 1 end
  end
  return hits / #all
end

-- The first `n` words of `ids`, for the report.
local function some_words(vocab, ids, n)
  local words = {}
  for k = 1, math.min(n, #ids) do words[k] = vocab:word(ids[k]) end
  if #ids > n then words[#words + 1] = "…" end
  return table.concat(words, " ")
end

return recipe.define{
  name = "argmaxable",
  description = "Unargmaxable words per head and d: exact by linear programs for monotone heads, observed for mixtures",
  settings = presets.settings{"scale", "dataset", "epochs", "switch_epoch",
    dims = recipe.setting("2,4,8", "d of each model (emb = nhidlast; a mixture's latent dimension)"),
    heads = recipe.setting("softmax,sigsoftmax,gss,plif,mos,mixtape", "the heads, each trained at every d of dims"),
    bound = recipe.setting(1, "the box [−bound, bound]^d of output states (an LSTM's: 1)"),
    tolerance = recipe.setting(1e-6, "a best lead at or below this (nats) counts as unargmaxable"),
    switch = recipe.setting("et", "the ASGD switch (SPEC §2): \"et\" or \"nt\""),
    max_contexts = recipe.setting(0, "mixtures' test contexts: 0 all, n the first n"),
  },

  grid = function(cfg)
    local cells = {}
    for _, head in ipairs(lineup.list(cfg.heads)) do
      for _, d in ipairs(lineup.integers(cfg.dims, "argmaxable: dims")) do cells[#cells + 1] = {head = head, d = d} end
    end
    return cells
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local p = lineup.preset(cell.head, cfg)
    local model, summary, corpus = presets.train_cell{preset = p, head = lineup.head(p, cell.head),
                                                      dir = ctx.dir .. "/run", model = lineup.sizes_at(cell.head, cell.d),
                                                      train = presets.train_overrides(cfg)}
    local options = {region = "box", bound = cfg.bound, tolerance = cfg.tolerance, tokens = corpus.test}
    if cfg.max_contexts > 0 then options.max_contexts = cfg.max_contexts end
    local box = lmkit.analysis.model_argmaxable(model, options)
    local result = {test_ppl = summary.test_ppl, words = box.words, method = box.method, note = box.note,
                    unargmaxable = #box.unargmaxable, share = token_share(corpus.test, box.unargmaxable),
                    examples = some_words(corpus.vocab, box.unargmaxable, 8)}
    if box.method == "lp" then
      result.by_lp, result.seconds = box.by_lp, box.seconds
      options.region = "free"
      result.free_unargmaxable = #lmkit.analysis.model_argmaxable(model, options).unargmaxable
    else
      result.contexts = box.contexts
    end
    return presets.with_yardsticks(result, corpus)
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local data = presets.data(cfg)
    local t = lmkit.report.table{
      title = ("Unargmaxable words per head and d, %s"):format(data.short),
      data = data,
      columns = {
        {key = "head", label = "Head"}, {key = "d", label = "d"}, {key = "how", label = "Decided by"},
        {key = "unargmaxable", label = "Unargmaxable (box)"}, {key = "percent", label = "% of words", digits = 1},
        {key = "share", label = "% of test tokens", digits = 2},
        {key = "free", label = "Unargmaxable (h free)"}, {key = "by_lp", label = "Words to LP"},
        {key = "seconds", label = "Time (s)", digits = 2}, {key = "test_ppl", label = "Test ppl", digits = 2},
        {key = "examples", label = "Examples"},
      },
    }
    local by_head, order = {}, {}
    for _, r in ipairs(results) do
      local row = {head = lineup.label(r.cell.head), d = r.cell.d}
      local x = r.result
      if x then
        row.unargmaxable, row.test_ppl, row.examples = x.unargmaxable, x.test_ppl, x.examples
        row.percent = 100 * x.unargmaxable / x.words
        row.share = 100 * x.share
        if x.method == "lp" then
          row.how, row.free, row.by_lp, row.seconds = "LP (exact)", x.free_unargmaxable, x.by_lp, x.seconds
        else
          row.how = ("never top-1 in %d contexts"):format(x.contexts)
        end
        local function add_point(label, percent, dashed)
          if not by_head[label] then
            by_head[label] = {x = {}, y = {}, label = label, dashtype = dashed and 2 or nil}
            order[#order + 1] = label
          end
          local s = by_head[label]
          s.x[#s.x + 1], s.y[#s.y + 1] = r.cell.d, percent
        end
        add_point(row.head, row.percent, false)
        if row.free then add_point(row.head .. " (h free)", 100 * row.free / x.words, true) end
      end
      t:add(row)
    end
    t:note(("Box: output states h in [−%g, %g]^d, the range of the LSTM's outputs; free: any h. A word counts as " ..
            "unargmaxable when its best lead over every other word is ≤ %g nats."):format(cfg.bound, cfg.bound,
            cfg.tolerance))
    t:note("SigSoftmax, GSS and LMS-PLIF apply a strictly increasing f to the logits, so their argmaxable words " ..
           "are their decoder's (exact). MoS mixes softmaxes: its column counts words never the top-1 on the " ..
           "test contexts, an upper bound of its unargmaxable words.")
    t:note(presets.switch_note(cfg, false))
    t:note_yardsticks(results)
    measure.print_and_save(t, ctx.out, "report")
    local series = {}
    for _, head in ipairs(order) do series[#series + 1] = by_head[head] end
    if #series > 0 then
      local plot_file = ctx.out .. "/unargmaxable.png"
      for _, s in ipairs(series) do s.with = "linespoints" end
      lmkit.plot.line{out = plot_file, series = series, xlabel = "d (log scale)", logx = true, yrange = {0, 100},
                      ylabel = "unargmaxable words (% of vocabulary)", key = "bottom left",
                      title = ("Unargmaxable words vs d, %s"):format(data.short)}
      print("plot: " .. plot_file)
    end
    print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
  end,
}
